"""An entropy bonus that keeps the policy from collapsing (--entropy-target), in pure NumPy.

With --entropy-target F > 0 the entropy weight is --entropy-coef times exp(m), m >= 0 a multiplier learnt by dual
ascent so that the policy's entropy stays at least F times the entropy of a uniform choice of every head: each
update moves m by ENTROPY_TARGET_RATE * (F - H / H_uniform), clipped to [0, MAX_LOG_MULTIPLIER]. Above the
target m sinks back to 0 and the weight is --entropy-coef itself; below it the weight grows until the entropy
comes back. As SAC's automatic temperature (Haarnoja et al. 2018) for a discrete policy, but one-sided: a
maze's policy that stays near uniform while it searches keeps the small fixed weight it learns best with,
while an arena's policy that collapses onto turning and firing at once (entropy 0.22 of 1.79 within 5 minutes)
is held open. The measurements are in docs/defaults/doom-defaults.md.

m is one running statistic of the network (a RunningMoments layer, updated as doom_a3c/algo/normalization.py's
are), so every worker reads the same weight and the checkpoint keeps it.
"""
from __future__ import annotations

import numpy as np

ENTROPY_TARGET_RATE = 0.02  # per update and unit of shortfall: 0.1 short for a minute (~500 updates) = x2.7
MAX_LOG_MULTIPLIER = float(np.log(100.0))  # the weight grows at most a hundredfold


def uniform_entropy(num_actions: int, head_sizes: list[int] | None = None,
                    option_matrix: np.ndarray | None = None) -> float:
    """The entropy (nats) of the policy whose every head is uniform: log(A) for one softmax over A actions; with
    factorised heads (network.FactorisedHeads: the heads' sizes, and the [options, A] matrix marking the options
    each action takes), that of the joint distribution they give, where an action's log-probability is the sum
    of its options' -log(head size)."""
    if not head_sizes:
        return float(np.log(num_actions))
    option_log_probs = np.concatenate([np.full(size, -np.log(size)) for size in head_sizes])
    log_probs = option_log_probs @ np.asarray(option_matrix, np.float64)  # [A]
    return float(-(np.exp(log_probs) * log_probs).sum())


def multiplier_step(log_multiplier: float, entropy: float, uniform: float, target: float) -> float:
    """The change of m this update makes: towards more weight when entropy / uniform is below target, less
    above, m kept in [0, MAX_LOG_MULTIPLIER]."""
    shortfall = target - entropy / uniform
    new = float(np.clip(log_multiplier + ENTROPY_TARGET_RATE * shortfall, 0.0, MAX_LOG_MULTIPLIER))
    return new - log_multiplier


def entropy_weight(base: float, log_multiplier: float) -> float:
    """--entropy-coef times exp(m); m read as 0 below 0 (workers' steps on stale copies may overshoot)."""
    return base * float(np.exp(np.clip(log_multiplier, 0.0, MAX_LOG_MULTIPLIER)))
