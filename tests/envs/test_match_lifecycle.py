"""One multiplayer match's lifecycle (doom_a3c/envs/doom/match_lifecycle.py), which self-play and play.py's matches
share: a fresh port, the seats' games started one at a time, the watch's verdict, a failed start ended only once the
other starts have, and a real cig match whose joining engine is killed mid-match: the failure is seen and every
engine of it is reaped. Stand-in processes carry an engine's seat arguments (`-port PORT +name pN`) where a test
needs engines but not ViZDoom."""
from __future__ import annotations

import collections
import dataclasses
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from doom_a3c.envs.doom import match_lifecycle
from doom_a3c.envs.doom.match_lifecycle import Match, MatchLost, MatchStopped, fresh_port, seat_seeds, start_match
from doom_a3c.envs.doom.multiplayer import Seat, match_engines, player_name, seat_game_args
from doom_a3c.envs.engine import process_state
from doom_a3c.envs.interface import Step
from support import engines_under, wait_for


def name(seat: int) -> str:
    return f"player {player_name(seat)}"


def stand_in_engine(port: int, seat: int) -> subprocess.Popen:
    """A process with seat's engine arguments, reaped by a thread that waits for it, as ViZDoom's engines are."""
    engine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "-port", str(port), "+name",
                               f"p{seat + 1}"])
    threading.Thread(target=engine.wait, daemon=True).start()
    return engine


class StandInGame:
    """A seat's game whose engine is a stand-in process; close() ends and reaps it, as ViZDoom's does."""

    def __init__(self, engine: subprocess.Popen):
        self.engine, self.closed = engine, False

    def reset(self):
        return np.zeros((2, 2, 1), np.uint8)

    def step(self, action):
        return Step(np.zeros((2, 2, 1), np.uint8), 0.0, False, False)

    def close(self):
        self.closed = True
        self.engine.kill()
        self.engine.wait()


class FakeEngines:
    def __init__(self, exited=(), stopped=()):
        self._exited, self._stopped, self.pids = list(exited), list(stopped), {}

    def find(self):
        pass

    def exited(self):
        return self._exited

    def stopped(self):
        return self._stopped


@pytest.fixture
def ended():
    """Matches the test made, each ended after it (their threads closed)."""
    matches = []
    yield matches.append
    for match in matches:
        match.end()


# ---- the port ---------------------------------------------------------------------------------------------------
def test_each_match_takes_a_port_no_recent_match_of_the_process_took(monkeypatch):
    ports = [fresh_port() for _ in range(20)]
    assert len(set(ports)) == 20
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind(("127.0.0.1", port))
    offered = iter([41000, 41000, 41001, 41000, 41002])  # the kernel may offer a port it offered just before
    monkeypatch.setattr(match_lifecycle, "_recent_ports", collections.deque(maxlen=match_lifecycle.RECENT_PORTS))
    monkeypatch.setattr(match_lifecycle, "free_udp_port", lambda: next(offered))
    assert [fresh_port(), fresh_port(), fresh_port()] == [41000, 41001, 41002]


def test_a_match_seats_seeds_apart_and_its_next_match_further_apart():
    assert seat_seeds(7, 0, 3) == [7, 107, 207]
    assert seat_seeds(7, 2, 2) == [20_007, 20_107]


# ---- the start -----------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_seats_start_one_at_a_time_each_once_the_one_before_has_its_engine(ended):
    """The host's start returns only once every other seat has joined (as ViZDoom's init waits for the joiners), so
    the joiners must start while it is under way, each after the engine before it runs."""
    engines_seen, engines = [], []

    def host(port):
        engines_seen.append(len(match_engines(port)))
        engine = stand_in_engine(port, 0)
        engines.append(engine)
        assert wait_for(lambda: len(match_engines(port)) == 3, 20), "the joiners never started"
        return StandInGame(engine)

    def joiner(port, seat):
        engines_seen.append(len(match_engines(port)))
        engine = stand_in_engine(port, seat)
        engines.append(engine)
        return StandInGame(engine)  # not engines[-1]: the next seat may start, and append, before this line

    match = start_match(3, lambda port: [lambda: host(port), lambda: joiner(port, 1), lambda: joiner(port, 2)], name)
    ended(match)
    assert engines_seen == [0, 1, 2]
    assert [game.engine for game in match.games] == engines and len(match.observations) == 3
    assert sorted(match_engines(match.port)) == sorted(engine.pid for engine in engines)
    match.end()
    assert all(game.closed for game in match.games) and not match_engines(match.port)
    assert all(process_state(engine.pid) is None for engine in engines)  # reaped, not zombies


