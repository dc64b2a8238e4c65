"""Runs a threaded mode's bodies (A3C workers, or GA3C's runners, predictor and trainers) as threads of
this process, for the coordinator."""
from __future__ import annotations

import sys
import threading
import time
from typing import Callable, Protocol

import numpy as np

from doom_a3c.modes.build import ThreadRun

JOIN_TIMEOUT_S = 60.0  # all threads together, to finish the rollout under way once the run stops
CLOSE_TIMEOUT_S = 20.0  # all games together; games in child processes are killed after ProcessEnvBatch's 5 s


class ThreadBody(Protocol):
    index: int

    def run_thread(self) -> None: ...

    def close(self) -> None: ...


class ThreadBackend:
    def __init__(self, run_parts: ThreadRun, bodies: list[ThreadBody], mode: str):
        self.parts = run_parts
        self.run = run_parts.run
        self.spec = run_parts.spec
        self.description = mode
        self.bodies = bodies
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        self.parts.learner.clock.start()  # the learning-rate schedule's time counts from here, as the coordinator's
        self.threads = [threading.Thread(target=body.run_thread, name=f"{type(body).__name__}_{body.index}",
                                         daemon=True) for body in self.bodies]
        for thread in self.threads:
            thread.start()

    def wait(self, timeout: float) -> bool:
        """Let the threads run for up to `timeout` seconds; True once the run should stop."""
        return self.run.stop.wait(timeout)

    def stop(self) -> None:
        """`run.stop` is set: let every thread finish (and queue its episodes) before the final save. A thread
        blocked in a game of this process (--env-processes 0) cannot be ended: it is left behind, with a warning."""
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        for thread in self.threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                print(f"warning: {thread.name} did not stop within {JOIN_TIMEOUT_S:g} s (blocked in a game call?); "
                      f"left behind", file=sys.stderr, flush=True)

    def save(self, episodes: int, wall_seconds: float) -> str:
        return self.parts.global_parts.save(episodes, wall_seconds)

    def learning_rate(self) -> float:
        return self.parts.learner.learning_rate

    def global_weights(self) -> list[np.ndarray]:
        """A copy of the global network's trainable variables, in order."""
        return self.parts.learner.weights()

    def close(self) -> None:
        close_games_within(lambda: [body.close() for body in self.bodies], "the games")


def close_games_within(close: Callable[[], object], what: str, seconds: float = CLOSE_TIMEOUT_S) -> None:
    """Run `close` in a thread of its own, for at most `seconds`: a game of this process whose engine stalled can
    block its close for ever (ViZDoom joins the engine's thread), and the run must still end."""
    closing = threading.Thread(target=close, name="close_games", daemon=True)
    closing.start()
    closing.join(timeout=seconds)
    if closing.is_alive():
        print(f"warning: {what} did not close within {seconds:g} s (a stalled engine?); their engines end with this "
              f"process", file=sys.stderr, flush=True)
