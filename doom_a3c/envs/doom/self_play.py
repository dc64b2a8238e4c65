"""A self-play training game (--self-play): the learner's ViZDoom game as a match against K opponents, each in its
own engine, all in one network game on a port of their own.

The learner's engine hosts (the map's rules, `-host 1+K`, and the run's bots); the K opponents' engines join it
(doom_a3c/envs/doom/multiplayer.py gives every seat its arguments). ViZDoom's network game advances a tic only once
every player has sent its input for it, but a joiner's clock starts some tics after the host's (measured: about 20
on cig), so its first steps return only once the host has played on: a barrier after every step (all K + 1 steps
returned before the next) deadlocks. So each engine is stepped in a thread of its own (the engines run outside the
GIL) and the players are not kept in step here, the network game does that: at each learner step, every opponent
whose last step has returned gets its next one, their actions chosen in one batched call of an `OpponentPolicy` (an
injected callable: doom_a3c/modes/build.py gives each game slot one; envs never import the network), and the
learner's step is awaited.

Only the learner's side is an `Environment`: its observations, rewards, shaping and match reports are the ordinary
`DoomEnvironment`'s. A match ends with the map's time limit; the next reset() starts a new match on fresh engines
and a new free port (and so new opponents). A match is a fault domain: an opponent whose engine dies, or any
player's step that has not returned within `step_timeout`, ends it. Every engine of the match is then killed by its
port and `MatchLost` raised, which the batch handles as a crashed game (doom_a3c/envs/batch.py: a restarted game,
one line in the log): never a hang.
"""
from __future__ import annotations

import dataclasses
import time
from concurrent.futures import FIRST_COMPLETED, FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Callable, Protocol, Sequence

import numpy as np

from doom_a3c.config import TrainConfig
from doom_a3c.envs.doom.game import DoomEnvironment
from doom_a3c.envs.doom.multiplayer import (CONNECT_TIMEOUT_SECONDS, DEFAULT_MATCH_MINUTES, Seat, free_udp_port,
                                            kill_match_engines, seat_game_args, time_limit)
from doom_a3c.envs.engine import prepare_leash
from doom_a3c.envs.frame_stack import stack_frames
from doom_a3c.envs.interface import Environment, Step
from doom_a3c.errors import one_line

START_TIMEOUT_SECONDS = CONNECT_TIMEOUT_SECONDS + 30.0  # engines started, the host waiting for the others
OPPONENT_SEED_STRIDE = 100  # opponent i of a match plays the learner's seed + 100 i (+ 1 so that none is 0's)
MATCH_SEED_STRIDE = 10_000  # the n-th match of a game slot: its seed + 10,000 n


class MatchLost(RuntimeError):
    """A self-play match ended early (an engine died or stalled): its engines were killed."""


class OpponentPolicy(Protocol):
    """The opponents' actions in one game slot's matches (doom_a3c/algo/opponents.py's `FrozenOpponents`)."""

    def new_match(self, opponents: int) -> None:
        """A new match of `opponents` players starts: fresh LSTM states, perhaps another snapshot."""

    def act(self, observations: np.ndarray, players: np.ndarray) -> np.ndarray:
        """The next actions of opponents `players` (indexes 0..K-1, each with its own LSTM state): observations
        [N, *obs] -> actions [N] int."""


def opponent_config(config: TrainConfig) -> TrainConfig:
    """An opponent's game: the learner's observations and actions, none of its learning-only extras (shaping,
    exploration bonus), which would only cost engine calls nobody reads."""
    return dataclasses.replace(config, bots=0, reward_shaping=[], exploration_reward=0.0)


