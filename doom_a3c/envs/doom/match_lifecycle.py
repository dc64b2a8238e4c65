"""One multiplayer match of ViZDoom from its start to its end, the one lifecycle of self-play's training games
(doom_a3c/envs/doom/self_play.py) and of play.py's matches between checkpoints (doom_a3c/run/match.py).

- **A fresh port.** Each match plays on a UDP port that is free when it starts and that no other match of this
  process has drawn lately: two matches starting side by side are never offered the same one.
- **Engines started one at a time.** Each seat has a thread of its own that makes its game and then serves its
  calls (ViZDoom runs an engine outside the GIL; a network game advances a tic only once every player has sent its
  input, so the players are stepped side by side). Seat i + 1's game is made only once seat i's engine runs, and one
  match starts at a time in a process: ViZDoom's init() launching engines from two threads at once crashed the
  trainer (a segmentation fault, four threads in DoomGame.init, in 2 of 4 short runs with TensorFlow loaded). The
  host's start then waits for the joiners, the whole start within `start_timeout`.
- **The watch.** While a player's call is under way the caller looks at the match every WATCH_SECONDS: an engine
  that has exited ends it at once (its own thread may never hear of it: ViZDoom's wait on an engine killed inside
  its message queue's critical section blocks for good, docs/guide/faults.md), and so does a call past its bound (a
  stopped engine blocks every player; the stopped one is named when it can be seen). A failure kills every engine
  of the match by its port, which also ends the players' blocked steps; a call that even then does not return is
  given up KILL_GRACE_SECONDS later, its thread and game left behind. Never a hang.
- **The end.** Starts still under way finish first (up to `start_timeout`): ViZDoom 1.3.2 crashes the whole
  process when an engine dies before its first frame, which in a network game comes only once every player has
  joined (tests/envs/test_self_play.py pins it). Then every engine is killed, the games no thread is inside are
  closed (closing a game while its thread steps it crashed the trainer), and the end waits for every engine to be
  reaped.
"""
from __future__ import annotations

import collections
import queue
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, Future, wait
from typing import Callable, Mapping, Sequence

import numpy as np

from doom_a3c.envs.doom.multiplayer import (CONNECT_TIMEOUT_SECONDS, MatchEngines, free_udp_port,
                                            kill_match_engines, match_engines, player_name)
from doom_a3c.envs.engine import prepare_leash, process_state
from doom_a3c.envs.interface import Environment
from doom_a3c.errors import one_line

START_TIMEOUT_SECONDS = CONNECT_TIMEOUT_SECONDS + 30.0  # engines started, the host waiting for the others
START_ATTEMPTS = 2  # a match that fails to start is tried once more on another port before the failure is raised
WATCH_SECONDS = 0.5  # how often a call under way is checked on (engines exited or stopped, its bound)
MATCH_SEED_STRIDE = 10_000  # the n-th match from one seed: that seed + 10,000 n
SEAT_SEED_STRIDE = 100  # seat i of a match (0 the host) plays the match's seed + 100 i
ENGINE_LAUNCH_SECONDS = 10.0  # bound on one seat's engine appearing before the next seat's game is made
KILL_GRACE_SECONDS = 10.0  # once the engines are killed: the longest a call, the games' close or the reaping may take
RECENT_PORTS = 64  # the ports of this process's latest matches, which a new match does not take again
MATCH_START_LOCK = threading.Lock()  # one match starting at a time in this process (see the module's docstring)
_recent_ports: collections.deque[int] = collections.deque(maxlen=RECENT_PORTS)
_ports_lock = threading.Lock()


class MatchLost(RuntimeError):
    """A match ended early (an engine died or stalled, or its start failed): its engines were killed."""

    def __init__(self, failure: str, port: int):
        super().__init__(failure)
        self.port = port


class MatchStopped(KeyboardInterrupt):
    """Ctrl-C while the match started: its engines were killed (a KeyboardInterrupt still, to whoever does not
    handle it)."""

    def __init__(self, failure: str, port: int):
        super().__init__(failure)
        self.port = port


def seat_seeds(seed: int, match: int, seats: int) -> list[int]:
    """The engine seeds of a match's seats: the `match`-th match from `seed`, one seed apart per seat."""
    return [seed + MATCH_SEED_STRIDE * match + SEAT_SEED_STRIDE * seat for seat in range(seats)]


def fresh_port(draws: int = 100) -> int:
    """A UDP port free now (free_udp_port) that none of this process's latest RECENT_PORTS matches drew."""
    with _ports_lock:
        for _ in range(draws):
            port = free_udp_port()
            if port not in _recent_ports:
                _recent_ports.append(port)
                return port
    raise OSError(f"no UDP port that this process's latest {RECENT_PORTS} matches did not take, in {draws} draws")


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