@pytest.mark.slow
@pytest.mark.parametrize("host_start_seconds, start_timeout, host_ends_first", [(1.5, 20.0, True), (5.0, 1.0, False)])
def test_a_failed_start_kills_the_engines_once_the_other_seats_starts_end_or_their_bound_passes(
        monkeypatch, host_start_seconds, start_timeout, host_ends_first):
    """ViZDoom 1.3.2 crashes the process when an engine dies before its first frame, so a joiner's failed start must
    not kill the host's engine while the host's start still runs, unless that start is past its own bound."""
    events, engines = [], []

    def host(port):
        engines.append(stand_in_engine(port, 0))
        time.sleep(host_start_seconds)  # waiting for the joiner, which never comes
        events.append("host's start ended")
        raise RuntimeError("ViZDoomErrorException: the other player did not join")

    def joiner():
        events.append("joiner failed")
        raise RuntimeError("ViZDoomErrorException: could not join")

    kill = match_lifecycle.kill_match_engines
    killed_at = []

    def recorded_kill(port):
        events.append("engines killed")
        killed_at.append(time.monotonic())
        return kill(port)

    monkeypatch.setattr(match_lifecycle, "kill_match_engines", recorded_kill)
    match = Match(2, name, start_timeout=start_timeout)
    began = time.monotonic()
    try:
        with pytest.raises(MatchLost, match=r"^player p2 failed: RuntimeError: ViZDoomErrorException: could not join"):
            match.start([lambda: host(match.port), joiner])
    finally:
        for engine in engines:
            engine.kill()
            engine.wait()
    if host_ends_first:
        assert events == ["joiner failed", "host's start ended", "engines killed"]
    else:
        assert events[:2] == ["joiner failed", "engines killed"] and killed_at[0] - began < 4.0


@pytest.mark.slow
def test_ctrl_c_while_a_match_starts_kills_its_engines_and_tries_no_other_start(monkeypatch):
    """Ctrl-C reaches the main thread while it waits for the seats' starts (here: while it waits for the joiner's
    engine, the host's start waiting for the joiner): the engines are killed at once, the starts end, and no second
    start is tried."""
    tries, engines = [], []

    def seat(port, index):
        tries.append(port)
        engine = stand_in_engine(port, index)
        engines.append(engine)
        wait_for(lambda: engine.poll() is not None, 30)  # ViZDoom's start ends when its engine is killed
        raise RuntimeError("ViZDoomUnexpectedExitException: the engine exited")

    wait_for_engine = Match._wait_for_engine

    def ctrl_c_at_the_joiner(self, engines_wanted, starting):
        wait_for_engine(self, engines_wanted, starting)
        if engines_wanted == 2:
            raise KeyboardInterrupt  # where the main thread's SIGINT would land

    monkeypatch.setattr(Match, "_wait_for_engine", ctrl_c_at_the_joiner)
    started = time.monotonic()
    with pytest.raises(MatchStopped, match="stopped by Ctrl-C") as stopped:
        start_match(2, lambda port: [lambda: seat(port, 0), lambda: seat(port, 1)], name, start_timeout=30)
    assert time.monotonic() - started < 10 and set(tries) == {stopped.value.port} and len(engines) == 2
    assert all(engine.poll() is not None for engine in engines)


def test_no_seat_starts_after_one_before_it_failed_and_the_start_is_tried_again_on_another_port():
    """A joiner started after its host failed would only wait for it, and its start would hold up the end."""
    tries, retries = [], []

    def makers(port):
        def host():
            tries.append((port, "host"))
            if len(tries) == 1:
                raise RuntimeError("ViZDoomErrorException: the engine exited while it started")
            return StandInGame(stand_in_engine(port, 0))

        def joiner():
            tries.append((port, "joiner"))
            return StandInGame(stand_in_engine(port, 1))

        return [host, joiner]

    match = start_match(2, makers, name, on_retry=retries.append)
    match.end()
    assert [role for _, role in tries] == ["host", "host", "joiner"] and tries[0][0] != tries[1][0] == match.port
    assert [str(lost) for lost in retries] == ["player p1 failed: RuntimeError: ViZDoomErrorException: the engine "
                                               "exited while it started"]


# ---- the watch -----------------------------------------------------------------------------------------------------
def test_a_dead_engine_is_named_though_another_seats_step_timed_out_first(ended):
    """A network game's players wait for each other: a joiner's dead engine stalls the host's step too, and the
    joiner's own thread may wait in ViZDoom for good (no error comes). The dead engine is the cause."""
    match = Match(2, name)
    ended(match)
    match.engines = FakeEngines(exited=[1])
    assert match.check(31.0, {0: 0.0}, 30.0) == "player p2 failed: its engine exited"
    assert match.check(31.0, {}, 30.0) == "player p2 failed: its engine exited"  # before any bound


