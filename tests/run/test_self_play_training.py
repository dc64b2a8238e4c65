"""train.py --self-play: bad input (one line, exit 2), the saved config (an old cig checkpoint resumes as trained, a
run resumes with self-play), and real short runs of cig with matches of 3 s of game time: progress rows with frags,
a checkpoint play.py plays and --resume continues, and an opponent's engine killed mid-run (one line, the run goes
on, no engine left)."""
from __future__ import annotations

import json
import os
import signal
import threading

import pytest

from doom_a3c.envs.doom.multiplayer import match_engines
from doom_a3c.envs.doom.self_play import SelfPlayGame
from doom_a3c.errors import ConfigError
from doom_a3c.run import presets
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.saved_config import resolve_resumed_run, upgrade_saved_config
from doom_a3c.run.training import train_from_flags

from support import assert_one_line_error, engines_under, read_rows, run_in_process, wait_for


# ---- bad input ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("flags, needle", [
    (["--scenario", "basic", "--self-play"], "--self-play: basic is not a multiplayer map"),
    (["--scenario", "ALE/Pong-v5", "--self-play"], "--self-play: for ViZDoom multiplayer maps (cig) only"),
    (["--scenario", "CartPole-v1", "--self-play"], "--self-play: for ViZDoom multiplayer maps (cig) only"),
    (["--scenario", "cig", "--self-play", "--self-play-opponents", "0"],
     "--self-play-opponents must be a whole number from 1 to 7"),
    (["--scenario", "cig", "--self-play", "--self-play-opponents", "8"],
     "--self-play-opponents must be a whole number from 1 to 7"),
    (["--scenario", "cig", "--self-play", "--self-play-snapshot-minutes", "0"],
     "--self-play-snapshot-minutes must be > 0"),
    (["--scenario", "cig", "--self-play", "--self-play-opponents", "7", "--bots", "9"],
     "17 players, more than ViZDoom's 16"),
    (["--scenario", "cig", "--self-play", "--env-processes", "2"], "leave out --env-processes 2"),
    (["--scenario", "cig", "--self-play", "--distributed", "ray"], "not with --distributed ray"),
])
def test_bad_self_play_input_is_one_line_and_exit_2(flags, needle, capsys, tmp_path):
    proc = run_in_process("train.py", capsys, *flags, "--model-dir", tmp_path / "m")
    assert proc.returncode == 2
    assert_one_line_error(proc, needle)


def test_self_play_games_run_in_this_process_and_the_preset_keeps_its_bots(tmp_path):
    config = resolve_new_run({"scenario": "cig", "self_play": True, "model_dir": str(tmp_path / "m")})
    assert config.self_play and config.self_play_opponents == 1 and config.env_processes == 0
    assert config.bots == 7 and config.plays_deathmatch()
    plain = resolve_new_run({"scenario": "cig", "model_dir": str(tmp_path / "m")})
    assert not plain.self_play and plain.env_processes == 2


# ---- saved configs ------------------------------------------------------------------------------------------------
def test_an_old_cig_checkpoint_without_the_self_play_fields_resumes_as_trained(tmp_path):
    old = resolve_new_run({"scenario": "cig", "model_dir": str(tmp_path / "m")}).to_dict()
    for name in ("self_play", "self_play_opponents", "self_play_snapshot_minutes"):
        del old[name]
    config = upgrade_saved_config(old, "old")
    assert not config.self_play and config.self_play_opponents == 1 and config.self_play_snapshot_minutes == 5.0
    resumed = resolve_resumed_run(config, {"max_minutes": 1.0}, "old")
    assert not resumed.self_play and resumed.env_processes == 2 and resumed.bots == 7
    # ...and it may go on in self-play: its games move into this process
    playing = resolve_resumed_run(config, {"self_play": True, "self_play_opponents": 2}, "old")
    assert playing.self_play and playing.self_play_opponents == 2 and playing.env_processes == 0
    assert config.bot_curriculum and not playing.bot_curriculum  # self-play's matches have no bots to move


def test_a_single_player_checkpoint_cannot_resume_in_self_play(tmp_path):
    saved = resolve_new_run({"scenario": "basic", "model_dir": str(tmp_path / "m")})
    with pytest.raises(ConfigError, match="--self-play: basic is not a multiplayer map"):
        resolve_resumed_run(saved, {"self_play": True}, "models/basic")


# ---- real runs ----------------------------------------------------------------------------------------------------
@pytest.fixture
def short_matches(tmp_path, monkeypatch):
    """cig with 3-second matches (105 tics, 27 steps) and one bot, run from tmp_path (ViZDoom writes there)."""
    monkeypatch.chdir(tmp_path)
    load = presets.load_preset

    def shortened(name, *args):
        preset = load(name, *args)
        if name == "cig":
            preset = {**preset, "game_args": preset["game_args"].replace("+timelimit 10.0", "+timelimit 0.05"),
                      "bots": 1}
        return preset

    monkeypatch.setattr(presets, "load_preset", shortened)


