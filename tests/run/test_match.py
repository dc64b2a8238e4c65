"""play.py --opponent: matches between checkpoints, each agent in its own ViZDoom engine (doom_a3c/run/match.py,
doom_a3c/envs/doom/multiplayer.py; the match's lifecycle is tests/envs/test_match_lifecycle.py's). The real-engine
tests play matches of 0.2 minutes (12 s of game time) between untrained cig checkpoints built here, and kill or stop
an engine only once its player's start is past the engine's first frame; every subprocess has a timeout, so a hang
fails the test."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import types

import pytest

from doom_a3c.envs.doom.multiplayer import (MatchEngines, Seat, command_line, free_udp_port, is_multiplayer,
                                            seat_game_args, time_limit)
from doom_a3c.envs.engine import vizdoom_instance_id
from doom_a3c.errors import ConfigError
from doom_a3c.run import match
from doom_a3c.run.match import check_buttons, places
from support import (assert_one_line_error, descendants, run_in_process, running, save_checkpoint,
                     finish_play, start_play,
                     wait_for)

CIG_ARGS = ("-host 1 -deathmatch +timelimit 10.0 +sv_forcerespawn 1 +sv_noautoaim 1 +sv_respawnprotect 1 "
            "+sv_spawnfarthest 1 +sv_nocrouch 1 +viz_respawn_delay 0")
MATCH_SECONDS = 240  # a subprocess's bound: a 0.2-minute match takes about 10 s with TensorFlow's import


# ---- the engine arguments of a seat, ports, places --------------------------------------------------------------
def test_the_host_keeps_the_maps_rules_and_hosts_every_player_for_the_matchs_minutes():
    args = seat_game_args(CIG_ARGS, Seat(0, 3, 5123, 0.5)).split()
    assert args[:4] == ["-host", "3", "-port", "5123"]
    assert "-deathmatch" in args and "+sv_forcerespawn" in args and args.count("-host") == 1
    assert args[args.index("+timelimit") + 1] == "0.5" and args.count("+timelimit") == 1
    assert args[-4:] == ["+name", "p1", "+colorset", "0"]


def test_a_joiner_only_joins_the_hosts_port():
    args = seat_game_args(CIG_ARGS, Seat(2, 3, 5123, 0.5)).split()
    assert args[:4] == ["-join", "127.0.0.1", "-port", "5123"]
    assert "-host" not in args and "+timelimit" not in args and "-deathmatch" not in args
    assert args[-4:] == ["+name", "p3", "+colorset", "2"]


def test_a_map_is_multiplayer_when_its_scenario_hosts_or_plays_deathmatch():
    assert is_multiplayer(CIG_ARGS) and is_multiplayer("-deathmatch") and is_multiplayer("-join 127.0.0.1")
    assert not is_multiplayer("") and not is_multiplayer("+sv_cheats 1")
    assert time_limit(CIG_ARGS) == 10.0 and time_limit("-host 1") is None


def test_free_ports_differ_and_can_be_bound():
    ports = {free_udp_port() for _ in range(5)}
    assert len(ports) >= 4  # the kernel may hand the same one out again once it is free
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind(("127.0.0.1", port))


def test_places_rank_by_frags_and_share_ties():
    assert places([3, 5, 3, None, -1]) == [2, 1, 2, None, 4]


def test_an_action_set_with_buttons_the_maps_cfg_lacks_is_refused_before_any_engine():
    import vizdoom

    cig = types.SimpleNamespace(scenario_path=os.path.join(vizdoom.scenarios_path, "cig.cfg"))
    fits = types.SimpleNamespace(actions=[["ATTACK"], ["TURN_LEFT/2", "MOVE_FORWARD"], []])
    check_buttons([("a", fits)], cig)
    other = types.SimpleNamespace(actions=[["ATTACK"], ["SELECT_NEXT_WEAPON"]])
    with pytest.raises(ConfigError, match=r"b acts with buttons \['SELECT_NEXT_WEAPON'\] that the match's cig.cfg"):
        check_buttons([("a", fits), ("b", other)], cig)


# ---- a match's engines -----------------------------------------------------------------------------------------
def test_match_engines_finds_each_seats_engine_and_sees_it_stopped_and_exited():
    """Processes with an engine's seat arguments on their command lines stand in for engines."""
    port = free_udp_port()
    fakes = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "-port", str(port), "+name",
                               f"p{seat + 1}"]) for seat in range(2)]
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "-port", "1", "+name", "p1"])
    try:
        engines = MatchEngines(port, 3)
        assert wait_for(lambda: engines.find() or len(engines.pids) == 2, 10)
        assert engines.pids == {0: fakes[0].pid, 1: fakes[1].pid} and engines.exited() == engines.stopped() == []
        os.kill(fakes[1].pid, signal.SIGSTOP)
        assert wait_for(lambda: engines.stopped() == [1], 10)
        os.kill(fakes[1].pid, signal.SIGCONT)
        fakes[1].kill()  # a zombie until reaped: exited all the same
        assert wait_for(lambda: engines.exited() == [1], 10)
        fakes[1].wait()
        assert engines.exited() == [1] and engines.stopped() == []
    finally:
        for proc in [*fakes, other]:
            proc.kill()
            proc.wait()