class Match:
    """One match of `seats` players on a fresh port (see the module's docstring). `name(seat)` names a player in
    the failures ("opponent p2"); `title` ("self-play match") starts each failure, with the port, when given."""

    def __init__(self, seats: int, name: Callable[[int], str], title: str = "",
                 start_timeout: float = START_TIMEOUT_SECONDS):
        self.port = fresh_port()
        self.seats, self.name, self.title, self.start_timeout = seats, name, title, start_timeout
        self.engines = MatchEngines(self.port, seats)
        self.over = threading.Event()  # the match is over (its end, a failure, or its player's say): no failure counts
        self.failure: str | None = None  # what ended the match early, the first thing found
        self.exited_seat: int | None = None  # the seat whose engine's exit ended the match (a closed window's)
        self.late_seat: int | None = None  # the seat whose late step ended it
        self.games: list[Environment] = []  # by seat, once started
        self.observations: list[np.ndarray] = []  # each seat's first observation
        self._threads = [CallThread(f"match {player_name(seat)} {self.port}") for seat in range(seats)]
        self._made: dict[int, Environment] = {}  # the games made so far, by seat
        self._starts: list[Future] = []
        self._calls: dict[int, Future] = {}  # each seat's latest call
        self._plays: dict[int, Future] = {}  # the seats that play on their own (`play`)
        self._abandoned: set[int] = set()  # seats whose call was given up
        self._failure_lock = threading.Lock()
        self._ended = False

    # ---- the start ---------------------------------------------------------------------------------------------
    def start(self, makers: Sequence[Callable[[], Environment]]) -> None:
        """Seat i's game made by `makers[i]` in its thread and reset, each once the seat before it has an engine;
        `games` and `observations` once every start returned. MatchLost (the match ended) when one fails or the
        start takes longer than `start_timeout`."""
        import vizdoom

        prepare_leash(vizdoom)  # here, before the seats' threads start engines side by side
        try:
            with MATCH_START_LOCK:
                for seat, make in enumerate(makers):
                    self._starts.append(self.submit(seat, self._start_seat, seat, make))
                    self._wait_for_engine(seat + 1, self._starts[-1])
                    if self._starts[-1].done() and self._starts[-1].exception() is not None:
                        break  # no seat joins a match already failed: it would wait for the host for nothing
                _, late = wait(self._starts, timeout=self.start_timeout, return_when=FIRST_EXCEPTION)
        except KeyboardInterrupt:
            self.fail("stopped by Ctrl-C")  # every engine killed: the seats' starts return
            self.end()
            raise MatchStopped(self.failure, self.port) from None
        failure = self._start_failure(late)
        if failure is not None:
            self.failure = self._described(failure)
            self.end()
            raise MatchLost(self.failure, self.port)
        started = [start.result() for start in self._starts]
        self.games, self.observations = [game for game, _ in started], [observation for _, observation in started]
        self.engines.find()

    def _start_seat(self, seat: int, make: Callable[[], Environment]) -> tuple[Environment, np.ndarray]:
        self._made[seat] = game = make()
        try:
            return game, game.reset()  # the host's reset adds the bots
        except BaseException:
            del self._made[seat]
            game.close()
            raise

    def _wait_for_engine(self, engines: int, starting: Future) -> None:
        """Until the match has `engines` engines running, the seat's start ended, or ENGINE_LAUNCH_SECONDS (at most
        `start_timeout`) passed."""
        deadline = time.monotonic() + min(ENGINE_LAUNCH_SECONDS, self.start_timeout)
        while time.monotonic() < deadline and not starting.done() and len(match_engines(self.port)) < engines:
            time.sleep(0.02)

    def _start_failure(self, late: set) -> str | None:
        """The first seat whose start raised, else the first whose start has not returned; None when all started."""
        for seat, start in enumerate(self._starts):
            if start.done() and start.exception() is not None:
                return f"{self.name(seat)} failed: {one_line(start.exception())}"
        for seat, start in enumerate(self._starts):
            if start in late:
                return f"{self.name(seat)}'s start (every player joining the host) did not return within " \
                       f"{self.start_timeout:g} s"
        return None

    # ---- the players' calls and the watch ------------------------------------------------------------------------
    def submit(self, seat: int, call: Callable, *arguments) -> Future:
        """`call(*arguments)` in seat's thread (after any call before it)."""
        self._calls[seat] = future = self._threads[seat].submit(call, *arguments)
        return future

    def play(self, seat: int, loop: Callable[[], None]) -> Future:
        """`loop()` in seat's thread, the seat playing on its own until it returns; if it raises, the match fails
        with it."""
        def played() -> None:
            try:
                loop()
            except BaseException as error:
                self.fail(f"{self.name(seat)} failed: {one_line(error)}")
                raise

        self._plays[seat] = future = self.submit(seat, played)
        return future

    def finished(self) -> set[int]:
        """The seats whose own play (`play`) has returned: their games are over, their engines may close."""
        return {seat for seat, play in self._plays.items() if play.done() and play.exception() is None}

    def fail(self, failure: str) -> None:
        """The first failure of a match that is not over ends it: recorded, every engine killed (which ends the
        players' steps that wait for a dead or stopped engine)."""
        with self._failure_lock:
            if self.over.is_set() or self.failure is not None:
                return
            self.failure = self._described(failure)
        kill_match_engines(self.port)

    def _described(self, failure: str) -> str:
        return f"{self.title} on port {self.port}: {failure}" if self.title else failure

    def check(self, now: float, waiting: Mapping[int, float], bound: float | Mapping[int, float]) -> str | None:
        """What ends the match at `now` (monotonic), or None. First a seat's engine that has exited, unless its
        play finished (its thread may never hear of the exit); then a seat whose call has been under way since
        `waiting[seat]` for longer than `bound` (one for all, or by seat): any stopped engine blocks every player,
        so the stopped one is named first when it can be seen."""
        self.engines.find()
        finished = self.finished()
        exited = [seat for seat in self.engines.exited() if seat not in finished]
        if exited:
            self.exited_seat = exited[0]
            return f"{self.name(exited[0])} failed: its engine exited"
        seat_bound = (lambda seat: bound[seat]) if isinstance(bound, Mapping) else (lambda seat: bound)
        late = [seat for seat, since in sorted(waiting.items()) if now - since > seat_bound(seat)]
        if not late:
            return None
        waited = f"{self.name(late[0])}'s step did not return within {seat_bound(late[0]):g} s"
        stopped = [seat for seat in self.engines.stopped() if seat not in finished]
        if stopped:
            return f"{self.name(stopped[0])}'s engine is stopped: {waited}"
        self.late_seat = late[0]
        return waited

    def watch(self, calls: Mapping[int, Future], waiting: Callable[[], Mapping[int, float]],
              bound: float | Mapping[int, float]) -> bool:
        """Wait for `calls` (seat -> Future), looking at the match every WATCH_SECONDS meanwhile (`check`, with
        `waiting()`: the seats whose call is under way, since when). True once they all returned; False when the
        match failed and one has still not returned KILL_GRACE_SECONDS later (given up, said in `failure`)."""
        failed_at: float | None = None
        while (pending := wait(calls.values(), timeout=WATCH_SECONDS).not_done):
            now = time.monotonic()
            if self.failure is None and (failure := self.check(now, waiting(), bound)) is not None:
                self.fail(failure)
            if self.failure is not None:
                failed_at = failed_at or now
                if now - failed_at > KILL_GRACE_SECONDS:
                    given_up = [seat for seat, call in calls.items() if call in pending]
                    self._abandoned.update(given_up)
                    self.failure += f"; {self.name(given_up[0])}'s step had not returned {KILL_GRACE_SECONDS:g} s " \
                                    f"after the engines were killed and was given up"
                    return False
        return True

    # ---- the end -------------------------------------------------------------------------------------------------
    def end(self) -> None:
        """The match ended (see the module's docstring); again, nothing more."""
        if self._ended:
            return
        self._ended = True
        self.over.set()
        starting = [start for start in self._starts if not start.done()]
        if starting:
            wait(starting, timeout=self.start_timeout)
        killed = kill_match_engines(self.port)
        wait([call for seat, call in self._calls.items() if seat not in self._abandoned], timeout=KILL_GRACE_SECONDS)
        busy = {seat for seat, call in self._calls.items() if not call.done()}  # left to the garbage collector
        close_games([game for seat, game in sorted(self._made.items()) if seat not in busy])
        for thread in self._threads:
            thread.close()
        engines = set(killed) | set(self.engines.pids.values())
        deadline = time.monotonic() + KILL_GRACE_SECONDS
        while time.monotonic() < deadline and any(process_state(pid) is not None for pid in engines):
            time.sleep(0.02)  # killed, each a zombie until its game's ViZDoom thread reaps it


