"""The parameter server of --distributed ray: the global network, the shared optimizer and the run's counters;
it applies pushed gradients, serves weights and writes the checkpoints.
"""
from __future__ import annotations

import json
import os
from collections import deque
from typing import Any

import numpy as np

from doom_a3c.algo.gradients import process_gradients
from doom_a3c.algo.learner import all_finite
from doom_a3c.config import TrainConfig
from doom_a3c.envs.interface import EnvSpec
from doom_a3c.errors import CheckpointError
from doom_a3c.modes.build import (
    GlobalParts,
    build_global,
)
from doom_a3c.modes.ray.messages import PushReply
from doom_a3c.quiet_import import tf


def configure_actor_threads(inter_op: int = 2) -> None:
    """Each actor is its own process with (in the usual set-up) one CPU: one intra-op thread, so that the
    processes share the cores instead of each fanning every op out to all of them."""
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(inter_op)
    except RuntimeError:  # TensorFlow already initialised in this process (a reused Ray worker): keep it
        pass


# ---- the parameter server ---------------------------------------------------------------------------------
class ParameterServer:
    """The global learner and the run's counters in one process; saves checkpoints in the threaded format."""

    def __init__(self, config_json: str, configure_threads: bool = True):
        if configure_threads:
            configure_actor_threads(inter_op=1)
        self.config = TrainConfig.from_dict(json.loads(config_json))
        self.parts: GlobalParts | None = None
        self.episodes = 0  # episodes the workers reported with their pushes
        self.recent_returns: deque[float] = deque(maxlen=100)  # the returns of the last 100 episodes

    def build(self, spec: EnvSpec, resume_prefix: str | None = None) -> str | None:
        """Build (and restore) the global network once the games tell its shape. Returns None, or the reason
        the checkpoint cannot be restored (a user error, reported by the driver)."""
        cfg = self.config
        try:
            self.parts = build_global(cfg, EnvSpec(*spec), resume_prefix)
        except CheckpointError as error:
            return str(error)
        bound = cfg.clip_norm if cfg.gradient_mode == "clip" else cfg.normalize_norm
        # The workers' gradients are already processed; doing it again here is idempotent and keeps the
        # --clip-norm bound true whatever arrives over the network.
        self._process = tf.function(lambda grads: process_gradients(grads, cfg.gradient_mode, bound)[0])
        if resume_prefix:
            self.episodes = int(self.parts.saved.episodes.numpy())
        return None

    @property
    def counters(self):
        return self.parts.learner.counters

    def weights(self) -> list[np.ndarray]:
        return self.parts.learner.weights()

    def _reply(self, applied: bool) -> PushReply:
        counters = self.counters
        return PushReply(self.weights(), counters.env_steps, counters.updates, counters.skipped_updates, applied,
                         self.parts.learner.learning_rate)

    def start_clock(self) -> None:
        """The run's training starts now: the learning-rate schedule's time counts from here (--max-minutes)."""
        self.parts.learner.clock.start()

    def pull(self) -> PushReply:
        """Fresh weights and counters, without pushing anything."""
        return self._reply(False)

    def apply(self, worker: int, grads: list[np.ndarray] | None, steps: int,
              episode_returns: list[float] = ()) -> PushReply:
        """Count `steps` and the finished episodes' returns, apply `grads` unless missing or not finite (a
        NaN/Inf must never reach the global weights; it is counted as skipped), and return the new weights."""
        learner = self.parts.learner
        learner.counters.add_steps(int(steps))
        for episode_return in episode_returns:
            self.episodes += 1
            self.recent_returns.append(float(episode_return))
        finite = grads is not None and len(grads) == len(learner.net.trainable_variables) and all_finite(grads)
        if finite:
            grads = self._process([tf.convert_to_tensor(g, tf.float32) for g in grads])
        return self._reply(learner.apply(grads or [], finite))

    def status(self) -> dict[str, Any]:
        counters = self.counters
        return {"env_steps": counters.env_steps, "updates": counters.updates,
                "skipped_updates": counters.skipped_updates, "episodes": self.episodes,
                "recent_returns": list(self.recent_returns), "pid": os.getpid()}

    def save(self, episodes: int, wall_seconds: float) -> str:
        """`episodes` is what the driver has written to progress.csv (flushed before it asks)."""
        return self.parts.save(episodes, wall_seconds)