# ---- bad input: one line on stderr, exit 2, before TensorFlow -----------------------------------------------------
@pytest.mark.parametrize("flags, needle", [
    (["--opponent", "nowhere/last.ckpt"], "--opponent: no checkpoint at nowhere/last.ckpt"),
    (["--opponent", "{model}", "--bots", "-1"], "--bots must be >= 0"),
    (["--opponent", "{model}", "--match-minutes", "0"], "--match-minutes must be > 0"),
    (["--bots", "2"], "--bots needs --opponent"),
    (["--scenario", "cig"], "--scenario needs --opponent"),
    (["--opponent", "{model}", "--export", "x"], "takes no --opponent"),
    (["--model", "nowhere/last.ckpt", "--opponent", "{model}"], "--model: no checkpoint at nowhere/last.ckpt"),
    (["--model", "{model}"], "--model given 2 times: several checkpoints play together in a match only"),
])
def test_bad_match_flags_are_one_line_and_exit_2(tmp_path, capsys, flags, needle):
    model = tmp_path / "m"
    model.mkdir()
    (model / "last.ckpt.index").write_text("")
    flags = [f.format(model=model / "last.ckpt") for f in flags]
    proc = run_in_process("play.py", capsys, "--model", model / "last.ckpt", "--out", tmp_path / "out", *flags)
    assert proc.returncode == 2
    assert_one_line_error(proc, needle)


# ---- real engines ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Two cig checkpoints that see differently (84 and 42 pixels) and a single-player basic one."""
    folder = tmp_path_factory.mktemp("checkpoints")
    cwd = os.getcwd()
    os.chdir(folder)  # ViZDoom writes _vizdoom.ini where it runs
    try:
        return {"a": save_checkpoint(folder / "a"), "b": save_checkpoint(folder / "b", frame_size=42),
                "basic": save_checkpoint(folder / "basic", scenario="basic")}
    finally:
        os.chdir(cwd)


def finish(proc, seconds=MATCH_SECONDS):
    return finish_play(proc, seconds)


