"""A worker's games stepped together: one call steps every environment, resetting those that ended.

ViZDoom runs each game in its own engine process and releases the GIL while it waits for it, so
games stepped from two threads run side by side (measured on 2 cores: 2.1k steps/s from one thread,
6.3k/s from two). The batch splits its games into `threads` contiguous slices and steps the slices
concurrently; with one thread it is a plain loop with no thread hand-off at all.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple, Sequence

import numpy as np

from doom_a3c.envs import Environment


class BatchStep(NamedTuple):
    observations: np.ndarray  # [E, *obs] uint8: the next observation, or the first of a new episode where done
    rewards: np.ndarray  # [E] float32, the game's own reward (unscaled)
    dones: np.ndarray  # [E] bool, the episode ended at this step
    game_overs: np.ndarray  # [E] bool, the game really ended (and was reset); an Atari life loss is a done only


class EnvBatch:
    def __init__(self, envs: Sequence[Environment], threads: int = 1):
        if not envs:
            raise ValueError("an EnvBatch needs at least one environment")
        self.envs = list(envs)
        self.num_actions = self.envs[0].num_actions
        threads = max(1, min(threads, len(self.envs)))
        bounds = np.linspace(0, len(self.envs), threads + 1).round().astype(int)
        self._slices = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]
        self._pool = ThreadPoolExecutor(threads - 1, thread_name_prefix="env") if threads > 1 else None
        self._observations: np.ndarray | None = None
        self._rewards = np.zeros(len(self.envs), np.float32)
        self._dones = np.zeros(len(self.envs), bool)
        self._game_overs = np.zeros(len(self.envs), bool)

    def __len__(self) -> int:
        return len(self.envs)

    def reset(self) -> np.ndarray:
        self._observations = np.stack([env.reset() for env in self.envs])
        return self._observations.copy()

    def _step_slice(self, part: slice, actions: np.ndarray) -> None:
        for i in range(part.start, part.stop):
            result = self.envs[i].step(int(actions[i]))
            self._rewards[i], self._dones[i], self._game_overs[i] = result.reward, result.done, result.game_over
            self._observations[i] = self.envs[i].reset() if result.game_over else result.observation

    def step(self, actions: np.ndarray) -> BatchStep:
        """actions [E] int -> the batch's next observations, rewards and episode ends."""
        assert self._observations is not None, "reset() first"
        if self._pool is None:
            self._step_slice(self._slices[0], actions)
        else:
            # The calling thread steps the first slice itself; the pool steps the rest.
            futures = [self._pool.submit(self._step_slice, part, actions) for part in self._slices[1:]]
            self._step_slice(self._slices[0], actions)
            for future in futures:
                future.result()  # re-raises a game's error in the worker thread
        return BatchStep(self._observations.copy(), self._rewards.copy(), self._dones.copy(), self._game_overs.copy())

    def screen(self, index: int = 0) -> np.ndarray:
        return self.envs[index].screen()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        for env in self.envs:
            env.close()
