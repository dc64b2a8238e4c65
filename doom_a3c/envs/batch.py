"""A worker's games stepped together, always as a batch: one call steps every environment, resetting
those that ended (doom_a3c/envs/factory.py builds a run's batches).

ViZDoom runs each game in its own engine process and releases the GIL while it waits for it, so
games stepped from two threads run side by side (measured on 2 cores: 2.1k steps/s from one thread,
6.3k/s from two). The batch splits its games into `threads` contiguous slices and steps the slices
concurrently; with one thread it is a plain loop with no thread hand-off at all. `ProcessEnvBatch`
(doom_a3c/envs/process_batch.py) steps them in child processes instead (--env-processes), for games that hold
the GIL while they run (Atari).

A game that dies or raises while it steps is closed and replaced by a fresh one (`remake`, a new seed) in
the same slot, so that a killed or crashed engine costs one episode, not the run: the step reports it in
`crashes`, with reward 0 and done (its unfinished episode is dropped). Without `remake` the error reaches
the caller.

A game ended by a time limit (`truncated`) is reset like any other; its last observation, which learning
bootstraps from, comes in `final_observations`.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, NamedTuple, Protocol, Sequence

import numpy as np

from doom_a3c.envs.interface import Environment, EnvSpec, spec_of
from doom_a3c.errors import ConfigError, one_line


class BatchStep(NamedTuple):
    observations: np.ndarray  # [E, *obs]: the next observation, or the first of a new episode where done
    rewards: np.ndarray  # [E] float32, the game's own reward (unscaled)
    dones: np.ndarray  # [E] bool, the episode ended at this step
    game_overs: np.ndarray  # [E] bool, the game really ended (and was reset); an Atari life loss is a done only
    shaping: np.ndarray  # [E] float32, the learning-only bonus of reward shaping (0 without it)
    crashes: np.ndarray  # [E] object: "" or why the game was closed and restarted at this step (reward 0, done)
    truncated: np.ndarray  # [E] bool, a time limit ended the game (game over, not done)
    final_observations: np.ndarray | None  # [E, *obs], meaningful where truncated; None when no game was
    matches: np.ndarray | None = None  # [E] object: a deathmatch's report where its match ended, else None


def concatenate_steps(parts: Sequence[BatchStep]) -> BatchStep:
    """The steps of consecutive slices of one batch as one step."""
    arrays = {name: np.concatenate([getattr(part, name) for part in parts])
              for name in BatchStep._fields if name not in ("final_observations", "matches")}
    finals = None
    if arrays["truncated"].any():
        finals = np.concatenate([part.observations if part.final_observations is None else part.final_observations
                                 for part in parts])
    matches = None
    if any(part.matches is not None for part in parts):
        matches = np.concatenate([np.full(len(part.rewards), None, object) if part.matches is None else part.matches
                                  for part in parts])
    return BatchStep(**arrays, final_observations=finals, matches=matches)


RESTART_SEED_STRIDE = 1_000_000  # a restarted game's seed: its slot's seed + this x the slot's restarts so far
START_ATTEMPTS = 3  # a slot whose fresh games fail this many times in a row to start: a broken setup, not a stray crash
Remake = Callable[[int, int], Environment]  # (game index in the batch, restarts of that slot so far) -> a new game


def contiguous_slices(count: int, parts: int) -> list[slice]:
    """`count` games split into `parts` (at most `count`, at least 1) contiguous slices of near-equal size."""
    parts = max(1, min(parts, count))
    bounds = np.linspace(0, count, parts + 1).round().astype(int)
    return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]


class GameBatch(Protocol):
    """E games stepped together (EnvBatch in this process, ProcessEnvBatch in child processes), with the
    declared attributes of one game."""

    spec: EnvSpec

    def __len__(self) -> int: ...

    def reset(self) -> np.ndarray: ...

    def take_start_failures(self) -> list[tuple[int, str]]: ...

    def step(self, actions: np.ndarray) -> BatchStep: ...

    def screen(self, index: int = 0) -> np.ndarray: ...

    def record_tics(self, index: int, on: bool) -> float:
        """Game `index` keeps the screen of every tic of its steps (on) or not: returns the game time per tic,
        0.0 for a game that cannot (only ViZDoom's can)."""

    def step_screens(self, index: int) -> list[np.ndarray]:
        """The screens of every tic of game `index`'s last step, while it records tics (up to the episode's end:
        its last step's too, though the game was reset since)."""

    def set_bot_level(self, level: int | None) -> None:
        """ViZDoom deathmatch games (--bot-curriculum): every game plays its bots at `level` (0-5; None: full
        strength) from its next match on, a restarted one too, and each match's report says the level it was played
        at (`bot_level`, where one was set)."""

    def close(self) -> None: ...


class EnvBatch:
    """Games in this process, stepped by `threads` threads (contiguous slices); a game that fails while it steps
    is replaced by `remake` (None: the error reaches the caller).

    Kept instead of gymnasium's AsyncVectorEnv: 8 basic games, 4,004 env steps/s and 0.42 ms CPU a step against
    its 954 and 1.63 ms (a process and pipe round trip per game, over ViZDoom's gymnasium env);
    benchmarks/tools/env_libraries.py on a quiet 2-core machine."""

    def __init__(self, envs: Sequence[Environment], threads: int = 1, remake: Remake | None = None):
        if not envs:
            raise ValueError("an EnvBatch needs at least one environment")
        self.envs = list(envs)
        self.spec = spec_of(self.envs[0])
        self._slices = contiguous_slices(len(self.envs), threads)
        self._pool = ThreadPoolExecutor(len(self._slices) - 1, thread_name_prefix="env") if len(self._slices) > 1 else None
        self._observations: np.ndarray | None = None
        self._rewards = np.zeros(len(self.envs), np.float32)
        self._shaping = np.zeros(len(self.envs), np.float32)
        self._dones = np.zeros(len(self.envs), bool)
        self._game_overs = np.zeros(len(self.envs), bool)
        self._crashes = np.full(len(self.envs), "", object)
        self._truncated = np.zeros(len(self.envs), bool)
        self._matches = np.full(len(self.envs), None, object)
        self._finals: np.ndarray | None = None
        self._remake = remake
        self._restarts = [0] * len(self.envs)
        self._start_failures: list[tuple[int, str]] = []  # (game, why) restarted by reset(), not yet reported
        self._bot_level: int | None = None  # set_bot_level's
        self._match_levels: list[int | None] = [None] * len(self.envs)  # the level each game's match started at

    def __len__(self) -> int:
        return len(self.envs)

    def reset(self) -> np.ndarray:
        """Every game's first observation; a game that fails to start (an engine killed before its first
        episode) is restarted like one that fails mid-run, and reported by take_start_failures()."""
        first = []
        for i in range(len(self.envs)):
            try:
                first.append(self._reset_game(i))
            except Exception as error:  # as in _step_slice
                if self._remake is None:
                    raise
                self._start_failures.append((i, one_line(error)))
                first.append(self._start_fresh_game(i))
        self._observations = np.stack(first)
        self._finals = np.zeros_like(self._observations)
        return self._observations.copy()

    def take_start_failures(self) -> list[tuple[int, str]]:
        """The games reset() had to restart since the last call, as (game index, why)."""
        failures, self._start_failures = self._start_failures, []
        return failures

    def _reset_game(self, i: int) -> np.ndarray:
        """Game i's next episode, at the bot level set now."""
        observation = self.envs[i].reset()
        self._match_levels[i] = self._bot_level
        return observation

    def _step_slice(self, part: slice, actions: np.ndarray) -> None:
        for i in range(part.start, part.stop):
            try:
                result = self.envs[i].step(int(actions[i]))
                match = with_bot_level(result.match, self._match_levels[i])  # before the reset starts the next
                observation = self._reset_game(i) if result.game_over else result.observation
            except ConfigError:  # the game cannot run as configured (--audio's sound silent): a restart cannot help
                raise
            except Exception as error:  # any game's failure: a killed engine, an emulator's error
                if self._remake is None:
                    raise
                self._restart(i, error)
                continue
            self._rewards[i], self._dones[i], self._game_overs[i] = result.reward, result.done, result.game_over
            self._shaping[i], self._crashes[i], self._truncated[i] = result.shaping, "", result.truncated
            self._matches[i] = match
            if result.truncated:
                self._finals[i] = result.observation
            self._observations[i] = observation

    def _restart(self, i: int, error: Exception) -> None:
        """Close game i (a dead engine may fail to) and start a fresh one in its place, with a new seed. The
        step ends its episode as a terminal with reward 0; the new game's first observation follows."""
        self._observations[i] = self._start_fresh_game(i)
        self._rewards[i] = self._shaping[i] = 0.0
        self._dones[i], self._game_overs[i], self._truncated[i] = True, False, False
        self._crashes[i] = one_line(error)
        self._matches[i] = None

    def _start_fresh_game(self, i: int) -> np.ndarray:
        """Close game i (a dead engine may fail to), put a new one with a new seed in its place and return its
        first observation. A game that cannot even be built (a broken scenario) raises at once; one whose
        engine dies before its first observation is tried again, START_ATTEMPTS times in all."""
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                self.envs[i].close()
            except Exception:  # noqa: BLE001 - it is being replaced either way
                pass
            self._restarts[i] += 1
            self.envs[i] = self._remake(i, self._restarts[i])
            self._tell_bot_level(self.envs[i])
            try:
                return self._reset_game(i)
            except Exception:  # as in _step_slice
                if attempt == START_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

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
        finals = self._finals.copy() if self._truncated.any() else None
        matches = self._matches.copy() if any(m is not None for m in self._matches) else None
        return BatchStep(self._observations.copy(), self._rewards.copy(), self._dones.copy(), self._game_overs.copy(),
                         self._shaping.copy(), self._crashes.copy(), self._truncated.copy(), finals, matches)

    def screen(self, index: int = 0) -> np.ndarray:
        return self.envs[index].screen()

    def record_tics(self, index: int, on: bool) -> float:
        env = self.envs[index]
        if not hasattr(env, "record_tics"):
            return 0.0
        env.record_tics = on
        return env.seconds_per_tic

    def step_screens(self, index: int) -> list[np.ndarray]:
        return list(self.envs[index].tic_screens)

    def set_bot_level(self, level: int | None) -> None:
        self._bot_level = level
        for env in self.envs:
            self._tell_bot_level(env)

    def _tell_bot_level(self, env: Environment) -> None:
        if hasattr(env, "set_bot_level"):  # a ViZDoom game's (others have no bots)
            env.set_bot_level(self._bot_level)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        for env in self.envs:
            env.close()


def with_bot_level(match: dict | None, level: int | None) -> dict | None:
    """A match's report with the bot level it was played at (none where no level was set)."""
    if match is None or level is None:
        return match
    return {**match, "bot_level": float(level)}


def crash_step(observations: np.ndarray, why: str) -> BatchStep:
    """A step of games that were replaced: a terminal with reward 0 each, the fresh games' first observations."""
    count = len(observations)
    return BatchStep(observations, np.zeros(count, np.float32), np.ones(count, bool), np.zeros(count, bool),
                     np.zeros(count, np.float32), np.full(count, why, object), np.zeros(count, bool), None)


class JoinedBatch:
    """Batches side by side as one: game i of the whole is game i - offset of the part that holds it. A run that
    records GIFs from an Atari worker's game 0 plays that game on the one-game path (a colour screen) beside the
    rest in ale-py's vector env (doom_a3c/envs/factory.py)."""

    def __init__(self, parts: Sequence[GameBatch]):
        self.parts = list(parts)
        self.spec = self.parts[0].spec
        self._starts = np.cumsum([0] + [len(part) for part in self.parts])

    def __len__(self) -> int:
        return int(self._starts[-1])

    def _part(self, index: int) -> tuple[GameBatch, int]:
        k = int(np.searchsorted(self._starts, index, side="right")) - 1
        return self.parts[k], index - int(self._starts[k])

    def reset(self) -> np.ndarray:
        return np.concatenate([part.reset() for part in self.parts])

    def take_start_failures(self) -> list[tuple[int, str]]:
        return [(int(start) + i, why) for part, start in zip(self.parts, self._starts)
                for i, why in part.take_start_failures()]

    def step(self, actions: np.ndarray) -> BatchStep:
        return concatenate_steps([part.step(actions[a:b]) for part, a, b
                                  in zip(self.parts, self._starts[:-1], self._starts[1:])])

    def screen(self, index: int = 0) -> np.ndarray:
        part, i = self._part(index)
        return part.screen(i)

    def record_tics(self, index: int, on: bool) -> float:
        part, i = self._part(index)
        return part.record_tics(i, on)

    def step_screens(self, index: int) -> list[np.ndarray]:
        part, i = self._part(index)
        return part.step_screens(i)

    def close(self) -> None:
        for part in self.parts:
            part.close()