class SelfPlayGame:
    """The learner's game of a self-play run, every match of it against `opponents`' choices (see the module's
    docstring). `make_player(config, seed)` makes one player's game (tests pass a fake)."""

    def __init__(self, config: TrainConfig, seed: int, opponents: OpponentPolicy, step_timeout: float | None = None,
                 start_timeout: float = START_TIMEOUT_SECONDS,
                 make_player: Callable[[TrainConfig, int], Environment] | None = None):
        self._config = config
        self._count = config.self_play_opponents
        self._opponents = opponents
        self._minutes = time_limit(config.game_args) or DEFAULT_MATCH_MINUTES
        self._step_timeout = step_timeout or config.game_timeout
        self._start_timeout = start_timeout
        self._make_player = make_player or DoomEnvironment
        self._seed = seed
        self._matches = 0
        self._pool: ThreadPoolExecutor | None = None  # the match's threads: a new pool for every match
        self._players: list[Environment] = []  # the learner's game first, then the opponents'
        self._port = 0
        self._record_tics = False
        self._first: np.ndarray | None = None  # the learner's first observation of a match not yet reset() into
        self._opponent_observations: np.ndarray | None = None  # [K, *obs]
        self._playing: list[bool] = []  # per opponent: its match goes on
        self._pending: list[tuple[Future, float] | None] = []  # per opponent: its step under way, and since when
        self._start_match()
        learner = self._players[0]
        self.num_actions = learner.num_actions
        self.action_names = learner.action_names
        self.observation_shape = learner.observation_shape
        self.seconds_per_step = learner.seconds_per_step
        self.seconds_per_tic = getattr(learner, "seconds_per_tic", 0.0)

    @property
    def port(self) -> int:
        """The UDP port of the match being played."""
        return self._port

    def _player_configs(self, port: int) -> list[TrainConfig]:
        players = 1 + self._count
        seats = [Seat(i, players, port, self._minutes) for i in range(players)]
        learner = dataclasses.replace(self._config, game_args=seat_game_args(self._config.game_args, seats[0]))
        others = opponent_config(self._config)
        return [learner] + [dataclasses.replace(others, game_args=seat_game_args(self._config.game_args, seat))
                            for seat in seats[1:]]

    def _start_player(self, config: TrainConfig, seed: int, opponent: bool) -> tuple[Environment, np.ndarray]:
        game = self._make_player(config, seed)
        if opponent:  # the learner's frame stack is the caller's (doom_a3c/envs/factory.py)
            game = stack_frames(game, config.frame_stack or 1)
        try:
            return game, game.reset()  # the host's reset adds the bots
        except BaseException:
            game.close()
            raise

    def _start_match(self) -> None:
        """Every player's engine started on a fresh port, each in its own thread (the host's start waits for the
        others to join), and their first observations read; MatchLost (every engine killed) when one fails or the
        start takes longer than `start_timeout`."""
        import vizdoom

        prepare_leash(vizdoom)  # here, before the players' threads start engines side by side
        self._port = free_udp_port()
        self._pool = ThreadPoolExecutor(1 + self._count, thread_name_prefix="self-play")
        seed = self._seed + MATCH_SEED_STRIDE * self._matches
        self._matches += 1
        futures = [self._pool.submit(self._start_player, config, seed + OPPONENT_SEED_STRIDE * i + (i > 0), i > 0)
                   for i, config in enumerate(self._player_configs(self._port))]
        _, late = wait(futures, timeout=self._start_timeout, return_when=FIRST_EXCEPTION)
        failure = self._failure(futures, range(len(futures)), late, "start (every opponent joining the host)",
                                self._start_timeout)
        if failure is not None:
            self._end_match(futures)
            raise MatchLost(failure)
        started = [future.result() for future in futures]
        self._players = [game for game, _ in started]
        if self._record_tics:
            self._players[0].record_tics = True
        self._first = started[0][1]
        self._opponent_observations = np.stack([observation for _, observation in started[1:]])
        self._playing = [True] * self._count
        self._pending = [None] * self._count
        self._opponents.new_match(self._count)

    def _failure(self, futures: Sequence[Future], indexes: Sequence[int], late: set, what: str,
                 bound: float) -> str | None:
        """What ended the match, or None: the first player (`indexes`: 0 the learner) whose call raised, else
        the first whose call did not return within `bound` seconds."""
        for future, index in zip(futures, indexes):
            if future.done() and future.exception() is not None:
                return (f"self-play match on port {self._port}: {self._name(index)} failed: "
                        f"{one_line(future.exception())}")
        for future, index in zip(futures, indexes):
            if future in late:
                return (f"self-play match on port {self._port}: {self._name(index)}'s {what} did not return "
                        f"within {bound:g} s")
        return None

    @staticmethod
    def _name(index: int) -> str:
        return "the learner" if index == 0 else f"opponent p{index + 1}"

    def _end_match(self, starting: Sequence[Future] = ()) -> None:
        """Every engine of the match killed (by its port: a stalled engine does not answer close()), the games
        closed; a start that failed also closes the games its other threads go on to make."""
        kill_match_engines(self._port)
        games = list(self._players)
        for future in starting:
            try:
                games.append(future.result(timeout=10.0)[0])
            except BaseException:  # noqa: BLE001 - failed or still starting: killed by its port either way
                pass
        if starting:  # an engine that was still being launched at the first kill
            kill_match_engines(self._port)
        for game in games:
            try:
                game.close()
            except BaseException:  # noqa: BLE001 - a killed engine may fail to close
                pass
        self._players, self._pending = [], []
        if self._pool is not None:  # its threads end once their killed engines' calls raise
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def reset(self) -> np.ndarray:
        """The first observation of the match just started (the first reset), else of a new match on fresh engines
        and a new port: the last one ended, its engines are closed."""
        if self._first is None:
            self._end_match()
            self._start_match()
        first, self._first = self._first, None
        return first

    def reseed(self, seed: int) -> None:
        """The next match's seeds start from `seed`."""
        self._seed, self._matches = seed, 0

    def step(self, action: int) -> Step:
        """One learner step, its result once it returned; MatchLost (every engine killed) when a player's engine
        fails or a step stalls. While it runs, every opponent whose step returned is given its next at once: the
        learner's tics may be waiting for that opponent's input."""
        self._advance_opponents()
        learner = self._pool.submit(self._players[0].step, action)
        deadline = time.monotonic() + self._step_timeout
        while True:
            running = [learner] + [entry[0] for entry in self._pending if entry is not None and not entry[0].done()]
            wait(running, timeout=max(0.0, min(deadline, self._oldest_deadline()) - time.monotonic()),
                 return_when=FIRST_COMPLETED)
            failure = self._failure_now(learner, deadline)
            if failure is not None:
                self._end_match()
                raise MatchLost(failure)
            if learner.done():
                return learner.result()
            self._advance_opponents()

    def _advance_opponents(self) -> None:
        """The opponents' steps that returned: their observations taken (one whose match is over plays no more),
        and the next actions of all that are free chosen in one batched call and started. A step that raised is
        left for `_failure_now`."""
        for i, entry in enumerate(self._pending):
            if entry is None or not entry[0].done() or entry[0].exception() is not None:
                continue
            step, self._pending[i] = entry[0].result(), None
            if step.game_over:
                self._playing[i] = False
            else:
                self._opponent_observations[i] = step.observation
        ready = np.array([i for i in range(self._count) if self._playing[i] and self._pending[i] is None], int)
        if not len(ready):
            return
        actions = self._opponents.act(self._opponent_observations[ready], ready)
        now = time.monotonic()
        for i, opponent_action in zip(ready, actions):
            self._pending[i] = (self._pool.submit(self._players[1 + i].step, int(opponent_action)), now)

    def _oldest_deadline(self) -> float:
        started = [entry[1] for entry in self._pending if entry is not None]
        return min(started) + self._step_timeout if started else float("inf")

    def _failure_now(self, learner: Future, deadline: float) -> str | None:
        """What ends the match now, or None: a player whose step raised, else one whose step is overdue."""
        now = time.monotonic()
        steps = [(0, learner, deadline)] + [(1 + i, entry[0], entry[1] + self._step_timeout)
                                            for i, entry in enumerate(self._pending) if entry is not None]
        for index, future, _ in steps:
            if future.done() and future.exception() is not None:
                return (f"self-play match on port {self._port}: {self._name(index)} failed: "
                        f"{one_line(future.exception())}")
        for index, future, due in steps:
            if not future.done() and now >= due:
                return (f"self-play match on port {self._port}: {self._name(index)}'s step did not return "
                        f"within {self._step_timeout:g} s")
        return None

    # ---- the learner's game, as the batch and GIFs see it ------------------------------------------------------
    @property
    def record_tics(self) -> bool:
        return self._record_tics

    @record_tics.setter
    def record_tics(self, on: bool) -> None:
        self._record_tics = on
        if self._players:
            self._players[0].record_tics = on

    @property
    def tic_screens(self) -> list[np.ndarray]:
        return self._players[0].tic_screens if self._players else []

    def screen(self) -> np.ndarray:
        return self._players[0].screen()

    def scores(self) -> dict[str, int]:
        return self._players[0].scores()

    def close(self) -> None:
        self._end_match()
