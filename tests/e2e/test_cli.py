"""Real subprocess runs of train.py and play.py: outputs, --resume, and one-line errors for bad inputs.

One short training run is shared by the whole module; tests that would change it work on a copy. The one-line
errors that need TensorFlow are seen as a user sees them (a subprocess, its whole stderr) once per script
(test_resume_truncated_checkpoint, test_play_truncated_checkpoint); the rest call the scripts' main functions in
this process, which saves a Python and TensorFlow start (7-11 s) each.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys

import imageio.v3 as iio
import numpy as np
import pytest

from support import (REPO_ROOT, assert_one_line_error, read_rows, run, run_in_process, saved_run, snapshot, strict_json,
                     wait_for)

pytestmark = pytest.mark.slow

CSV_HEADER = "wall_s,env_steps,episode,worker,reward,length"
MAX_STEPS = 1500
RESUMED_EXTRA_STEPS = 600  # the resume's budget past the shared run's saved step count


# ---- the shared run ------------------------------------------------------------------------------
class Run:
    pass


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """train.py on basic.wad for 1500 steps with 2 workers x 2 envs."""
    base = tmp_path_factory.mktemp("shared_run")
    r = Run()
    r.model_dir, r.frames_dir = base / "model", base / "frames"
    r.proc = run("train.py", "--scenario", "basic.wad", "--max-steps", MAX_STEPS, "--workers", 2,
                 "--envs-per-worker", 2, "--gif-every", 2, "--model-dir", r.model_dir, "--frames-dir", r.frames_dir,
                 "--log-every-seconds", 1, "--eval-episodes", 2)  # the final evaluation's Eval/* tags, 2 games
    assert r.proc.returncode == 0, r.proc.stderr[-3000:]
    return r


@pytest.fixture(scope="module")
def played(trained, tmp_path_factory):
    """play.py for 2 episodes from the shared run's last.ckpt."""
    r = Run()
    r.out = tmp_path_factory.mktemp("play") / "out"
    r.proc = run("play.py", "--model", trained.model_dir / "last.ckpt", "--out", r.out, "--episodes", 2)
    return r


@pytest.fixture
def run_copy(trained, tmp_path):
    """A private copy of the shared run (hard links become independent files)."""
    target = tmp_path / "copy"
    shutil.copytree(trained.model_dir, target)
    return target


