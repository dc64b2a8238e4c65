"""Discounted returns and advantages for one rollout: pure NumPy, tested against hand-computed values.

A rollout is [T] (one environment) or [T, B] (B environments side by side). `dones[t]` is 1 when
the episode ended at step t, so nothing after t is credited to step t. What step t bootstraps from
then is `end_values[t]`: 0 after a terminal state (the default), V(final observation) after a time
limit, which is no terminal: the episode was cut, not finished (as Stable-Baselines3 treats it).
Rollouts that run out while an episode is still going bootstrap from V(s_T).
Each episode segment is discounted with `scipy.signal.lfilter`.
"""
from __future__ import annotations

import numpy as np
import scipy.signal


def discount(x: np.ndarray, gamma: float) -> np.ndarray:
    """y[t] = x[t] + gamma * y[t+1], computed backwards along axis 0 with a linear filter."""
    return scipy.signal.lfilter([1.0], [1.0, -gamma], x[::-1], axis=0)[::-1]


def _episode_segments(dones: np.ndarray):
    """Yield (start, stop, ended) for each run of steps belonging to one episode."""
    start = 0
    for t in np.flatnonzero(dones):
        yield start, t + 1, True
        start = t + 1
    if start < len(dones):
        yield start, len(dones), False


def _with_end_values(dones: np.ndarray, end_values) -> np.ndarray:
    return np.zeros(np.shape(dones)) if end_values is None else np.asarray(end_values, np.float64)


def _per_column(fn, *arrays_tb, bootstrap):
    """Apply a 1-D function column by column when given [T, B] arrays."""
    first = np.asarray(arrays_tb[0])
    if first.ndim == 1:
        return fn(*arrays_tb, float(bootstrap))
    bootstrap = np.broadcast_to(np.asarray(bootstrap, np.float64), first.shape[1:])
    columns = [fn(*(np.asarray(a)[:, b] for a in arrays_tb), float(bootstrap[b])) for b in range(first.shape[1])]
    return np.stack(columns, axis=1)


def discounted_returns(rewards: np.ndarray, dones: np.ndarray, bootstrap_value, gamma: float,
                       end_values: np.ndarray | None = None) -> np.ndarray:
    """R_t = r_t + gamma r_{t+1} + ... up to the episode end, + gamma^k times the value after it: V(s_T) if
    the rollout was cut, the end value (0 unless a time limit ended it) if the episode ended."""
    def one_column(r, d, e, bootstrap):
        out = np.zeros(len(r), np.float64)
        for start, stop, ended in _episode_segments(d):
            tail = e[stop - 1] if ended else bootstrap
            out[start:stop] = discount(np.append(r[start:stop], tail), gamma)[:-1]
        return out

    return _per_column(one_column, rewards, dones, _with_end_values(dones, end_values),
                       bootstrap=bootstrap_value).astype(np.float32)


def generalized_advantages(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, bootstrap_value,
                           gamma: float, lam: float, end_values: np.ndarray | None = None) -> np.ndarray:
    """GAE: A_t = sum_k (gamma lam)^k delta_{t+k}, delta_t = r_t + gamma V(s_{t+1}) - V(s_t); at an episode end
    V(s_{t+1}) is the end value (0 unless a time limit ended it).

    With lam = 1 this is plain A3C's advantage: discounted return minus V(s_t).
    """
    def one_column(r, v, d, e, bootstrap):
        out = np.zeros(len(r), np.float64)
        for start, stop, ended in _episode_segments(d):
            next_values = np.append(v[start + 1:stop], e[stop - 1] if ended else bootstrap)
            deltas = r[start:stop] + gamma * next_values - v[start:stop]
            out[start:stop] = discount(deltas, gamma * lam)
        return out

    return _per_column(one_column, rewards, values, dones, _with_end_values(dones, end_values),
                       bootstrap=bootstrap_value).astype(np.float32)


N_STEP_VARIANTS = ("zero", "max")


def _n_step_segment(r: np.ndarray, v: np.ndarray, tail: float, gamma: float, n: int, cut_short: bool) -> np.ndarray:
    """N-step targets inside one episode segment of length L; `tail` is the value of the state after it.
    `cut_short`: horizons that overrun the segment lose their value term (the "zero" variant at the rollout
    end)."""
    length = len(r)
    offsets = np.arange(length)
    steps = np.minimum(n, length - offsets)  # rewards available from each t: [L]
    # Rewards past the segment are 0, so a window of min(n, L) covers every term that exists.
    window = min(n, length)
    padded = np.concatenate([r, np.zeros(window)])  # [L + window]
    reward_sums = np.lib.stride_tricks.sliding_window_view(padded, window)[:length] @ gamma ** np.arange(window)
    next_values = np.append(v, tail)  # V(s_t) for t in the segment, then V(s_L): [L + 1]
    value_terms = gamma ** steps * next_values[offsets + steps]  # [L]
    if cut_short:
        # A horizon that overruns the rollout would need V(s_{t+n}) from beyond the data: it counts as 0.
        value_terms = np.where(steps == n, value_terms, 0.0)
    return reward_sums + value_terms


def n_step_targets(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, bootstrap_value,
                   gamma: float, n: int, variant: str, end_values: np.ndarray | None = None) -> np.ndarray:
    """N-step value targets G_t = r_t + ... + gamma^(n-1) r_{t+n-1} + gamma^n V(s_{t+n}), [T] or [T, B].

    `n` counts rewards (n=1 is the one-step TD target). The two variants differ only where the
    horizon t+n runs past the last step of the rollout (t > T - n); everywhere else they agree.

    - "zero": the horizon stays n steps long and any term it would need from beyond the data is 0:
      rewards after step T-1 and the value V(s_{t+n}) for t+n > T. The bootstrap V(s_T) is used only
      by the single step t = T - n whose horizon ends exactly on s_T; later steps get a plain
      discounted sum of the rewards left, without any bootstrap. (A loop that counts the value
      as one of its N terms, as a threaded CartPole A3C's does, has N = n + 1; that one also shortens N to the
      rollout length.)
    - "max": the horizon shrinks to the rollout end, so steps near the end use every reward they
      have and then bootstrap from V(s_T). With n >= T this is exactly `discounted_returns`.

    In both, an episode end at step d (dones[d] = 1) stops the sum after r_d and bootstraps from
    end_values[d]: 0 after a terminal state (it has no future), V(final observation) after a time
    limit; no term of the next episode is ever credited.
    Returns float32 targets shaped like `rewards`; the advantage is targets - values.
    """
    if variant not in N_STEP_VARIANTS:
        raise ValueError(f"n-step variant must be one of {N_STEP_VARIANTS}, got {variant!r}")
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a whole number of steps >= 1, got {n}")

    def one_column(r, v, d, e, bootstrap):
        r, v = np.asarray(r, np.float64), np.asarray(v, np.float64)
        out = np.zeros(len(r), np.float64)
        for start, stop, ended in _episode_segments(d):
            tail = e[stop - 1] if ended else bootstrap
            cut_short = variant == "zero" and not ended
            out[start:stop] = _n_step_segment(r[start:stop], v[start:stop], tail, gamma, int(n), cut_short)
        return out

    return _per_column(one_column, rewards, values, dones, _with_end_values(dones, end_values),
                       bootstrap=bootstrap_value).astype(np.float32)


def standardized(values: np.ndarray, epsilon: float = 1e-8) -> np.ndarray:
    """values shifted and scaled to mean 0 and standard deviation 1 over the whole array (float32)."""
    values = np.asarray(values, np.float32)
    return (values - values.mean()) / (values.std() + np.float32(epsilon))
