"""Learning-rate annealing: the A3C paper's linear decay to 0 over the training budget, in steps or in time.

--max-steps counts the whole run (the checkpoint restores the step count); --max-minutes counts each leg (the
coordinator stops a leg that many minutes after it started, a --resume trains that long again). So a run's time
budget ends `earlier_seconds` (what the legs before this one trained: the checkpoint's wall_seconds) plus
--max-minutes after its start, and the rate reaches 0 exactly when the first budget stops the run, also after a
--resume, which goes on from the share of its budget already spent.
"""
from __future__ import annotations

import time
from collections.abc import Callable


def budget_fraction(config, env_steps: int, elapsed_seconds: float = 0.0, earlier_seconds: float = 0.0) -> float:
    """The share of the run's budget spent, in [0, 1]: the larger of env_steps / --max-steps and
    elapsed_seconds / (earlier_seconds + --max-minutes * 60), over the budgets the config gives (0 without any).
    `elapsed_seconds` is the run's training time so far, `earlier_seconds` included."""
    fractions = [0.0]
    if config.max_steps > 0:
        fractions.append(max(env_steps, 0) / config.max_steps)
    if config.max_minutes > 0:
        fractions.append(max(elapsed_seconds, 0.0) / (max(earlier_seconds, 0.0) + config.max_minutes * 60.0))
    return min(1.0, max(fractions))


def learning_rate_at(config, env_steps: int, elapsed_seconds: float = 0.0, earlier_seconds: float = 0.0) -> float:
    """The learning rate a TrainConfig asks for after `env_steps` steps and `elapsed_seconds` of training
    (`earlier_seconds` of them before this leg): --learning-rate, annealed to 0 over the run's budget with
    --lr-schedule linear. One rule for the threaded and the Ray trainers."""
    if config.lr_schedule == "linear":
        return float(config.learning_rate) * (1.0 - budget_fraction(config, env_steps, elapsed_seconds,
                                                                     earlier_seconds))
    return float(config.learning_rate)


class RunClock:
    """A run's training wall time: `earlier_seconds` (restored from a checkpoint on --resume) plus the seconds since
    this leg started (`start`, when the workers start; until then, since the clock was made). `now` is injectable:
    tests give fixed numbers."""

    def __init__(self, earlier_seconds: float = 0.0, now: Callable[[], float] = time.monotonic):
        self.earlier_seconds = float(earlier_seconds)
        self._now = now
        self._leg_start = now()

    def start(self) -> None:
        """This leg's training starts now (the coordinator's clock starts with it)."""
        self._leg_start = self._now()

    def elapsed(self) -> float:
        """Seconds of training in the whole run, earlier legs included."""
        return self.earlier_seconds + max(0.0, self._now() - self._leg_start)