def small_run(tmp_path, **overrides):
    return {"scenario": "cig", "self_play": True, "model_dir": str(tmp_path / "model"),
            "frames_dir": str(tmp_path / "frames"), "max_steps": 300, "frame_size": 20, "hidden_size": 16,
            "lstm_size": 8, "workers": 1, "envs_per_worker": 2, "env_threads": 2, "gif_every": 0,
            "log_every_seconds": 60.0, "evaluate": False, "self_play_snapshot_minutes": 0.05, **overrides}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_short_self_play_run_writes_match_rows_and_a_checkpoint_play_and_resume_use(tmp_path, short_matches):
    model = tmp_path / "model"
    assert train_from_flags(small_run(tmp_path)) == 0
    header = (model / "progress.csv").read_text().splitlines()[0]
    assert header.endswith(",frags,deaths,frags_per_minute,place")
    rows = read_rows(model / "progress.csv")
    assert len(rows) >= 4
    for row in rows:  # the learner, one opponent and a bot: three places
        assert row["reward"] == row["frags"] and 1 <= row["place"] <= 3 and row["deaths"] >= 0
    saved = json.loads((model / "config.json").read_text())
    assert saved["self_play"] is True and saved["self_play_opponents"] == 1 and saved["env_processes"] == 0
    assert not match_engines(0) and not engines_under(os.getpid())

    from doom_a3c.run.playback import play

    out = tmp_path / "play"
    play(str(model), str(out), episodes=1, video="gif")  # the map's own game: the learner against the bot
    results = json.loads((out / "results.json").read_text())
    assert results["episodes"][0]["match"]["players"] == 2

    assert train_from_flags({"model_dir": str(model), "resume": True, "max_steps": 400}) == 0
    assert len(read_rows(model / "progress.csv")) > len(rows)
    assert not engines_under(os.getpid())


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_an_opponent_engine_killed_mid_run_ends_its_match_with_one_line_and_the_run_goes_on(tmp_path, short_matches,
                                                                                             capsys, monkeypatch):
    """The killed joiner is one of a match in play: it is killed just before its learner's fifth step of a match of
    27, once the run has written progress, so the match cannot end unseen before the failure shows. An engine killed
    by another thread at a random instant may die in a match that has just ended (nothing to report) or during a
    match's start, before its first frame, which crashes the trainer inside ViZDoom (docs/guide/self-play.md)."""
    steps: dict[int, int] = {}  # port -> the learner's steps so far in the match on that port
    killed = []
    killing = threading.Lock()
    step = SelfPlayGame.step

    def joiners(port):
        found = []
        for pid in match_engines(port):
            try:
                with open(f"/proc/{pid}/cmdline") as handle:
                    if "-join" in handle.read().split("\0"):
                        found.append(pid)
            except OSError:  # already gone
                pass
        return found

    def step_killing_an_opponent(game, action):
        with killing:  # the run's games step in threads of their own (--env-threads 2): one kill in all
            steps[game.port] = steps.get(game.port, 0) + 1
            if not killed and steps[game.port] == 5 and (tmp_path / "model" / "progress.csv").exists():
                for pid in joiners(game.port)[:1]:
                    killed.append(pid)
                    os.kill(pid, signal.SIGKILL)
        result = step(game, action)
        if result.game_over:
            steps.pop(game.port, None)
        return result

    monkeypatch.setattr(SelfPlayGame, "step", step_killing_an_opponent)
    assert train_from_flags(small_run(tmp_path, max_steps=600)) == 0
    err = capsys.readouterr().err
    assert killed, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("warning: game ") and "opponent p2 failed" in lines[0], lines[0]
    assert "closed and restarted" in lines[0]
    rows = read_rows(tmp_path / "model" / "progress.csv")
    assert len(rows) >= 4
    assert wait_for(lambda: not engines_under(os.getpid()), 10)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_kill_9_of_a_self_play_trainer_leaves_no_engine(tmp_path):
    """The opponents' engines start through the engine leash as every engine does: they die with the trainer."""
    import subprocess
    import sys

    from support import REPO_ROOT, clean_up, running

    log, errors = open(tmp_path / "train.log", "w"), open(tmp_path / "stderr.log", "w")
    proc = subprocess.Popen([sys.executable, os.path.join(REPO_ROOT, "train.py"), "--scenario", "cig", "--self-play",
                             "--self-play-opponents", "2", "--bots", "0", "--model-dir", str(tmp_path / "run"),
                             "--frames-dir", str(tmp_path / "frames"), "--max-minutes", "10", "--gif-every", "0",
                             "--workers", "1", "--envs-per-worker", "1", "--no-evaluate"], cwd=tmp_path, stdout=log,
                            stderr=errors, start_new_session=True)
    proc.log, proc.errors = log, errors
    engines = []
    try:
        assert wait_for(lambda: len(engines_under(proc.pid)) == 3, 180), (tmp_path / "stderr.log").read_text()[-2000:]
        engines = engines_under(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert wait_for(lambda: not any(running(pid) for pid in engines), 15), engines
    finally:
        clean_up(proc, engines)