def test_train_exits_zero_and_writes_run_files(trained):
    """last.ckpt, config.json (strict JSON, the whole resolved config), progress.csv, learning_curve.png and
    TensorBoard events exist."""
    d = trained.model_dir
    assert "stopped: reached --max-steps 1500" in trained.proc.stdout
    assert (d / "last.ckpt.index").is_file()
    assert (d / "last.ckpt.data-00000-of-00001").stat().st_size > 0
    config = strict_json((d / "config.json").read_text())
    assert config["scenario"] == "basic.wad" and config["workers"] == 2 and config["envs_per_worker"] == 2
    assert config["max_steps"] == MAX_STEPS and config["model_dir"] == str(d)
    # resolved once from basic's preset and saved whole: nothing is looked up again by play.py or --resume
    assert config["env_kind"] == "doom" and config["scenario_path"].endswith("basic.cfg")
    assert config["actions"] == [["MOVE_LEFT"], ["MOVE_RIGHT"], ["ATTACK"]]
    assert (config["frame_skip"], config["reward_scale"], config["clip_rewards"]) == (4, 0.01, False)
    assert config["target_reward"] is None and config["lstm"] is True
    assert config == saved_run(d / "last.ckpt").config
    png = (d / "learning_curve.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    image = iio.imread(d / "learning_curve.png")
    assert image.ndim == 3 and image.shape[1] > image.shape[0] > 100


def test_progress_csv(trained):
    """Header, consecutive episode numbers, both workers, sane lengths and rewards, counters agree."""
    path = trained.model_dir / "progress.csv"
    assert path.read_text().splitlines()[0] == CSV_HEADER
    rows = read_rows(path)
    assert len(rows) >= 4
    assert [r["episode"] for r in rows] == list(range(1, len(rows) + 1))
    assert {r["worker"] for r in rows} == {0.0, 1.0}
    steps = [r["env_steps"] for r in rows]
    assert steps == sorted(steps) and 0 < steps[-1] <= 1.5 * MAX_STEPS
    walls = [r["wall_s"] for r in rows]
    assert walls == sorted(walls)
    for r in rows:
        assert 1 <= r["length"] <= 76  # basic: 300 tics at 4 tics per step
        assert -1000 < r["reward"] <= 101
    saved = saved_run(trained.model_dir / "last.ckpt")
    assert saved.num_actions == 3
    assert saved.counters["episodes"] == len(rows)
    assert MAX_STEPS <= saved.counters["env_steps"] <= 1.5 * MAX_STEPS


def test_tensorboard_events(trained):
    """An events file with per-episode and loss scalars."""
    import tensorflow as tf

    files = glob.glob(str(trained.model_dir / "tensorboard" / "events.out.tfevents.*"))
    assert files
    tags = set()
    for path in files:
        for event in tf.compat.v1.train.summary_iterator(path):
            tags.update(value.tag for value in event.summary.value)
    assert {"Perf/Reward", "Perf/Length", "Perf/Steps per second", "Losses/Value Loss"} <= tags
    # The evaluation at the run's end (evaluation during training is on by default)
    assert {"Eval/Mean Reward", "Eval/Std Reward", "Eval/Min Reward", "Eval/Max Reward", "Eval/Best Mean Reward"} <= tags


def test_training_gifs_are_full_resolution_rgb(trained):
    """GIFs of worker 0's episodes show the 160x120 colour screen (doubled), not the 84x84 network input."""
    gifs = sorted(trained.frames_dir.glob("episode_*.gif"))
    assert gifs
    rows = {int(r["episode"]): r for r in read_rows(trained.model_dir / "progress.csv")}
    for gif in gifs:
        frames = iio.imread(gif, index=None)
        assert frames.ndim == 4 and frames.shape[1:] == (240, 320, 3), frames.shape
        assert frames.dtype == np.uint8
        assert np.any(frames[..., 0] != frames[..., 2])  # colour, not grey
        row = rows[int(gif.stem.split("_")[1])]
        assert row["worker"] == 0
        # A frame per agent step by default (--video-tics: per game tic); GIF writers may merge identical frames.
        assert 1 <= len(frames) <= row["length"]
    assert not list(trained.frames_dir.glob("*.tmp-*"))


def test_play_writes_gifs_and_results(trained, played):
    """play.py: exit 0, 2 GIFs and results.json with per-episode values, mean and std."""
    assert played.proc.returncode == 0, played.proc.stderr[-3000:]
    results = json.loads((played.out / "results.json").read_text())
    episodes = results["episodes"]
    assert len(episodes) == 2
    rewards = [e["reward"] for e in episodes]
    assert results["mean_reward"] == pytest.approx(np.mean(rewards))
    assert results["std_reward"] == pytest.approx(np.std(rewards))
    assert results["mean_length"] == pytest.approx(np.mean([e["length"] for e in episodes]))
    assert results["scenario"] == "basic.wad"
    assert results["trained_env_steps"] == saved_run(trained.model_dir / "last.ckpt").counters["env_steps"]
    assert sorted(p.name for p in played.out.glob("*.gif")) == ["episode_001.gif", "episode_002.gif"]
    for e in episodes:
        assert 1 <= e["length"] <= 76 and -1000 < e["reward"] <= 101
        frames = iio.imread(e["gif"], index=None)
        assert frames.shape[1:] == (240, 320, 3)  # 160x120 doubled
        # A frame per game tic (basic: 4 per step, the last step's only up to its end); GIF writers may merge
        # identical frames.
        assert 4 * (e["length"] - 1) < e["frames"] <= 4 * e["length"] and 1 <= len(frames) <= e["frames"]
    assert "mean reward" in played.proc.stdout


def test_resume_continues_counters(trained, run_copy, tmp_path):
    """--resume --max-steps (600 past the saved steps) keeps the old CSV rows and continues episodes, steps and
    wall time."""
    before_rows = read_rows(run_copy / "progress.csv")
    before = saved_run(run_copy / "last.ckpt").counters
    # 600 steps: at least 150 for each game of the faster worker (2 x 2 games), one whole basic episode (at most
    # 76 steps) each at least.
    resumed_max_steps = int(before["env_steps"]) + RESUMED_EXTRA_STEPS
    # --no-evaluate: the shared run's evaluation is checked in test_tensorboard_events; here, counters and rows.
    proc = run("train.py", "--resume", "--model-dir", run_copy, "--frames-dir", tmp_path / "frames",
               "--max-steps", resumed_max_steps, "--no-evaluate")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = read_rows(run_copy / "progress.csv")
    assert rows[: len(before_rows)] == before_rows
    new = rows[len(before_rows):]
    assert new, "no episodes after resuming"
    assert [r["episode"] for r in rows] == list(range(1, len(rows) + 1))
    assert new[0]["env_steps"] >= before["env_steps"]
    assert all(a["env_steps"] <= b["env_steps"] for a, b in zip(rows, rows[1:]))
    assert new[0]["wall_s"] >= before["wall_seconds"]
    saved = saved_run(run_copy / "last.ckpt")
    config, after = saved.config, saved.counters
    assert after["env_steps"] >= resumed_max_steps
    assert after["episodes"] == len(rows)
    assert after["updates"] > before["updates"]
    assert after["wall_seconds"] > before["wall_seconds"]
    # the saved settings were kept, the explicit ones applied
    assert config["workers"] == 2 and config["envs_per_worker"] == 2 and config["scenario"] == "basic.wad"
    assert config["max_steps"] == resumed_max_steps and config["resume"] is True
    assert saved.num_actions == 3 and config["actions"] == [["MOVE_LEFT"], ["MOVE_RIGHT"], ["ATTACK"]]
    assert "saved by an older doom_a3c" not in proc.stderr  # a config saved whole needs nothing from the preset


# ---- bad inputs ----------------------------------------------------------------------------------
def test_unknown_scenario(trained, run_copy, tmp_path):
    """A typo in --scenario: one-line error listing valid names, and the existing run is left alone."""
    frames = tmp_path / "frames"
    frames.mkdir()
    before = snapshot(run_copy, frames)
    proc = run("train.py", "--scenario", "nosuchmap", "--model-dir", run_copy, "--frames-dir", frames,
               "--max-steps", 10)
    assert_one_line_error(proc, "nosuchmap", "basic", "defend_the_center")
    assert snapshot(run_copy, frames) == before


@pytest.mark.parametrize("flag,value", [("--workers", "-1"), ("--rollout", "0"), ("--learning-rate", "-1")])
def test_bad_numeric_flags(trained, run_copy, tmp_path, flag, value):
    """Invalid numbers: one-line error naming the flag, nothing written."""
    frames = tmp_path / "frames"
    frames.mkdir()
    before = snapshot(run_copy, frames)
    proc = run("train.py", flag, value, "--model-dir", run_copy, "--frames-dir", frames, "--max-steps", 10)
    assert_one_line_error(proc, flag)
    assert snapshot(run_copy, frames) == before


@pytest.mark.parametrize("args,needle", [((), "--out is required"), (("--out", "OUT", "--episodes", 0), "--episodes")])
def test_play_bad_flags(tmp_path, args, needle):
    """play.py without --out (and no --export), or with --episodes 0: one-line error, nothing written."""
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    proc = run("play.py", "--model", tmp_path / "nothing" / "last.ckpt", *args)
    assert_one_line_error(proc, needle)
    assert os.listdir(tmp_path) == []


def test_bad_input_is_reported_before_tensorflow_is_imported(tmp_path):
    """A bad flag, an unknown scenario and a play.py flag error never import TensorFlow (seconds of the user's time)."""
    script = f"""
import sys
from doom_a3c.cli import play_main, train_main
assert train_main(["--workers", "-1"]) == 2
assert train_main(["--scenario", "nosuchmap", "--model-dir", {str(tmp_path / "m")!r}]) == 2
try:
    play_main(["--model", "x"])
except SystemExit as stop:
    assert stop.code == 2
print("tensorflow imported:", "tensorflow" in sys.modules)
"""
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "tensorflow imported: False"
    assert len(proc.stderr.strip().splitlines()) == 3  # the three one-line errors


def test_play_missing_checkpoint(tmp_path, capsys):
    """play.py with no checkpoint at --model: one-line error, --out untouched."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text("{\"old\": true}\n")
    before = snapshot(out)
    proc = run_in_process("play.py", capsys, "--model", tmp_path / "nothing" / "last.ckpt", "--out", out)
    assert_one_line_error(proc, "no checkpoint", str(tmp_path / "nothing" / "last.ckpt"))
    assert snapshot(out) == before


def _truncate_last(folder):
    data = folder / "last.ckpt.data-00000-of-00001"
    content = data.read_bytes()
    data.write_bytes(content[: len(content) // 2])


def test_play_truncated_checkpoint(trained, run_copy, tmp_path):
    """A last.ckpt whose data file was cut in half: one-line error from play.py, its whole stderr in a
    subprocess (TensorFlow's own logging included)."""
    _truncate_last(run_copy)
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text("{\"old\": true}\n")
    before = snapshot(run_copy, out)
    proc = run("play.py", "--model", run_copy / "last.ckpt", "--out", out, "--episodes", 1)
    assert_one_line_error(proc, "last.ckpt")
    assert snapshot(run_copy, out) == before


def test_resume_truncated_checkpoint(trained, run_copy, tmp_path):
    """--resume when every checkpoint's data is cut in half: one-line error, the run folder untouched; train.py's
    whole stderr in a subprocess (TensorFlow's own logging included)."""
    for data in run_copy.glob("*.data-*"):
        content = data.read_bytes()
        data.write_bytes(content[: len(content) // 2])
    frames = tmp_path / "frames"
    frames.mkdir()
    before = snapshot(run_copy, frames)
    proc = run("train.py", "--resume", "--model-dir", run_copy, "--frames-dir", frames, "--max-steps", 3000)
    assert_one_line_error(proc, "ckpt")
    assert snapshot(run_copy, frames) == before


def test_play_out_not_writable(trained, tmp_path, capsys):
    """--out below a regular file: one-line error naming --out."""
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    before = snapshot(trained.model_dir, tmp_path)
    proc = run_in_process("play.py", capsys, "--model", trained.model_dir / "last.ckpt", "--out", blocker / "sub",
                          "--episodes", 1)
    assert_one_line_error(proc, "--out", str(blocker / "sub"))
    assert snapshot(trained.model_dir, tmp_path) == before


def test_resume_with_another_scenario(trained, run_copy, tmp_path, capsys):
    """--resume of a basic run with --scenario defend_the_center is refused."""
    frames = tmp_path / "frames"
    frames.mkdir()
    before = snapshot(run_copy, frames)
    proc = run_in_process("train.py", capsys, "--resume", "--model-dir", run_copy, "--frames-dir", frames,
                          "--scenario", "defend_the_center", "--max-steps", 3000)
    assert_one_line_error(proc, "basic.wad", "defend_the_center")
    assert snapshot(run_copy, frames) == before


def test_resume_without_checkpoint(tmp_path, capsys):
    """--resume in a folder with no run: one-line error."""
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = run_in_process("train.py", capsys, "--resume", "--model-dir", empty, "--frames-dir", tmp_path / "frames")
    assert_one_line_error(proc, "no checkpoint")
    assert os.listdir(empty) == []


def two_user_maps(tmp_path):
    """maps_a/mylevel.cfg (basic's 3 buttons) and maps_b/mylevel.cfg (4 buttons): two scenarios of one name."""
    from doom_a3c.envs.doom.scenario_files import shipped_scenarios_dir

    cfg_text = open(os.path.join(shipped_scenarios_dir(), "basic.cfg")).read()
    assert "        ATTACK\n" in cfg_text
    for folder, text in (("maps_a", cfg_text), ("maps_b", cfg_text.replace("        ATTACK\n",
                                                                             "        ATTACK\n        MOVE_FORWARD\n"))):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "mylevel.cfg").write_text(text)
        shutil.copy(os.path.join(shipped_scenarios_dir(), "basic.wad"), tmp_path / folder / "basic.wad")
    return tmp_path / "maps_a" / "mylevel.cfg", tmp_path / "maps_b" / "mylevel.cfg"


def write_checkpoint(scenario, model_dir, frames, num_actions=None):
    """A run's checkpoint written in-process with the package's own parts (saves a training run): the config
    resolved as train.py resolves it, and `num_actions` (default: the config's) as its action count."""
    import keras
    import tensorflow as tf

    from doom_a3c.algo.model.actor_critic import build_actor_critic
    from doom_a3c.run.resolve import resolve_new_run
    from doom_a3c.runtime.checkpoint import Checkpointer, RunCounters

    # One action per button, flat: the action counts the tests below name.
    config = resolve_new_run({"scenario": str(scenario), "lstm_size": 16, "hidden_size": 16, "workers": 1,
                              "action_set": "buttons", "policy_heads": "flat",
                              "model_dir": str(model_dir), "frames_dir": str(frames)})
    num_actions = num_actions or len(config.actions)
    net = build_actor_critic(config, num_actions, (config.frame_size, config.frame_size, 1), name="global")
    optimizer = keras.optimizers.Adam(1e-4)
    optimizer.build(net.trainable_variables)
    counters = RunCounters(config, num_actions)
    counters.env_steps.assign(100)
    Checkpointer(str(model_dir), tf.train.Checkpoint(model=net, optimizer=optimizer, run=counters), counters).save()
    (model_dir / "progress.csv").write_text(CSV_HEADER + "\n1.5,100,1,0,-300,75\n")
    return config


def test_resume_naming_another_cfg_of_the_same_name(tmp_path, monkeypatch, capsys):
    """A run on the user's maps_a/mylevel.cfg (3 buttons) resumed with --scenario maps_b/mylevel.cfg (4 buttons)
    is refused, naming both files: the same name is not the same scenario (the run must not go on silently with
    the saved maps_a, nor with maps_b)."""
    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini into the working directory
    maps_a, maps_b = two_user_maps(tmp_path)
    model_dir, frames = tmp_path / "model", tmp_path / "frames"
    frames.mkdir()
    assert write_checkpoint(maps_a, model_dir, frames).actions == [["MOVE_LEFT"], ["MOVE_RIGHT"], ["ATTACK"]]
    before = snapshot(model_dir, frames)
    proc = run_in_process("train.py", capsys, "--resume", "--model-dir", model_dir, "--scenario", maps_b,
                          "--max-steps", 200)
    assert_one_line_error(proc, str(maps_a), str(maps_b))
    assert snapshot(model_dir, frames) == before


def test_resume_with_another_action_count(tmp_path, monkeypatch, capsys):
    """A checkpoint whose network has 4 actions but whose config lists 3: one-line error, the folder untouched."""
    monkeypatch.chdir(tmp_path)
    maps_a, _ = two_user_maps(tmp_path)
    model_dir, frames = tmp_path / "model", tmp_path / "frames"
    frames.mkdir()
    write_checkpoint(maps_a, model_dir, frames, num_actions=4)
    before = snapshot(model_dir, frames)
    proc = run_in_process("train.py", capsys, "--resume", "--model-dir", model_dir, "--max-steps", 200)
    assert_one_line_error(proc, "has 4 actions", "lists 3")
    assert snapshot(model_dir, frames) == before


def start_training(model_dir, frames_dir, *extra):
    env = dict(os.environ)
    return subprocess.Popen([sys.executable, os.path.join(REPO_ROOT, "train.py"), "--scenario", "basic.wad",
                             "--model-dir", str(model_dir), "--frames-dir", str(frames_dir), "--max-minutes", "5",
                             "--gif-every", "0", "--log-every-seconds", "1", "--no-evaluate", *map(str, extra)],
                            cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def has_episodes(model_dir, count: int) -> bool:
    progress = model_dir / "progress.csv"
    return progress.exists() and len(read_rows(progress)) >= count


def stop_with_sigterm(proc):
    """SIGTERM as a scheduler sends it; the trainer's (stdout, stderr) once it has exited."""
    proc.send_signal(signal.SIGTERM)
    return proc.communicate(timeout=120)


def test_sigterm_stops_cleanly_with_a_final_checkpoint(tmp_path):
    model_dir = tmp_path / "run"
    proc = start_training(model_dir, tmp_path / "frames", "--save-every-minutes", "60", "--save-every-episodes", "0")
    try:
        assert wait_for(lambda: has_episodes(model_dir, 5), seconds=180), "training never produced episodes"
        stdout, stderr = stop_with_sigterm(proc)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr[-2000:]
    assert "SIGTERM" in stdout
    counters = saved_run(model_dir / "last.ckpt").counters
    assert counters["episodes"] >= 5  # saved at the stop, not earlier (periodic saves were off)


def _children(pid):
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as handle:
                if int(handle.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_games_in_child_processes_learn_save_and_stop_with_the_trainer(tmp_path):
    """--env-processes 2: the games run in forked children; SIGTERM to the trainer still saves, and the children
    (and the ViZDoom engines under them) end with it."""
    model_dir = tmp_path / "run"
    proc = start_training(model_dir, tmp_path / "frames", "--env-processes", "2", "--workers", "2",
                          "--envs-per-worker", "4")
    try:
        assert wait_for(lambda: has_episodes(model_dir, 5), seconds=180), "training never produced episodes"
        game_processes = [p for p in _children(proc.pid) if "train.py" in open(f"/proc/{p}/cmdline").read()]
        engines = [e for p in game_processes for e in _children(p)]
        assert len(game_processes) == 4 and len(engines) == 8  # 2 workers x 2 processes, each with 2 engines
        stdout, stderr = stop_with_sigterm(proc)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr[-2000:]
    assert "SIGTERM" in stdout
    assert json.loads((model_dir / "config.json").read_text())["env_processes"] == 2
    counters = saved_run(model_dir / "last.ckpt").counters
    assert counters["episodes"] >= 5
    assert wait_for(lambda: not any(os.path.exists(f"/proc/{p}") for p in game_processes + engines), seconds=10)


def test_kill_9_then_resume(tmp_path):
    model_dir = tmp_path / "run"
    log = open(tmp_path / "train.log", "w")
    # Output to a file, not a pipe, and a session of its own: should anything outlive the SIGKILLed trainer
    # (its engines end with it, test_faults.py), it could hold a pipe open, and the test cleans it up.
    proc = subprocess.Popen([sys.executable, os.path.join(REPO_ROOT, "train.py"), "--scenario", "basic.wad",
                             "--model-dir", str(model_dir), "--frames-dir", str(tmp_path / "frames"),
                             "--max-minutes", "5", "--gif-every", "0", "--save-every-minutes", "0.02",
                             "--no-evaluate"],
                            cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        assert wait_for(lambda: len(list(model_dir.glob("ckpt-*.index"))) >= 2, seconds=180), \
            "no periodic checkpoint appeared"
        proc.kill()  # SIGKILL: no handler runs, whatever was being written is cut short
        proc.wait(timeout=60)
    finally:
        proc.kill()
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the orphaned engine processes
        except ProcessLookupError:
            pass
        log.close()
    from doom_a3c.runtime.checkpoint import resolve_prefix

    before = saved_run(resolve_prefix(str(model_dir))).counters
    resumed = run("train.py", "--resume", "--model-dir", model_dir, "--max-steps", int(before["env_steps"]) + 600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    after = saved_run(model_dir / "last.ckpt").counters
    assert after["env_steps"] >= before["env_steps"] + 600
    assert after["episodes"] > before["episodes"]
    rows = read_rows(model_dir / "progress.csv")
    assert [r["episode"] for r in rows] == list(range(1, len(rows) + 1))  # no gap, no duplicate after the crash