def test_a_step_past_its_bound_names_the_stopped_engine_else_the_seat_that_waited(ended):
    match = Match(2, name, title="self-play match")
    ended(match)
    match.engines = FakeEngines()
    assert match.check(2.9, {0: 0.0, 1: 2.0}, 3.0) is None
    assert match.check(3.5, {0: 0.0, 1: 2.0}, 3.0) == "player p1's step did not return within 3 s"
    match.engines = FakeEngines(stopped=[1])
    assert match.check(3.5, {0: 0.0, 1: 2.0}, 3.0) == \
        "player p2's engine is stopped: player p1's step did not return within 3 s"
    match.fail(match.check(3.5, {0: 0.0}, 3.0))
    assert match.failure == f"self-play match on port {match.port}: player p2's engine is stopped: player p1's " \
                            f"step did not return within 3 s"


def test_each_seat_may_have_its_own_bound_and_the_late_one_is_kept(ended):
    """A person's seat keeps the game's clock and gets a shorter bound than the agents'."""
    match = Match(2, name)
    ended(match)
    match.engines = FakeEngines()
    bounds = {0: 10.0, 1: 30.0}
    assert match.check(9.0, {0: 0.0, 1: 0.0}, bounds) is None and match.late_seat is None
    assert match.check(11.0, {0: 0.0, 1: 0.0}, bounds) == "player p1's step did not return within 10 s"
    assert match.late_seat == 0
    match.late_seat = None
    match.engines = FakeEngines(stopped=[1])  # a stopped engine is the cause: no seat counts as late
    assert match.check(11.0, {0: 0.0}, bounds).startswith("player p2's engine is stopped") and match.late_seat is None


def test_a_finished_seats_closed_engine_ends_nothing(ended):
    match = Match(2, name)
    ended(match)
    match.play(0, lambda: None).result(5)
    match.engines = FakeEngines(exited=[0])
    assert match.check(10.0, {1: 9.0}, 30.0) is None


def test_a_seat_whose_play_raises_fails_the_match_and_kills_its_engines(monkeypatch, ended):
    killed = []
    monkeypatch.setattr(match_lifecycle, "kill_match_engines", lambda port: killed.append(port) or [])
    match = Match(2, name)
    ended(match)

    def broken():
        raise RuntimeError("ViZDoomUnexpectedExitException: engine gone")

    playing = match.play(1, broken)
    assert wait_for(lambda: playing.done(), 5) and killed == [match.port]
    assert match.failure == "player p2 failed: RuntimeError: ViZDoomUnexpectedExitException: engine gone"
    match.fail("a second failure")  # the first one stands, nothing killed again
    assert match.failure.startswith("player p2 failed") and killed == [match.port]


# ---- real engines ----------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_an_engine_killed_mid_match_is_seen_and_every_engine_is_reaped(tmp_path, monkeypatch):
    from doom_a3c.envs.doom.game import DoomEnvironment
    from doom_a3c.envs.engine import quiet_engines
    from doom_a3c.run.resolve import resolve_new_run

    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini where it runs
    quiet_engines()
    config = resolve_new_run({"scenario": "cig", "bots": 0, "model_dir": str(tmp_path / "m")})

    def makers(port):
        seats = [dataclasses.replace(config, game_args=seat_game_args(config.game_args, Seat(i, 2, port, 5.0)))
                 for i in range(2)]
        return [lambda seat=seat, seed=seed: DoomEnvironment(seat, seed)
                for seat, seed in zip(seats, seat_seeds(1, 0, 2))]

    match = start_match(2, makers, name)
    steps = [0, 0]

    def random_play(seat):
        rng, game = np.random.default_rng(seat), match.games[seat]
        while not game.step(int(rng.integers(game.num_actions))).game_over:
            steps[seat] += 1

    try:
        engines = dict(match.engines.pids)
        assert sorted(engines) == [0, 1] and sorted(match_engines(match.port)) == sorted(engines.values())
        def kill_the_joiner_once_under_way():
            if wait_for(lambda: min(steps) >= 20, 60):
                os.kill(engines[1], signal.SIGKILL)

        plays = {seat: match.play(seat, lambda seat=seat: random_play(seat)) for seat in range(2)}
        killer = threading.Thread(target=kill_the_joiner_once_under_way)
        killer.start()
        started = time.monotonic()
        match.watch(plays, lambda: {seat: started for seat in plays}, 30.0)
        killer.join()
        assert min(steps) >= 20 and match.failure is not None
        assert match.failure.startswith("player p2 failed"), match.failure
    finally:
        match.end()
    assert not match_engines(match.port) and not engines_under(os.getpid())
    assert all(process_state(pid) is None for pid in engines.values())  # reaped: not even a zombie left
