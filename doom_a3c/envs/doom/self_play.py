"""A self-play training game (--self-play): the learner's ViZDoom game as a match against K opponents, each in its
own engine, all in one network game on a port of their own.

The learner's engine hosts (the map's rules, `-host 1+K`, and the run's bots); the K opponents' engines join it
(doom_a3c/envs/doom/multiplayer.py gives every seat its arguments). ViZDoom's network game advances a tic only once
every player has sent its input for it, so the players are stepped side by side, never one after another:

- the learner's step runs in a thread of the match's own, while the caller's thread (the worker's) waits for it and
  watches the match (see below);
- each opponent plays in a thread of its own, from the match's first learner step to its end: its action from the
  slot's `OpponentPolicy` (an injected callable: doom_a3c/modes/build.py gives each game slot one; envs never import
  the network), then its engine's step (the engines run outside the GIL). Nobody waits here for another player's
  step: the network game keeps them in step. Any barrier between players (all K + 1 steps, or the K opponents'
  steps, returned before the next) deadlocked on cig, both ways tried: a joiner's clock starts some 20 tics after
  the host's, and as we read it one player's step can then need the input of a player held at the barrier. For the
  same reason the opponents act each for itself, not in one batch.

A match ends with the map's time limit; the next reset() starts a new match on fresh engines and a new free port
(and so new opponents). A match is a fault domain: an opponent whose step raises, a player whose engine has exited
(seen by its process: its thread may never hear of it, doom_a3c/envs/doom/multiplayer.py's `MatchEngines`), or a
learner step that has not returned within `step_timeout` (a stalled engine, the learner's or an opponent's, blocks
it) ends the match: every engine of the match is killed by its port, which also ends the learner's blocked step,
and the learner's step raises `MatchLost`, which the batch handles as a crashed game (doom_a3c/envs/batch.py: a
restarted game, one line in the log). A step that even then does not return (ViZDoom's wait on an engine killed
inside its message queue's critical section blocks for good: docs/guide/faults.md) is given up after
KILL_GRACE_SECONDS, its thread and game left behind; games are closed under the same bound. Never a hang.
"""
from __future__ import annotations

import dataclasses
import queue
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Callable, Protocol, Sequence

import numpy as np

from doom_a3c.config import TrainConfig
from doom_a3c.envs.doom.game import DoomEnvironment
from doom_a3c.envs.doom.multiplayer import (CONNECT_TIMEOUT_SECONDS, DEFAULT_MATCH_MINUTES, MatchEngines, Seat,
                                            free_udp_port, kill_match_engines, match_engines, player_name,
                                            seat_game_args, time_limit)
from doom_a3c.envs.engine import prepare_leash
from doom_a3c.envs.frame_stack import stack_frames
from doom_a3c.envs.interface import Environment, Step
from doom_a3c.errors import ConfigError, one_line

START_TIMEOUT_SECONDS = CONNECT_TIMEOUT_SECONDS + 30.0  # engines started, the host waiting for the others
START_ATTEMPTS = 2  # a match that fails to start is tried once more on another port before the failure is raised
OPPONENT_SEED_STRIDE = 100  # player i of a match (0 the learner) plays the match's seed + 100 i
MATCH_SEED_STRIDE = 10_000  # the n-th match of a game slot: its seed + 10,000 n
ENGINE_LAUNCH_SECONDS = 10.0  # bound on one player's engine appearing before the next player's is launched
WATCH_SECONDS = 0.5  # how often a learner's step under way is checked on (engines exited or stopped, its bound)
KILL_GRACE_SECONDS = 10.0  # once the engines are killed: the longest a learner's step or the games' close may take
# One match starting at a time in this process: two games' matches starting at once (a worker's two env threads) crashed
# the trainer in ViZDoom's init() (a segmentation fault, four threads in DoomGame.init, two matches' players).
MATCH_START_LOCK = threading.Lock()


class MatchLost(RuntimeError):
    """A self-play match ended early (an engine died or stalled): its engines were killed."""


