"""Runs a threaded mode's bodies (A3C workers, or GA3C's runners, predictor and trainers) as threads of
this process, for the coordinator."""
from __future__ import annotations

import threading
from typing import Protocol

from doom_a3c.build import ThreadRun

JOIN_TIMEOUT_S = 60.0


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
        self.threads = [threading.Thread(target=body.run_thread, name=f"{type(body).__name__}_{body.index}",
                                         daemon=True) for body in self.bodies]
        for thread in self.threads:
            thread.start()

    def wait(self, timeout: float) -> bool:
        """Let the threads run for up to `timeout` seconds; True once the run should stop."""
        return self.run.stop.wait(timeout)

    def stop(self) -> None:
        """`run.stop` is set: let every thread finish (and queue its episodes) before the final save."""
        for thread in self.threads:
            thread.join(timeout=JOIN_TIMEOUT_S)

    def save(self, episodes: int, wall_seconds: float) -> str:
        return self.parts.global_parts.save(episodes, wall_seconds)

    def learning_rate(self) -> float:
        return self.parts.learner.learning_rate

    def close(self) -> None:
        for body in self.bodies:
            body.close()