def engines_on_port(port: int) -> list[int]:
    """Every running ViZDoom engine on this machine that hosts or joins `port`, whoever its parent is now."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and running(int(entry)):
            words = command_line(int(entry))
            if words and os.path.basename(words[0]) == "vizdoom" and str(port) in words:
                found.append(int(entry))
    return found


def port_of(engine: int) -> int:
    words = command_line(engine)
    return int(words[words.index("-port") + 1])


def joining_engine(pid: int) -> int | None:
    engines = [p for p in descendants(pid)
               if os.path.basename(command_line(p)[0] if command_line(p) else "") == "vizdoom"
               and "-join" in command_line(p)]
    return engines[0] if engines else None


def past_first_frame(pid: int, engine: int) -> bool:
    """Whether process `pid` has mapped `engine`'s shared memory: its player's start is past the engine's first
    frame. An engine killed before that crashes the process inside ViZDoom (a segmentation fault; on a busy machine a
    fixed wait after the engine appears can end before its first frame), after it ViZDoom raises."""
    instance = vizdoom_instance_id(engine)
    try:
        with open(f"/proc/{pid}/maps") as handle:
            return instance is not None and f"/ViZDoomSM{instance}" in handle.read()
    except OSError:
        return False


def joiner_in_play(pid: int, seconds: float) -> int | None:
    """The joining engine of process `pid`'s match once that process's start is past the engine's first frame, or
    None if that takes longer than `seconds`."""
    if wait_for(lambda: joining_engine(pid) is not None and past_first_frame(pid, joining_engine(pid)), seconds):
        return joining_engine(pid)
    return None


def match_flags(checkpoints, out, *more):
    return ["--model", checkpoints["a"], "--opponent", checkpoints["b"], "--out", out, "--episodes", 1,
            "--match-minutes", 0.2, "--seed", 3, *more]


@pytest.mark.slow
def test_a_single_player_opponent_or_map_is_one_line_and_exit_2(checkpoints, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    proc = run_in_process("play.py", capsys, "--model", checkpoints["a"], "--opponent", checkpoints["basic"],
                          "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert_one_line_error(proc, "--opponent", "basic.cfg, a single-player map")
    proc = run_in_process("play.py", capsys, "--model", checkpoints["a"], "--opponent", checkpoints["b"],
                          "--scenario", "basic", "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert_one_line_error(proc, "--scenario basic is not a multiplayer ViZDoom map")
    assert not (tmp_path / "out" / "results.json").exists()


@pytest.mark.slow
def test_two_agents_play_a_match_and_their_frags_and_deaths_reach_results_json(checkpoints, tmp_path):
    import imageio.v3 as iio

    proc = start_play(tmp_path, "play", *match_flags(checkpoints, tmp_path / "out", "--bots", 1))
    returncode, out, err = finish(proc)
    assert returncode == 0, out[-2000:] + err[-2000:]
    assert "error" not in err, err[-2000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["minutes"] == 0.2 and results["bots"] == 1 and results["scenario"].endswith("cig.cfg")
    (match,) = results["matches"]
    assert match["finished"] is True and match["error"] is None
    # 0.2 minutes are 420 tics, 105 steps of 4 tics (one fewer if the last step's tics ran past the limit).
    assert 100 <= match["steps"] <= 105
    assert [p["name"] for p in match["players"]] == ["p1", "p2"]
    assert [p["checkpoint"] for p in match["players"]] == [checkpoints["a"], checkpoints["b"]]
    for player in match["players"]:
        assert isinstance(player["frags"], int) and isinstance(player["deaths"], int) and player["deaths"] >= 0
        assert player["place"] in (1, 2)
    assert match["videos"] == [str(tmp_path / "out" / "match_001.gif")]
    frames = iio.imread(match["videos"][0], index=None)
    # The first screen and one a step but the last (the GIF writer may merge two identical screens).
    assert match["steps"] - 3 <= len(frames) <= match["steps"] and frames.shape[-1] == 3
    assert "match 1: p1 " in out
    assert engines_on_port(match["port"]) == []


@pytest.mark.slow
def test_two_matches_side_by_side_take_their_own_ports(checkpoints, tmp_path):
    procs = [start_play(tmp_path, f"play{i}", *match_flags(checkpoints, tmp_path / f"out{i}")) for i in range(2)]
    finished = [finish(proc) for proc in procs]
    for returncode, out, err in finished:
        assert returncode == 0, out[-2000:] + err[-2000:]
    ports = [json.loads((tmp_path / f"out{i}" / "results.json").read_text())["matches"][0]["port"] for i in range(2)]
    assert ports[0] != ports[1]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_match_that_ends_before_its_first_step_starts_again_once_with_one_line(checkpoints, tmp_path, capsys,
                                                                                  monkeypatch):
    """The first try's host fails to make its game (as an engine lost while it starts), so no other player of that
    try starts; the second try plays."""
    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini where it runs
    made = match.make_environment
    tries = []

    def failing_first(config, seed):
        tries.append(seed)
        if len(tries) == 1:
            raise RuntimeError("ViZDoomErrorException: the engine exited while it started")
        return made(config, seed)

    monkeypatch.setattr(match, "make_environment", failing_first)
    (result,) = match.play_matches(checkpoints["a"], [checkpoints["b"]], str(tmp_path / "out"), matches=1,
                                   minutes=0.2)
    assert result.finished and result.error is None and result.steps >= 100, result
    assert len(tries) == 3 and tries[0] == tries[1] != tries[2], "the second try plays the same seeds"
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("warning: match 1 ended before its first step (player p"), lines
    assert lines[0].endswith("the engine exited while it started); starting it again on a fresh port"), lines[0]
    (saved,) = json.loads((tmp_path / "out" / "results.json").read_text())["matches"]
    assert saved["finished"] is True and saved["port"] == result.port


@pytest.mark.slow
def test_a_match_that_fails_twice_before_its_first_step_is_recorded_not_finished(checkpoints, tmp_path, capsys,
                                                                                 monkeypatch):
    monkeypatch.chdir(tmp_path)  # play_matches makes ./_vizdoom/ for the engines

    def failing(config, seed):
        raise RuntimeError("ViZDoomErrorException: the engine exited while it started")

    monkeypatch.setattr(match, "make_environment", failing)
    (result,) = match.play_matches(checkpoints["a"], [checkpoints["b"]], str(tmp_path / "out"), matches=1,
                                   minutes=0.2)
    assert not result.finished and result.steps == 0 and "the engine exited while it started" in result.error
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 2 and lines[0].startswith("warning: match 1 ended before its first step"), lines
    assert lines[1].startswith("error: match 1 ended early, its engines killed: player p"), lines
    (saved,) = json.loads((tmp_path / "out" / "results.json").read_text())["matches"]
    assert saved["finished"] is False


@pytest.mark.slow
def test_a_killed_joining_engine_ends_the_match_with_one_line_and_no_engine_left(checkpoints, tmp_path):
    proc = start_play(tmp_path, "play", *match_flags(checkpoints, tmp_path / "out", "--match-minutes", 2))
    try:
        joiner = joiner_in_play(proc.pid, MATCH_SECONDS)
        assert joiner is not None, proc.err_path.read_text()
        time.sleep(3)  # the match under way
        port = port_of(joiner)
        os.kill(joiner, signal.SIGKILL)
    finally:
        returncode, out, err = finish(proc, 120)
    assert returncode == 1, out[-2000:] + err[-2000:]
    line = assert_one_line_error(type("Proc", (), {"returncode": returncode, "stdout": out, "stderr": err}),
                                 "match 1 ended early", "p2")
    assert "engines killed" in line
    (match,) = json.loads((tmp_path / "out" / "results.json").read_text())["matches"]
    assert match["finished"] is False and match["port"] == port and "p2" in match["error"]
    assert wait_for(lambda: engines_on_port(port) == [], 10), engines_on_port(port)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_stalled_engine_ends_the_match_within_the_step_timeout(checkpoints, tmp_path, monkeypatch):
    """An engine that stops answering (SIGSTOP) blocks every player's step: the watchdog kills the match's engines."""
    from doom_a3c.run.agent import load_agent
    from doom_a3c.run.match import play_match

    monkeypatch.chdir(tmp_path)
    agents = [load_agent(checkpoints["a"]), load_agent(checkpoints["b"])]
    stopped = []

    def stop_the_joiner(port):
        stopped.append(joiner_in_play(os.getpid(), 60))
        assert stopped[0] is not None
        time.sleep(2)  # the match under way
        os.kill(stopped[0], signal.SIGSTOP)

    started = time.monotonic()
    result, _ = play_match(agents, agents[0].config, 1.0, 0, seed=0, step_timeout=3.0, on_start=stop_the_joiner)
    assert time.monotonic() - started < 60
    assert result.finished is False and "did not return within 3 s" in result.error, result.error
    assert result.error.startswith("player p2 ") and "engine is stopped" in result.error, result.error
    assert wait_for(lambda: engines_on_port(result.port) == [], 10), engines_on_port(result.port)


@pytest.mark.slow
def test_a_killed_play_py_takes_its_match_engines_with_it(checkpoints, tmp_path):
    proc = start_play(tmp_path, "play", *match_flags(checkpoints, tmp_path / "out", "--match-minutes", 2))
    try:
        assert wait_for(lambda: joining_engine(proc.pid) is not None, MATCH_SECONDS), proc.err_path.read_text()
        port = port_of(joining_engine(proc.pid))
        assert len(engines_on_port(port)) == 2
        proc.kill()  # SIGKILL: no code of play.py runs
    finally:
        finish(proc, 60)
    assert wait_for(lambda: engines_on_port(port) == [], 10), engines_on_port(port)
