"""What Ray's processes send each other: the parameter server's reply to a push, a worker's report of one
rollout, and a worker's failure.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from doom_a3c.runtime.state import EpisodeResult, GameRestart, TrainMetrics


class PushReply(NamedTuple):
    """The parameter server's answer to a push or a pull."""

    weights: list[np.ndarray]  # the global network's trainable variables, in order
    env_steps: int  # global environment steps after this push
    updates: int
    skipped_updates: int
    applied: bool  # False: the pushed gradient was not finite (or was None) and was dropped
    learning_rate: float


class StepReport(NamedTuple):
    """What one worker actor's rollout sends back to the driver."""

    worker: int
    episodes: list[EpisodeResult]  # finished during the rollout, true (unscaled) scores; GIF frames if recorded
    metrics: TrainMetrics
    env_steps: int  # the parameter server's counters after this rollout's push
    updates: int
    skipped_updates: int
    learning_rate: float
    pid: int  # the worker's process
    node: str
    restarts: list[GameRestart]  # games that failed and were restarted during the rollout


class WorkerFailed(RuntimeError):
    """A worker actor raised (a game crashed, a bug): the run stops, as a failed worker thread stops it."""


# ---- the workers --------------------------------------------------------------------------------------------
Push = Callable[[int, "list[np.ndarray] | None", int, list], PushReply]
