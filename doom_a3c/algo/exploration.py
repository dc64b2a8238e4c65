"""Epsilon-greedy exploration layered on top of the sampled policy, as pure NumPy functions.

With probability epsilon an action sampled from the policy is swapped for a uniformly random one.
Epsilon decays linearly from `start` to a final value over `decay_steps`, then stays flat. GA3C-style
A3Cs give each worker its own exploration constant; `worker_epsilons` provides the
per-worker final values, and worker i then uses `epsilon_at(step, start, finals[i], decay_steps)`.

The swapped actions make the rollout slightly off-policy for the A3C gradient; GA3C-style A3Cs accept
that, and so do we: keep epsilon small (or 0, the no-op) once the policy has started to learn.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

EPSILON_SPREADS = ("same", "linear", "geometric")


class EpsilonSchedule(NamedTuple):
    """One worker's schedule: `start` at step 0, linearly to `end` at `decay_steps`, then flat."""

    start: float
    end: float
    decay_steps: int

    def at(self, step: int) -> float:
        return epsilon_at(step, self.start, self.end, self.decay_steps)


def epsilon_at(step: int, start: float, end: float, decay_steps: int) -> float:
    """Linear interpolation from `start` at step 0 to `end` at `decay_steps`, then `end` forever."""
    if decay_steps <= 0:  # no decay phase: the schedule is flat from the first step
        return float(end)
    fraction = min(max(step, 0) / decay_steps, 1.0)
    return float(start + fraction * (end - start))


def worker_epsilons(num_workers: int, start: float, end: float, spread: str = "same") -> np.ndarray:
    """Final epsilon of each worker, [num_workers], all within [end, start]; worker 0 always gets `end`.

    - "same": every worker ends at `end` (one constant for all).
    - "linear": evenly spaced from `end` (worker 0) to `start` (last worker).
    - "geometric": log-evenly spaced, eps_i = end * (start / end) ** (i / (N - 1)). This is the Ape-X
      spread eps_i = base ** (1 + alpha i / (N - 1)) with base = start, alpha chosen so that the
      lowest value is `end`, and the workers numbered the other way round. Preferred for wide
      ranges (say 1.0 -> 0.01): most workers stay close to the learned policy while a few keep
      exploring hard, instead of half of them above the midpoint as with "linear".
    Worker 0 keeps the configured `end` so that the worker which records GIFs and summaries behaves
    as configured. The last worker's final value equals `start`, so its epsilon never decays.
    """
    if spread not in EPSILON_SPREADS:
        raise ValueError(f"epsilon spread must be one of {EPSILON_SPREADS}, got {spread!r}")
    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    if spread == "same" or num_workers == 1:
        return np.full(num_workers, float(end))
    position = np.arange(num_workers) / (num_workers - 1)  # 0 for worker 0, 1 for the last: [N]
    if spread == "linear":
        return end + position * (start - end)
    if end <= 0:
        raise ValueError(f"the geometric epsilon spread needs a final epsilon > 0 (got {end}); "
                         "use a small positive value such as 0.01, or the linear spread")
    return end * (start / end) ** position


def apply_epsilon(actions: np.ndarray, num_actions: int, epsilon, rng: np.random.Generator) -> np.ndarray:
    """Replace each action, independently with probability `epsilon`, by one drawn uniformly.

    `actions` has any shape ([B] in a batched worker); `epsilon` is a float or an array that broadcasts
    to it (one value per environment). The random draw may pick the same action again, as the usual
    epsilon-greedy definition does. Returns an array of the same shape and dtype.
    """
    actions = np.asarray(actions)
    replace = rng.random(actions.shape) < epsilon  # [...] bool; epsilon 0 never replaces
    random_actions = rng.integers(num_actions, size=actions.shape)
    return np.where(replace, random_actions, actions).astype(actions.dtype)
