"""A self-play training game (--self-play): the learner's ViZDoom game as a match against K opponents, each in its
own engine, all in one network game on a port of their own.

The learner's engine hosts (the map's rules, `-host 1+K`, and the run's bots); the K opponents' engines join it
(doom_a3c/envs/doom/multiplayer.py gives every seat its arguments). The match's start, watch and end are
doom_a3c/envs/doom/match_lifecycle.py's, as play.py's matches are; what is self-play's own:

- the learner's step runs in its seat's thread while the caller's thread (the worker's) waits for it and watches the
  match, the learner's step bounded by `step_timeout` (a stalled engine, the learner's or an opponent's, blocks it);
- each opponent plays on its own in its seat's thread, from the match's first learner step to its end: its action
  from the slot's `OpponentPolicy` (an injected callable: doom_a3c/modes/build.py gives each game slot one; envs
  never import the network), then its engine's step. Nobody waits here for another player's step: the network game
  keeps them in step. Any barrier between players (all K + 1 steps, or the K opponents' steps, returned before the
  next) deadlocked on cig, both ways tried: a joiner's clock starts some 20 tics after the host's, and as we read it
  one player's step can then need the input of a player held at the barrier. For the same reason the opponents act
  each for itself, not in one batch.

A match ends with the map's time limit; the next reset() starts a new match on fresh engines and a fresh port (and so
new opponents). A match that fails (an opponent whose step raises, an engine that exited or stalled) ends with its
engines killed, and the learner's step raises `MatchLost`, which the batch handles as a crashed game
(doom_a3c/envs/batch.py: a restarted game, one line in the log).
"""
from __future__ import annotations

import dataclasses
import functools
import time
from typing import Callable, NoReturn, Protocol

import numpy as np

from doom_a3c.config import TrainConfig
from doom_a3c.envs.doom.game import DoomEnvironment
from doom_a3c.envs.doom.match_lifecycle import START_TIMEOUT_SECONDS, Match, MatchLost, seat_seeds, start_match
from doom_a3c.envs.doom.multiplayer import DEFAULT_MATCH_MINUTES, Seat, player_name, seat_game_args, time_limit
from doom_a3c.envs.frame_stack import stack_frames
from doom_a3c.envs.interface import Environment, Step
from doom_a3c.errors import ConfigError, one_line


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
    return dataclasses.replace(config, bots=0, reward_shaping=[], movement_shaping=[], exploration_reward=0.0)


def player_title(seat: int) -> str:
    return "the learner" if seat == 0 else f"opponent {player_name(seat)}"


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
        self._match: Match | None = None  # the match under way (None once it ended)
        self._record_tics = False
        self._first: np.ndarray | None = None  # the learner's first observation of a match not yet reset() into
        self._opponents_play = False  # the opponents' own play started (at a match's first step)
        self.opponent_steps = 0  # the opponents' steps in this match, all K together
        try:
            self._start_a_match()
        except MatchLost as error:  # twice in a row on a fresh game: a broken setup, not a stray fault
            raise ConfigError(f"could not start a self-play match: {error}") from error
        learner = self._match.games[0]
        self.num_actions = learner.num_actions
        self.action_names = learner.action_names
        self.observation_shape = learner.observation_shape
        self.seconds_per_step = learner.seconds_per_step
        self.seconds_per_tic = getattr(learner, "seconds_per_tic", 0.0)

    @property
    def port(self) -> int:
        """The UDP port of the match being played."""
        return self._match.port if self._match is not None else 0

    def _player_makers(self, port: int) -> list[Callable[[], Environment]]:
        """Each seat's game: the learner's own config hosts, the opponents' join, seeded apart per match."""
        players = 1 + self._count
        seeds = seat_seeds(self._seed, self._matches, players)
        others = opponent_config(self._config)
        makers = []
        for i in range(players):
            config = dataclasses.replace(self._config if i == 0 else others, game_args=seat_game_args(
                self._config.game_args, Seat(i, players, port, self._minutes)))
            makers.append(functools.partial(self._make_seat, config, seeds[i], i > 0))
        return makers

    def _make_seat(self, config: TrainConfig, seed: int, opponent: bool) -> Environment:
        game = self._make_player(config, seed)
        # The learner's frame stack is the caller's (doom_a3c/envs/factory.py).
        return stack_frames(game, config.frame_stack or 1) if opponent else game

    def _start_a_match(self) -> None:
        """A new match on fresh engines and a fresh port (doom_a3c/envs/doom/match_lifecycle.py); MatchLost after
        its START_ATTEMPTS."""
        self._match = start_match(1 + self._count, self._player_makers, player_title, "self-play match",
                                  self._start_timeout)
        self._matches += 1
        self._opponents_play, self.opponent_steps = False, 0
        if self._record_tics:
            self._match.games[0].record_tics = True
        self._first = self._match.observations[0]
        self._opponents.new_match(self._count)

    def _end_match(self) -> None:
        if self._match is not None:
            self._match.end()
            self._match = None

    def reset(self) -> np.ndarray:
        """The first observation of the match just started (the first reset), else of a new match on fresh engines
        and a new port: the last one ended, its engines are closed."""
        if self._first is None:
            self._end_match()
            self._start_a_match()
        first, self._first = self._first, None
        return first

    def reseed(self, seed: int) -> None:
        """The next match's seeds start from `seed`."""
        self._seed, self._matches = seed, 0

    def step(self, action: int) -> Step:
        """The learner's step, made by its seat's thread while this thread watches the match; the opponents' own
        play starts at a match's first step (by then the run's opponent networks exist). MatchLost, every engine
        killed, when the match failed."""
        match = self._match
        if not self._opponents_play:
            self._opponents_play = True
            for index in range(self._count):
                match.play(1 + index, functools.partial(self._play_opponent, match, index))
        started = time.monotonic()
        stepping = match.submit(0, match.games[0].step, action)
        if not match.watch({0: stepping}, lambda: {0: started}, self._step_timeout):
            self._lose()
        try:
            step = stepping.result()
        except Exception as error:  # noqa: BLE001 - an engine killed by the watch, or the learner's own failure
            match.fail(f"the learner failed: {one_line(error)}")
            self._lose(error)
        if match.failure is not None:  # an opponent failed, the learner's step had already returned
            self._lose()
        if step.game_over:
            match.over.set()
        return step

    def _lose(self, cause: BaseException | None = None) -> NoReturn:
        """The match failed: ended, and MatchLost raised with its first failure."""
        failure, port = self._match.failure, self._match.port
        self._end_match()
        raise MatchLost(failure, port) from cause

    def _play_opponent(self, match: Match, index: int) -> None:
        """Opponent `index`'s own play, in its seat's thread: act, step, until its match is over."""
        game, players = match.games[1 + index], np.array([index])
        observation = match.observations[1 + index][None]
        while not match.over.is_set():
            step = game.step(int(self._opponents.act(observation, players)[0]))
            self.opponent_steps += 1
            if step.game_over:
                return
            observation = step.observation[None]

    # ---- the learner's game, as the batch and GIFs see it ------------------------------------------------------
    @property
    def record_tics(self) -> bool:
        return self._record_tics

    @record_tics.setter
    def record_tics(self, on: bool) -> None:
        self._record_tics = on
        if self._match is not None:
            self._match.games[0].record_tics = on

    @property
    def tic_screens(self) -> list[np.ndarray]:
        return self._match.games[0].tic_screens if self._match is not None else []

    def screen(self) -> np.ndarray:
        return self._match.games[0].screen()

    def scores(self) -> dict[str, int]:
        return self._match.games[0].scores()

    def close(self) -> None:
        self._end_match()