def close_games(games: Sequence[Environment]) -> None:
    """Close `games` in a thread of their own, waiting up to KILL_GRACE_SECONDS: closing a game whose engine was
    killed inside its message queue's critical section waits for good, for ViZDoom's own thread of it."""
    def close_each() -> None:
        for game in games:
            try:
                game.close()
            except BaseException:  # noqa: BLE001 - a killed engine may fail to close
                pass

    if games:
        closing = threading.Thread(target=close_each, daemon=True, name="match close")
        closing.start()
        closing.join(KILL_GRACE_SECONDS)


def start_match(seats: int, makers: Callable[[int], Sequence[Callable[[], Environment]]],
                name: Callable[[int], str], title: str = "", start_timeout: float = START_TIMEOUT_SECONDS,
                on_retry: Callable[[MatchLost], None] | None = None) -> Match:
    """A started match of `seats` players, whose games `makers(port)` makes, on a fresh port each try: another
    program can take the port the kernel offered before the host binds it. `on_retry(failure)` before the next
    try; MatchLost after START_ATTEMPTS."""
    for attempt in range(1, START_ATTEMPTS + 1):
        match = Match(seats, name, title, start_timeout)
        try:
            match.start(makers(match.port))
            return match
        except MatchLost as lost:
            if attempt == START_ATTEMPTS:
                raise
            if on_retry is not None:
                on_retry(lost)