class CallThread:
    """A daemon thread that makes one game's calls on request, each answered through a Future: the caller can stop
    waiting for a call that never returns. (A ThreadPoolExecutor's thread blocked for good would hold up the
    process's exit, which joins them; a daemon thread does not.)"""

    def __init__(self, name: str):
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, daemon=True, name=name).start()

    def submit(self, call: Callable, *arguments) -> Future:
        future: Future = Future()
        self._requests.put((future, call, arguments))
        return future

    def _serve(self) -> None:
        while (request := self._requests.get()) is not None:
            future, call, arguments = request
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(call(*arguments))
                except BaseException as error:  # noqa: BLE001 - the caller's to raise
                    future.set_exception(error)

    def close(self) -> None:
        """The thread ends after the call under way (never, if that one never returns)."""
        self._requests.put(None)


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
        self._threads: list[threading.Thread] = []  # the opponents', from a match's first step
        self._failure_lock = threading.Lock()
        self._over = threading.Event()  # the match ended (its end, a failure, close()): the opponents stop
        self._failure: str | None = None  # what the opponents' thread found wrong
        self._engines: MatchEngines | None = None  # the match's engines, by seat (0 the learner's)
        self._stepper: CallThread | None = None  # the match's thread that steps the learner's game
        self._stepping: Future | None = None  # the learner's last step: not done while it is under way
        self.opponent_steps = 0  # the opponents' steps in this match, all K together
        try:
            self._start_a_match()
        except MatchLost as error:  # twice in a row on a fresh game: a broken setup, not a stray fault
            raise ConfigError(f"could not start a self-play match: {error}") from error
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

    def _start_a_match(self) -> None:
        """A match started, on a new port each try: another program can take the port the kernel offered before
        the host binds it (doom_a3c/envs/doom/multiplayer.py's free_udp_port). MatchLost after START_ATTEMPTS."""
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                self._start_match()
                return
            except MatchLost:
                if attempt == START_ATTEMPTS:
                    raise

    def _start_match(self) -> None:
        """Every player's engine started on a fresh port, each in its own thread (the host's start waits for the
        others to join), and their first observations read; MatchLost (every engine killed) when one fails or the
        start takes longer than `start_timeout`."""
        import vizdoom

        prepare_leash(vizdoom)  # here, before the players' threads start engines side by side
        self._port = free_udp_port()
        self._pool = ThreadPoolExecutor(1 + self._count, thread_name_prefix="self-play start")
        self._over, self._failure, self._threads, self.opponent_steps = threading.Event(), None, [], 0
        seed = self._seed + MATCH_SEED_STRIDE * self._matches
        self._matches += 1
        futures: list[Future] = []
        with MATCH_START_LOCK:
            for i, config in enumerate(self._player_configs(self._port)):
                futures.append(self._pool.submit(self._start_player, config, seed + OPPONENT_SEED_STRIDE * i,
                                                 i > 0))
                self._wait_for_engine(i + 1, futures[-1])
            _, late = wait(futures, timeout=self._start_timeout, return_when=FIRST_EXCEPTION)
        failure = self._first_failure(futures, range(len(futures)), late, "start (every opponent joining the host)")
        if failure is not None:
            self._end_match(futures)
            raise MatchLost(failure)
        started = [future.result() for future in futures]
        self._players = [game for game, _ in started]
        if self._record_tics:
            self._players[0].record_tics = True
        self._first = started[0][1]
        self._opponent_observations = np.stack([observation for _, observation in started[1:]])
        self._engines = MatchEngines(self._port, 1 + self._count)
        self._engines.find()
        self._stepper, self._stepping = CallThread(f"self-play learner {self._port}"), None
        self._opponents.new_match(self._count)

    def _wait_for_engine(self, engines: int, starting: Future) -> None:
        """Until the match has `engines` engines running (or the player's start ended, or ENGINE_LAUNCH_SECONDS
        passed): ViZDoom's init() launching engines in two threads at once crashed the trainer (a segmentation
        fault, in 2 of 4 short runs with TensorFlow loaded), so each player's engine is launched once the one
        before it runs; the host's init then waits for the joiners' as before."""
        deadline = time.monotonic() + ENGINE_LAUNCH_SECONDS
        while time.monotonic() < deadline and not starting.done() and len(match_engines(self._port)) < engines:
            time.sleep(0.02)

    def _first_failure(self, futures: Sequence[Future], indexes: Sequence[int], late: set, what: str) -> str | None:
        """What ended the match, or None: the first player (`indexes`: 0 the learner) whose call raised, else the
        first whose call has not returned (`late`)."""
        for future, index in zip(futures, indexes):
            if future.done() and future.exception() is not None:
                return f"self-play match on port {self._port}: {self._name(index)} failed: " \
                       f"{one_line(future.exception())}"
        for future, index in zip(futures, indexes):
            if future in late:
                bound = self._start_timeout if what.startswith("start") else self._step_timeout
                return f"self-play match on port {self._port}: {self._name(index)}'s {what} did not return " \
                       f"within {bound:g} s"
        return None

    @staticmethod
    def _name(index: int) -> str:
        return "the learner" if index == 0 else f"opponent {player_name(index)}"

    def _end_match(self, starting: Sequence[Future] = ()) -> None:
        """Every engine of the match killed (by its port: a stalled engine does not answer close()), the opponents'
        threads ended, then the games closed (closing a game while its thread steps it crashed the trainer). A start
        that failed first lets its other players' init() end (up to `start_timeout`), then kills, and closes the
        games they made: ViZDoom 1.3.2 crashes the whole process (a segmentation fault in DoomGame.init) when an
        engine dies before its first frame, which in a network game comes only once every player has joined."""
        self._over.set()
        if starting:
            wait(starting, timeout=self._start_timeout)
        kill_match_engines(self._port)
        games = list(self._players)
        for future in starting:
            if future.done() and future.exception() is None:
                games.append(future.result()[0])
        for thread in self._threads:  # their engines are dead: their steps raise
            thread.join(5.0)
        busy = {1 + i for i, thread in enumerate(self._threads) if thread.is_alive()}
        if self._stepping is not None and not self._stepping.done():
            busy.add(0)
        # Still in a step of a killed engine: left to the garbage collector.
        self._close_games([game for index, game in enumerate(games) if index not in busy])
        self._players, self._threads, self._stepping = [], [], None
        if self._stepper is not None:
            self._stepper.close()
            self._stepper = None
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    @staticmethod
    def _close_games(games: Sequence[Environment]) -> None:
        """Close `games` in a thread of their own, waiting up to KILL_GRACE_SECONDS: closing a game whose engine was
        killed inside its message queue's critical section waits for good, for ViZDoom's own thread of it."""
        def close_each() -> None:
            for game in games:
                try:
                    game.close()
                except BaseException:  # noqa: BLE001 - a killed engine may fail to close
                    pass

        if games:
            closing = threading.Thread(target=close_each, daemon=True, name="self-play close")
            closing.start()
            closing.join(KILL_GRACE_SECONDS)

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
        """The learner's step, made by the match's step thread while this thread watches the match
        (`_await_step`); the opponents' threads start at a match's first step (by then the run's opponent networks
        exist). MatchLost, every engine killed, when the match failed."""
        if not self._threads:
            self._threads = [threading.Thread(target=self._play_opponent, args=(i,), daemon=True,
                                              name=f"self-play opponent {player_name(i + 1)} {self._port}")
                             for i in range(self._count)]
            for thread in self._threads:
                thread.start()
        self._stepping = stepping = self._stepper.submit(self._players[0].step, action)
        if not self._await_step(stepping):
            failure = f"{self._failure}; the learner's step had not returned {KILL_GRACE_SECONDS:g} s after the " \
                      f"engines were killed and was given up"
            self._end_match()
            raise MatchLost(failure)
        try:
            step = stepping.result()
        except Exception as error:  # noqa: BLE001 - an engine killed by the watchdog, or the learner's own failure
            failure = self._failure or f"self-play match on port {self._port}: the learner failed: {one_line(error)}"
            self._end_match()
            raise MatchLost(failure) from error
        if self._failure is not None:  # an opponent failed, the learner's step had already returned
            failure = self._failure
            self._end_match()
            raise MatchLost(failure)
        if step.game_over:
            self._over.set()
        return step

    def _await_step(self, stepping: Future) -> bool:
        """Wait for the learner's step, looking at the match every WATCH_SECONDS meanwhile (`_check_match`). False
        when the match failed (every engine killed) and the step has still not returned KILL_GRACE_SECONDS later."""
        started = time.monotonic()
        failed_at: float | None = None
        while not wait((stepping,), timeout=WATCH_SECONDS).done:
            now = time.monotonic()
            if self._failure is None:
                self._check_match(now - started)
            if self._failure is not None:
                failed_at = failed_at or now
                if now - failed_at > KILL_GRACE_SECONDS:
                    return False
        return True

    def _check_match(self, stepping_seconds: float) -> None:
        """The match fails when a player's engine has exited (its own thread may never hear of it), or when the
        learner's step has been under way for longer than `step_timeout`: a stopped engine, its own or an
        opponent's, blocks it (the one stopped is named when it can be seen). A learner that is not stepping
        (between rollouts, writing a GIF) stalls nothing."""
        exited = self._engines.exited()
        if exited:
            self._fail(f"self-play match on port {self._port}: {self._name(exited[0])} failed: its engine exited")
        elif stepping_seconds > self._step_timeout:
            stopped = self._engines.stopped()
            cause = f"{self._name(stopped[0])}'s engine is stopped" if stopped else \
                "a stopped engine, its own or an opponent's"
            self._fail(f"self-play match on port {self._port}: the learner's step did not return within "
                       f"{self._step_timeout:g} s ({cause})")

    def _play_opponent(self, index: int) -> None:
        """Opponent `index`'s thread: act, step, until its match is over. Its failure ends the match: the failure
        recorded for the learner's step to raise, every engine killed (which ends that step if it waits)."""
        game, players = self._players[1 + index], np.array([index])
        observation = self._opponent_observations[index:index + 1]
        try:
            while not self._over.is_set():
                step = game.step(int(self._opponents.act(observation, players)[0]))
                self.opponent_steps += 1
                if step.game_over:
                    return
                observation = step.observation[None]
        except BaseException as error:  # noqa: BLE001 - its engine died, or the policy failed
            self._fail(f"self-play match on port {self._port}: {self._name(1 + index)} failed: {one_line(error)}")

    def _fail(self, failure: str) -> None:
        """The first failure of a match that is not over ends it: recorded, every engine killed."""
        with self._failure_lock:
            if self._over.is_set() or self._failure is not None:
                return
            self._failure = failure
        kill_match_engines(self._port)

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
