"""Running statistics that take the reward's and the game variables' scale out of learning (pure NumPy).

Returns (--normalize-returns), as DreamerV3 scales them (danijar/dreamerv3, `Moments` in jaxutils.py): S is
a running 5th-95th percentile range of the rollouts' returns, and advantages are divided by max(floor, S).
DreamerV3's floor of 1 (--return-scale-floor, 1 by default) keeps small returns (a sparse +1 at the end of a
maze) as they are, while a reward of 1,000 an episode is brought down to the same size as one of 1. A map with
no preset runs with a floor of 0.01 (scenarios/defaults/doom.toml): there a maze's returns, spanning S = 0.05,
are scaled up to the size of a corridor's, spanning 354, and one entropy weight fits both (the weights their
hand-tuned presets found are 0.014-0.019 in units of S; docs/defaults/doom-defaults.md). Percentiles rather than a
standard deviation, because a few rare large returns (the one episode that reached the armour) should not shrink every
other signal.

The critic is put in the same units (a choice, documented here): the network's value output is S times its
value head (doom_a3c/algo/model/actor_critic.py), and the value loss compares returns / S with that output / S.
Otherwise, at a scale of 1,000 the value loss would be a million times the policy's and fill the clipped gradient
(--clip-norm 40) on its own, and the value head would have to grow weights of that size before it predicted anything.
This is Pop-Art's (van Hasselt et al. 2016) scale-only normalisation without its output-preserving weight update: a
change of S moves the value output with it, which the decay below keeps slow. The reported value stays in learning-
reward units, so rollouts, play.py and --export need no change. The alternative, a reward scale
measured from the game at the start of a run and saved in the config, was not built: it fixes the scale of
the first minutes' returns, which change by orders of magnitude as the agent learns.

Game variables (--normalize-variables): each is standardised by a running mean and deviation,
(x - mean) / sqrt(var + 1e-4), clipped to [-5, 5] (as Stable-Baselines3's VecNormalize, with a floor fit for
integer counters: a variable that never moved reads 0 and one step of it at most 5).

Both are one flat vector of exponential moving averages, decay 0.99 per update, whose first entry is the
average of 1: after n updates it is 1 - 0.99^n, and every other entry divided by it is the average without
the bias of its zero start (Adam's correction), so the first rollout already gives its own statistics in
full. Every entry moves by the same linear step, (1 - decay) * (target - current): an update computed on a
worker's copy adds up on the global network as a gradient does, whichever worker or process took it.
"""
from __future__ import annotations

import numpy as np

MOMENTS_DECAY = 0.99
RETURN_PERCENTILES = (5.0, 95.0)
VARIABLE_EPSILON = 1e-4  # variance floor: game variables are mostly integer counters
VARIABLE_CLIP = 5.0


def moments_update(moments: np.ndarray, targets: np.ndarray, decay: float = MOMENTS_DECAY) -> np.ndarray:
    """The step that moves running averages `moments` towards this update's `targets`: new = moments + step."""
    return (1.0 - decay) * (np.asarray(targets, np.float64) - np.asarray(moments, np.float64))


# ---- returns: moments [weight, low, high] -------------------------------------------------------------------
def return_targets(returns: np.ndarray) -> np.ndarray:
    """[1, 5th percentile, 95th percentile] of one update's returns (any shape, [T, B] from a rollout)."""
    low, high = np.percentile(np.asarray(returns, np.float64), RETURN_PERCENTILES)
    return np.array([1.0, low, high])


def return_scale(moments: np.ndarray, floor: float = 1.0) -> float:
    """max(floor, S): S the debiased running 95th minus 5th percentile; 1 before any update."""
    weight, low, high = (float(x) for x in moments)
    return max(floor, (high - low) / weight) if weight > 0 else 1.0


# ---- game variables: moments [weight, mean (V), mean of squares (V)] ---------------------------------------
def variable_moments_size(num_variables: int) -> int:
    return 1 + 2 * num_variables


def variable_targets(variables: np.ndarray) -> np.ndarray:
    """[1, mean, mean of squares] of one update's variables, [..., V] (per variable, over every other axis)."""
    flat = np.asarray(variables, np.float64).reshape(-1, np.shape(variables)[-1])  # [N, V]
    return np.concatenate([[1.0], flat.mean(axis=0), np.square(flat).mean(axis=0)])


def variable_mean_std(moments: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, sqrt(variance + epsilon)) per variable; (0, 1) before any update."""
    moments = np.asarray(moments, np.float64)
    count = (len(moments) - 1) // 2
    weight = moments[0]
    if weight <= 0:
        return np.zeros(count), np.ones(count)
    mean = moments[1:1 + count] / weight
    variance = np.maximum(moments[1 + count:] / weight - np.square(mean), 0.0)
    return mean, np.sqrt(variance + VARIABLE_EPSILON)


def normalized_variables(variables: np.ndarray, moments: np.ndarray) -> np.ndarray:
    """Variables [..., V] standardised by these moments and clipped, as the network sees them."""
    mean, std = variable_mean_std(moments)
    return np.clip((np.asarray(variables, np.float64) - mean) / std, -VARIABLE_CLIP, VARIABLE_CLIP)
