"""Discounted returns and advantages for one rollout: pure NumPy, tested against hand-computed values.

A rollout is [T] (one environment) or [T, B] (B environments side by side). `dones[t]` is 1 when
the episode ended at step t, so nothing after t is credited to step t and step t does not
bootstrap. Rollouts that run out while an episode is still going bootstrap from V(s_T).
Each episode segment is discounted with `scipy.signal.lfilter`, as in the seed.
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


def _per_column(fn, *arrays_tb, bootstrap):
    """Apply a 1-D function column by column when given [T, B] arrays."""
    first = np.asarray(arrays_tb[0])
    if first.ndim == 1:
        return fn(*arrays_tb, float(bootstrap))
    bootstrap = np.broadcast_to(np.asarray(bootstrap, np.float64), first.shape[1:])
    columns = [fn(*(np.asarray(a)[:, b] for a in arrays_tb), float(bootstrap[b])) for b in range(first.shape[1])]
    return np.stack(columns, axis=1)


def discounted_returns(rewards: np.ndarray, dones: np.ndarray, bootstrap_value, gamma: float) -> np.ndarray:
    """R_t = r_t + gamma r_{t+1} + ... up to the episode end, + gamma^k V(s_T) if the rollout was cut."""
    def one_column(r, d, bootstrap):
        out = np.zeros(len(r), np.float64)
        for start, stop, ended in _episode_segments(d):
            tail = 0.0 if ended else bootstrap
            out[start:stop] = discount(np.append(r[start:stop], tail), gamma)[:-1]
        return out

    return _per_column(one_column, rewards, dones, bootstrap=bootstrap_value).astype(np.float32)


def generalized_advantages(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, bootstrap_value,
                           gamma: float, lam: float) -> np.ndarray:
    """GAE: A_t = sum_k (gamma lam)^k delta_{t+k}, delta_t = r_t + gamma V(s_{t+1}) - V(s_t).

    With lam = 1 this is the seed's advantage: discounted return minus V(s_t).
    """
    def one_column(r, v, d, bootstrap):
        out = np.zeros(len(r), np.float64)
        for start, stop, ended in _episode_segments(d):
            next_values = np.append(v[start + 1:stop], 0.0 if ended else bootstrap)
            deltas = r[start:stop] + gamma * next_values - v[start:stop]
            out[start:stop] = discount(deltas, gamma * lam)
        return out

    return _per_column(one_column, rewards, values, dones, bootstrap=bootstrap_value).astype(np.float32)
