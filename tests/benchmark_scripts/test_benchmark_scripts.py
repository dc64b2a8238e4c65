"""The benchmark scripts' own logic: reading a run's progress.csv, and the peer's environment."""
import csv
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from support import REPO_ROOT, running

ROOT = REPO_ROOT


def load_script(name: str):
    """A script of benchmarks/ by its path below that folder ("learn_basic", "tools/engine_speed")."""
    path = os.path.join(ROOT, "benchmarks", f"{name}.py")
    spec = importlib.util.spec_from_file_location(os.path.basename(name), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_progress(path: str, rewards: list[float], seconds_per_episode: float, steps_per_episode: int) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["wall_s", "env_steps", "episode", "worker", "reward", "length"])
        for i, reward in enumerate(rewards, start=1):
            writer.writerow([i * seconds_per_episode, i * steps_per_episode, i, 0, reward, steps_per_episode])


@pytest.mark.slow
def test_run_once_reads_when_mean_100_first_reached_the_threshold(tmp_path, capsys):
    learn_basic = load_script("learn_basic")
    # 100 episodes at 0, then 100 at 100: the mean of the last 100 first reaches 80 at episode 180
    # (20 zeros and 80 hundreds), which ended at 180 x 0.5 s = 90 s and 180 x 10 = 1,800 steps.
    rewards = [0.0] * 100 + [100.0] * 100
    source = tmp_path / "source.csv"
    write_progress(str(source), rewards, seconds_per_episode=0.5, steps_per_episode=10)
    run_dir = tmp_path / "run"
    command = [sys.executable, "-c", f"import os, shutil; os.makedirs({str(run_dir)!r}); "
                                     f"shutil.copy({str(source)!r}, {str(run_dir / 'progress.csv')!r})"]
    result = learn_basic.run_once("seed 0", command, str(run_dir), threshold=80.0)
    assert result.reached == (90.0, 1800.0)
    assert result.final == pytest.approx(100.0)
    assert result.rate == pytest.approx(2000 / 100.0)  # 2,000 steps in 100 s
    assert "at 90 s (1,800 env steps)" in capsys.readouterr().out


def test_summarize_counts_a_seed_that_never_got_there_as_infinite(capsys):
    learn_basic = load_script("learn_basic")
    Result = learn_basic.Result
    results = [Result((60.0, 70e3), 81.0, 1200.0), Result(None, 40.0, 1000.0), Result((80.0, 90e3), 80.5, 1400.0)]
    median_time, median_rate = learn_basic.summarize("ours", results, 80.0, 3.0)
    assert median_time == 80.0  # sorted 60, 80, inf
    assert median_rate == 1200.0
    assert "2/3 seeds reached" in capsys.readouterr().out
    two_failed = [Result((60.0, 70e3), 81.0, 1200.0), Result(None, 40.0, 1000.0), Result(None, 30.0, 900.0)]
    assert learn_basic.summarize("ours", two_failed, 80.0, 3.0)[0] == float("inf")


def test_peer_environment_is_basic_in_60x80_grey_with_the_games_own_score():
    pytest.importorskip("vizdoom")
    peer = load_script("peer_sb3")
    env = peer.make_env_factory("VizdoomBasic-v1", seed=0)(0)()
    try:
        observation, _ = env.reset(seed=0)
        assert observation.shape == (60, 80, 1) and observation.dtype == np.uint8
        assert env.observation_space.shape == (60, 80, 1)
        scaled, info = 0.0, {}
        for _ in range(400):  # at most 300 tics / frame skip 4 = 75 steps per episode
            observation, reward, terminated, truncated, info = env.step(0)
            scaled += reward
            if terminated or truncated:
                break
        assert terminated or truncated
        # Learning sees the score x 0.01; the episode statistics keep the game's own score.
        assert info["episode"]["r"] == pytest.approx(scaled * 100, abs=1e-3)
        assert info["episode"]["r"] < -1  # -1 per tic until the episode times out or the monster dies
    finally:
        env.close()


def test_throughput_modes_name_their_trainer_whatever_the_preset_says():
    """Every mode names its trainer, so that a preset choosing one cannot change what a mode measures."""
    modes = load_script("throughput").MODES
    for name, flags in modes.items():
        if name.startswith("a3c"):
            assert flags[flags.index("--trainer") + 1] == "a3c", name
    assert modes["ga3c"][modes["ga3c"].index("--trainer") + 1] == "ga3c"


def test_atari_pace_steps_the_emulator_alone_and_counts_the_runs_games():
    """The emulator-only pace is agent steps (games x steps) a second of a real vector env; the run's games are
    workers x envs_per_worker of the resolved defaults and flags."""
    pace = load_script("atari_pace")
    assert pace.resolved_games("ALE/Breakout-v5", ["--workers", "3"]) == 3 * 12  # scenarios/atari.toml's 12
    assert pace.resolved_games("ALE/Pong-v5", ["--workers", "2", "--envs-per-worker", "5"]) == 10
    assert pace.emulator_pace("ALE/Pong-v5", games=2, threads=1, seconds=0.3) > 100


def test_network_speed_variants_are_flags_train_py_takes_and_each_asks_for_what_its_name_says():
    from doom_a3c.config import build_parser

    variants = load_script("tools/network_speed").VARIANTS
    for name, flags in variants.items():
        parsed = build_parser("t").parse_args(["--scenario", "basic.wad", *flags])
        assert parsed.precision == ("bfloat16" if "bfloat16" in name else "float32"), name
        assert getattr(parsed, "jit_compile", False) == ("jit" in name), name


def test_engine_speed_counts_steps_and_the_cpu_of_python_and_of_the_engines():
    pytest.importorskip("vizdoom")
    engine_speed = load_script("tools/engine_speed")
    from doom_a3c.run.resolve import resolve_new_run

    config = resolve_new_run({"scenario": "basic.wad"})  # what engine_speed.py's main() measures
    rate, python_us, engine_us = engine_speed.measure(config, games=2, seconds=0.5)
    assert rate > 50  # steps/s: any machine that runs the suite does far more
    assert python_us > 0 and engine_us > 0  # the engines are separate processes, found and timed


# Sample Factory's log, as its runner prints it (colour codes included): a frame report, then the mean score of
# its last 100 episodes in its x 0.01 units, every 5 s.
SF_LOG = """\x1b[36m[2026-11-23 08:01:29,114][25860] Fps is (10 sec: nan, 60 sec: nan, 300 sec: nan). Total num frames: 0. Throughput: 0: nan. Samples: 0. Policy #0 lag: (min: -1.0, avg: -1.0, max: -1.0)\x1b[0m
\x1b[36m[2026-11-23 08:01:29,115][25860] Avg episode reward: [(0, '-0.913')]\x1b[0m
\x1b[37m\x1b[1m[2026-11-23 08:01:31,000][25881] Updated weights for policy 0, policy_version 1 (0.0016)\x1b[0m
\x1b[36m[2026-11-23 08:01:34,114][25860] Fps is (10 sec: 819.2, 60 sec: 819.2, 300 sec: 819.2). Total num frames: 4096. Throughput: 0: 368.4. Samples: 1842. Policy #0 lag: (min: 0.0, avg: 0.0, max: 0.0)\x1b[0m
\x1b[36m[2026-11-23 08:01:34,115][25860] Avg episode reward: [(0, '0.500')]\x1b[0m
\x1b[36m[2026-11-23 08:01:39,114][25860] Fps is (10 sec: 819.1, 60 sec: 819.1, 300 sec: 819.1). Total num frames: 8192. Throughput: 0: 274.2. Samples: 2742. Policy #0 lag: (min: 0.0, avg: 0.0, max: 0.0)\x1b[0m
\x1b[36m[2026-11-23 08:01:39,115][25860] Avg episode reward: [(0, '0.812')]\x1b[0m
"""


def test_sample_factory_log_gives_seconds_env_steps_and_unscaled_mean_100():
    peer = load_script("peer_sample_factory")
    points = peer.parse_log(SF_LOG.splitlines())
    # The report at 0 frames is skipped (no episode yet); 4,096 frames at frame skip 4 are 1,024 env steps,
    # 5.001 s after the first frame report; 0.5 and 0.812 in its x 0.01 units are scores of 50 and 81.2.
    assert [(round(w, 3), s, round(m, 6)) for w, s, m in points] == [(5.001, 1024, 50.0), (10.001, 2048, 81.2)]
    result = peer.result_of(points, threshold=80.0)
    assert result.reached == pytest.approx((10.001, 2048))
    assert result.final == pytest.approx(81.2)
    assert result.rate == pytest.approx(2048 / 10.001)
    assert peer.result_of(points, threshold=90.0).reached is None


@pytest.mark.slow
def test_sample_factory_run_is_stopped_with_all_its_processes_once_the_threshold_is_reached(tmp_path, capsys):
    """A stand-in for Sample Factory's Python prints the log above, starts a child that ignores SIGTERM, then
    would run for a minute: the runner must stop it, child included, as soon as the mean reaches 80."""
    peer = load_script("peer_sample_factory")
    (tmp_path / "log.txt").write_text(SF_LOG)
    pid_file = tmp_path / "child.pid"
    fake = tmp_path / "fake_python"
    # The child ignores SIGTERM, as ViZDoom's engines and multiprocessing's resource tracker do.
    fake.write_text(f"#!/bin/sh\nsh -c \"trap '' TERM; exec sleep 60\" & echo $! > {pid_file}\n"
                    f"cat {tmp_path / 'log.txt'}\nsleep 60\n")
    fake.chmod(0o755)
    started = time.monotonic()
    result = peer.run_seed(str(fake), seed=3, minutes=1.0, threshold=80.0, out=str(tmp_path), workers=2, envs=4)
    assert time.monotonic() - started < 30
    assert result.reached == pytest.approx((10.001, 2048))
    child = int(pid_file.read_text())
    time.sleep(0.5)
    assert not running(child)  # the worker stand-in went with its parent's session
    rows = list(csv.reader(open(tmp_path / "seed3_mean100.csv")))
    assert rows[0] == ["wall_s", "env_steps", "mean100"] and len(rows) == 3
    assert "mean-100 >= 80 at 10 s (2,048 env steps)" in capsys.readouterr().out


# ---- benchmarks/trainer_child.py ---------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_benchmark_passes_the_signal_to_its_trainer_and_waits_for_it_to_save(tmp_path, stop):
    """A stand-in trainer takes 1 s to "save" on SIGTERM or SIGINT. Stopping the benchmark must let it finish
    before the benchmark exits with 128 + the signal, and must not start anything after it.
    With `subprocess.run`, SIGTERM would have left the trainer running, and SIGINT would have SIGKILLed it
    after 0.25 s, so the file below would never be written."""
    trainer = tmp_path / "trainer.py"
    trainer.write_text(
        "import os, signal, sys, time\n"
        "def save(signum, frame):\n"
        "    time.sleep(1.0)\n"
        f"    open({str(tmp_path / 'saved')!r}, 'w').write(signal.Signals(signum).name)\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, save)\n"
        "signal.signal(signal.SIGINT, save)\n"
        f"open({str(tmp_path / 'ready')!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(60)\n")
    benchmark = (f"import sys; sys.path.insert(0, {ROOT!r}); from benchmarks.trainer_child import run_trainer; "
                 f"run_trainer([sys.executable, {str(trainer)!r}]); print('started the next run')")
    proc = subprocess.Popen([sys.executable, "-c", benchmark], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "ready").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        trainer_pid = int((tmp_path / "ready").read_text())
        proc.send_signal(stop)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 128 + stop
    assert (tmp_path / "saved").read_text() == stop.name
    assert stderr.strip() == f"stopped by {stop.name}: train.py exited with 0"
    assert "started the next run" not in stdout
    assert not running(trainer_pid)


@pytest.mark.slow
def test_a_failed_trainer_still_fails_the_benchmark():
    trainer_child = load_script("trainer_child")
    assert trainer_child.run_trainer([sys.executable, "-c", "raise SystemExit(3)"]) == 3
    with pytest.raises(subprocess.CalledProcessError):
        trainer_child.run_trainer_checked([sys.executable, "-c", "raise SystemExit(3)"])


# ---- benchmarks/learn_scenarios.py --------------------------------------------------------------------------------
def progress_rows(rewards, seconds_per_episode=6.0, steps_per_episode=10):
    return [{"wall_s": i * seconds_per_episode, "env_steps": i * steps_per_episode, "episode": i, "worker": 0,
             "reward": r, "length": steps_per_episode} for i, r in enumerate(rewards, start=1)]


def test_scenario_run_summary_by_hand():
    """150 episodes: 100 scoring 0, then 50 scoring 10. Mean-100 after episode 100+k is 10k/100, so the last is
    5.0 and the best too; it first reaches 2.0 at episode 120 (6 s each: 12 minutes); 1,500 steps in 900 s."""
    script = load_script("learn_scenarios")
    run = script.summarize_run("x", 3, progress_rows([0.0] * 100 + [10.0] * 50), target=2.0, random_policy=-1.0)
    assert run.env_steps == 1500 and run.final_mean100 == pytest.approx(5.0) and run.best_mean100 == pytest.approx(5.0)
    assert run.minutes_to_target == pytest.approx(12.0)
    assert run.steps_per_s == pytest.approx(1500 / 900)
    never = script.summarize_run("x", 3, progress_rows([0.0] * 120), target=2.0, random_policy=0.0)
    assert never.minutes_to_target is None and never.final_mean100 == 0.0
    # Before 100 episodes the mean is over the episodes so far, and a target is not counted as reached.
    early = script.summarize_run("x", 0, progress_rows([4.0, 6.0]), target=1.0, random_policy=0.0)
    assert early.final_mean100 == pytest.approx(5.0) and early.minutes_to_target is None


def test_scenario_results_table_and_curves(tmp_path):
    script = load_script("learn_scenarios")
    runs = [script.summarize_run("a", 0, progress_rows([1.0] * 120), target=None, random_policy=0.5),
            script.summarize_run("b", 1, progress_rows([0.0] * 100 + [10.0] * 50), target=2.0, random_policy=-1.0)]
    script.write_table(runs, str(tmp_path), minutes=15)
    rows = list(csv.DictReader(open(tmp_path / "results.csv")))
    assert [r["scenario"] for r in rows] == ["a", "b"] and rows[1]["minutes_to_target"] == "12.00"
    assert rows[0]["target"] == "" and rows[1]["random_policy"] == "-1.000"
    table = (tmp_path / "results.md").read_text()
    assert "| a | 0 | 1,200 | 1.00 | 1.00 | 0.50 |  | no target |" in table  # scores below 10: two decimals
    assert "| b | 1 | 1,500 | 5.00 | 5.00 | -1.00 | 2.00 | 12.0 |" in table
    big = script.summarize_run("c", 0, progress_rows([0.975] * 100 + [25.0] * 100), target=15.0, random_policy=0.0)
    script.write_table([big], str(tmp_path), minutes=15)
    assert "| c | 0 | 2,000 | 25.0 | 25.0 | 0.0 | 15.0 |" in (tmp_path / "results.md").read_text()
    script.plot_curves(runs, str(tmp_path / "curves.png"))
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"


def test_scenario_suites_run_apart_combine_into_one_table(tmp_path):
    """--combine re-reads each suite's results.csv and run folders: seed 1 of one suite beside seed 0 of another."""
    script = load_script("learn_scenarios")
    for folder, seed, rewards in (("first", 1, [0.0] * 100 + [10.0] * 50), ("second", 0, [1.0] * 120)):
        suite = tmp_path / folder
        (suite / f"b-seed{seed}").mkdir(parents=True)
        write_progress(str(suite / f"b-seed{seed}" / "progress.csv"), rewards, 6.0, 10)
        run = script.summarize_run("b", seed, progress_rows(rewards), target=2.0, random_policy=-1.0)
        script.write_table([run], str(suite), minutes=15)
    runs = script.combined_runs([str(tmp_path / "first"), str(tmp_path / "second")])
    assert [(r.scenario, r.seed) for r in runs] == [("b", 0), ("b", 1)]  # sorted by scenario, then seed
    assert runs[1].final_mean100 == pytest.approx(5.0) and runs[1].minutes_to_target == pytest.approx(12.0)
    assert runs[0].minutes_to_target is None and runs[0].random_policy == -1.0 and runs[0].env_steps == 1200


def test_scenario_suite_of_a_users_own_map_without_preset_records_it_and_combines(tmp_path):
    """A --no-preset run of a user's maze.cfg: labelled by its file name, its own run folder, `preset` no and the
    path in the CSV, an empty random-policy column where none was measured; --combine reads it back."""
    script = load_script("learn_scenarios")
    cfg = tmp_path / "maps" / "maze.cfg"
    cfg.parent.mkdir()
    cfg.write_text("doom_scenario_path = maze.wad\n")
    assert script.scenario_label(str(cfg)) == "maze" and script.scenario_label("defend_the_center") == "defend_the_center"
    assert script.run_folder("maze", 2, preset=False) == "maze-no-preset-seed2"
    # A user's own map has no preset even without --no-preset: its runs are labelled and summarised as such.
    import vizdoom

    shutil.copy(os.path.join(vizdoom.scenarios_path, "basic.wad"), cfg.parent / "maze.wad")
    assert not script.has_preset(str(cfg), str(tmp_path / "cache")) and script.has_preset("defend_the_center")
    assert script.run_folder("basic.wad", 0, preset=True) == "basic.wad-seed0"  # as older suites named them
    assert script.parse_assignments(["maze=0.9", "arena=-1.5e1"], "--target") == {"maze": 0.9, "arena": -15.0}
    for bad in ("maze", "=3", "maze=high"):
        with pytest.raises(ValueError, match="NAME=NUMBER"):
            script.parse_assignments([bad], "--target")
    suite = tmp_path / "suite"
    (suite / "maze-no-preset-seed0").mkdir(parents=True)
    write_progress(str(suite / "maze-no-preset-seed0" / "progress.csv"), [0.0] * 100 + [10.0] * 50, 6.0, 10)
    run = script.summarize_run("maze", 0, progress_rows([0.0] * 100 + [10.0] * 50), target=None, random_policy=None,
                               preset=False, source=str(cfg))
    script.write_table([run], str(suite), minutes=15)
    row = next(csv.DictReader(open(suite / "results.csv")))
    assert (row["preset"], row["source"], row["random_policy"], row["target"]) == ("no", str(cfg), "", "")
    table = (suite / "results.md").read_text()
    assert "no preset: scenarios/defaults/doom.toml" in table and "| maze | 0 | 1,500 | 5.00 | 5.00 |  |  | no target | 2 | no |" in table
    combined = script.combined_runs([str(suite)])
    assert [(r.scenario, r.preset, r.source, r.random_policy) for r in combined] == [("maze", False, str(cfg), None)]
    assert combined[0].final_mean100 == pytest.approx(5.0)
    script.plot_curves(combined, str(tmp_path / "curves.png"))  # no random policy's line to draw


def test_a_results_csv_from_before_the_preset_column_combines_as_preset_runs(tmp_path):
    script = load_script("learn_scenarios")
    (tmp_path / "b-seed1").mkdir()
    write_progress(str(tmp_path / "b-seed1" / "progress.csv"), [1.0] * 120, 6.0, 10)
    (tmp_path / "results.csv").write_text("scenario,seed,env_steps,final_mean100,best_mean100,target,"
                                          "minutes_to_target,steps_per_s,random_policy\n"
                                          "b,1,1200,1.000,1.000,2.000,,2,-1.000\n")
    (run,) = script.combined_runs([str(tmp_path)])
    assert run.preset and run.source == "b" and run.random_policy == -1.0 and run.target == 2.0


def test_interquartile_mean_and_normalised_score_by_hand():
    script = load_script("learn_scenarios")
    # 8 scores: a quarter (2) cut from each end leaves 2, 3, 4, 5.
    assert script.interquartile_mean(np.arange(8.0)) == pytest.approx(3.5)
    assert script.interquartile_mean(np.array([7.0, 0, 100, 3, 4, 5, -50, 2])) == pytest.approx(3.5)  # order, outliers
    # my_way_home-like: random policy -0.1, target 0.9; a score of 0.5 is 60% of the way.
    assert script.normalized_score(0.5, -0.1, 0.9) == pytest.approx(0.6)
    assert script.normalized_score(-0.1, -0.1, 0.9) == 0.0 and script.normalized_score(0.9, -0.1, 0.9) == 1.0
    assert script.normalized_score(1_715.7, -41.4, 1_000.0) == pytest.approx((1_715.7 + 41.4) / 1_041.4)
    assert script.normalized_score(0.5, None, 0.9) is None and script.normalized_score(0.5, -0.1, None) is None
    assert script.normalized_score(0.5, 1.0, 1.0) is None


def test_bootstrap_interval_contains_the_mean_narrows_as_seeds_agree_and_keeps_each_scenarios_seeds():
    script = load_script("learn_scenarios")
    mean_of = lambda scores: scores.mean(axis=1)  # noqa: E731
    spread = np.array([10.0, 20.0, 30.0])
    low, high = script.stratified_bootstrap_ci([spread], mean_of, reps=2000, seed=0)
    assert low < 20.0 < high and 10.0 <= low and high <= 30.0
    close = np.array([19.0, 20.0, 21.0])
    close_low, close_high = script.stratified_bootstrap_ci([close], mean_of, reps=2000, seed=0)
    assert close_low < 20.0 < close_high
    assert close_high - close_low == pytest.approx((high - low) / 10)  # the same resamples, a tenth of the spread
    assert script.stratified_bootstrap_ci([np.full(3, 5.0)], mean_of) == (5.0, 5.0)  # seeds that agree: no width
    # Stratified: each scenario keeps its two runs in every resample, so the mean of [0, 0] and [10, 10] is always
    # 5 (an unstratified bootstrap of the four runs would give anything from 0 to 10).
    assert script.stratified_bootstrap_ci([np.zeros(2), np.full(2, 10.0)], mean_of) == (5.0, 5.0)


def test_summary_over_seeds_and_scenarios_by_hand(tmp_path):
    """Scenario a: 3 seeds at 0.5, 0.6, 0.7 (random 0, target 1: normalised the same). Scenario b: 3 seeds at
    20, 30, 40 (random 0, target 40: 0.5, 0.75, 1.0). The six normalised scores sorted: 0.5, 0.5, 0.6, 0.7,
    0.75, 1.0; int(0.25 x 6) = 1 cut from each end: IQM = mean(0.5, 0.6, 0.7, 0.75) = 0.6375. Scenario c has
    no target and 2 seeds: left out of the IQM, and flagged."""
    import json

    script = load_script("learn_scenarios")
    runs = [script.summarize_run("a", s, progress_rows([v] * 120), 1.0, 0.0) for s, v in enumerate([0.5, 0.6, 0.7])]
    runs += [script.summarize_run("b", s, progress_rows([v] * 120), 40.0, 0.0) for s, v in enumerate([20.0, 30.0, 40.0])]
    runs += [script.summarize_run("c", s, progress_rows([v] * 120), None, 1.0) for s, v in enumerate([3.0, 5.0])]
    summary = script.summarize_suite(runs)
    a, b, c = summary["scenarios"]
    assert a["mean"] == pytest.approx(0.6) and a["ci95"][0] < 0.6 < a["ci95"][1] and a["note"] == ""
    assert b["mean"] == pytest.approx(30.0) and b["normalized_mean"] == pytest.approx(0.75)
    assert c["normalized_mean"] is None and "2 seeds: fewer than 3" in c["note"]
    (aggregate,) = summary["aggregates"]
    assert aggregate["preset"] and aggregate["scenarios"] == ["a", "b"] and aggregate["left_out"] == ["c"]
    assert aggregate["iqm"] == pytest.approx(0.6375) and aggregate["runs"] == 6
    assert aggregate["ci95"][0] < 0.6375 < aggregate["ci95"][1]
    script.write_table(runs, str(tmp_path), minutes=30)
    saved = json.loads((tmp_path / "results_summary.json").read_text(),
                       parse_constant=lambda name: pytest.fail(f"not strict JSON: {name}"))
    assert saved["aggregates"][0]["iqm"] == pytest.approx(0.6375)
    table = (tmp_path / "results.md").read_text()
    assert "## Summary over seeds" in table and "**0.64**" in table and "Left out (no target or random policy's score): c" in table
    # Runs with and without presets are summarised apart.
    runs.append(script.summarize_run("a", 0, progress_rows([0.2] * 120), 1.0, 0.0, preset=False))
    summary = script.summarize_suite(runs)
    assert [(g["preset"], g["iqm"]) for g in summary["aggregates"]] == [(True, pytest.approx(0.6375)),
                                                                        (False, pytest.approx(0.2))]
    assert "fewer than 3 seeds in a" in summary["aggregates"][1]["note"]


# ---- benchmarks/tools/atari_time.py ----------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("flags", [[], ["--", "--no-ale-vector"]])
def test_atari_time_splits_pongs_agent_steps_into_their_parts_with_the_atari_defaults(tmp_path, monkeypatch, flags):
    """Two timed rollouts of the config train.py resolves for Pong (the Atari defaults: 12 games x 20 steps, frame
    skip 4): 480 agent steps, every part took time (preprocessing only off the vector env, which does it in C++
    within the emulator's part), the shares add up to 1, and the ceiling doubles on two cores, x4 in frames."""
    import json

    pytest.importorskip("ale_py")
    monkeypatch.setattr(sys, "argv", ["atari_time.py", "--game", "Pong", "--rollouts", "2", "--warmup-rollouts", "1",
                                      "--out", str(tmp_path), *flags])
    assert load_script("tools/atari_time").main() == 0
    report = json.loads((tmp_path / "atari_time.json").read_text())
    assert report["game"] == "ALE/Pong-v5" and report["train"] is None
    assert {k: report["config"][k] for k in ("envs_per_worker", "rollout", "frame_skip")} == \
        {"envs_per_worker": 12, "rollout": 20, "frame_skip": 4}
    assert report["agent_steps"] == 480
    parts = report["cpu_ms_per_agent_step"]
    assert list(parts) == ["emulator", "preprocessing", "forward pass", "learning", "other"]
    in_vector_env = not flags
    assert all(report["wall_ms_per_agent_step"][part] > 0 for part in parts if part != "preprocessing")
    assert (report["wall_ms_per_agent_step"]["preprocessing"] == 0) == in_vector_env
    assert parts["emulator"] > 0 and parts["forward pass"] > 0 and parts["learning"] > 0
    assert sum(report["shares"].values()) == pytest.approx(1.0)
    one, two = report["ceiling"]["1"], report["ceiling"]["2"]
    assert one["env_steps_per_s"] == pytest.approx(1000 / report["total_cpu_ms"])
    assert two["env_steps_per_s"] == pytest.approx(2 * one["env_steps_per_s"])
    assert two["frames_per_s"] == pytest.approx(4 * two["env_steps_per_s"])


def test_learner_time_times_each_part_of_a_no_preset_maps_cycle_and_adds_them_up(tmp_path, monkeypatch):
    """deadly_corridor run as a user's own map (--no-preset: combined actions with factorised heads, its game
    variables as records), 4 games x 5-step rollouts: every part took time, and the cycle is act x 6 + the rest,
    spread over 20 env steps. The learning rate is 0: timing never changes the weights it times."""
    import json

    monkeypatch.setattr(sys, "argv", ["learner_time.py", "--scenario", "deadly_corridor", "--calls", "5",
                                      "--out", str(tmp_path), "--", "--no-preset", "--envs-per-worker", "4",
                                      "--rollout", "5"])
    learner_time = load_script("tools/learner_time")
    assert learner_time.main() == 0
    report = json.loads((tmp_path / "learner_time.json").read_text())
    assert report["config"]["policy_heads"] == "factorised" and report["actions"] > 10
    parts = report["ms_per_call"]
    assert list(parts) == ["act", "gradient", "apply", "sync"]
    assert all(parts[p]["cpu_ms"] > 0 and parts[p]["wall_ms"] > 0 for p in parts)
    cycle = 6 * parts["act"]["cpu_ms"] + parts["gradient"]["cpu_ms"] + parts["apply"]["cpu_ms"] + parts["sync"]["cpu_ms"]
    assert report["cycle_cpu_ms"] == pytest.approx(cycle)
    assert report["cpu_us_per_env_step"] == pytest.approx(1000 * cycle / 20)


def test_learner_time_refuses_a_vector_env_with_one_line(capsys):
    with pytest.raises(SystemExit, match="not a ViZDoom or Atari scenario"):
        load_script("tools/learner_time").load_config(
            argparse_namespace(config=None, scenario="CartPole-v1"), [], "/tmp/unused_model_dir")


def argparse_namespace(**values):
    import argparse
    return argparse.Namespace(**values)


# ---- benchmarks/tools/shrink_gif.py ----------------------------------------------------------------------------------
def test_shrink_gif_keeps_every_nth_frame_of_the_first_seconds_at_game_speed(tmp_path, monkeypatch):
    """30 frames of 100 ms (3 s of play); keep 2 s, one frame in 2: 10 frames of 200 ms, the same pictures."""
    import imageio.v3 as iio

    frames = np.zeros((30, 12, 16, 3), np.uint8)
    for i in range(30):
        frames[i, :, :, 0] = 8 * i  # each frame its own shade of red
    source, target = tmp_path / "in.gif", tmp_path / "out.gif"
    iio.imwrite(source, frames, duration=100, loop=0)
    monkeypatch.setattr(sys, "argv", ["shrink_gif.py", str(source), str(target), "--every", "2", "--seconds", "2"])
    assert load_script("tools/shrink_gif").main() == 0
    kept = iio.imread(target, index=None)
    assert len(kept) == 10
    assert iio.immeta(target, index=0)["duration"] == 200
    np.testing.assert_allclose(kept[:, 0, 0, 0], 8 * np.arange(0, 20, 2), atol=4)  # palette rounding


@pytest.mark.slow
def test_soak_smoke_run_kills_and_stops_engines_kills_the_trainer_and_reports_the_costs(tmp_path):
    """benchmarks/soak.py for 66 s with a tiny run: engines killed and stopped (SIGSTOP) in turn, the trainer
    kill -9-ed at 35 s and resumed; every fault followed by a restart, no hang, nothing left running, no checkpoint
    lost, the CSV without gaps. A hang anywhere fails the test with the soak's output, never CI's time limit."""
    import json
    import subprocess

    out = tmp_path / "soak"
    try:
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "soak.py"), "--minutes", "1.1",
                               "--engine-fault-every", "12", "--kill-trainer-every", "35", "--game-timeout", "5",
                               "--out", str(out), "--", "--workers", "1", "--envs-per-worker", "2",
                               "--save-every-minutes", "0.2", "--gif-every", "0"],
                              capture_output=True, text=True, timeout=480)
    except subprocess.TimeoutExpired as error:
        events = (out / "events.log").read_text() if (out / "events.log").exists() else ""
        pytest.fail(f"the soak hung for {error.timeout} s; its events:\n{events}")
    events = (out / "events.log").read_text() if (out / "events.log").exists() else ""
    assert proc.returncode == 0, events + proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads((out / "soak.json").read_text())
    assert report["trainer_kills"] == 1 and report["engine_kills"] >= 1 and report["engine_stops"] >= 1, events
    # A fault whose restart had not shown when the trainer was kill -9-ed is undecided, not a failure; one trainer
    # kill leaves at most one. One warning line per fault, a game process replaced with all its games included.
    assert report["engine_faults_undecided"] <= report["trainer_kills"]
    faults = report["engine_kills"] + report["engine_stops"]
    assert report["game_restarts"] == faults - report["engine_faults_undecided"], events
    assert report["engine_faults_without_restart"] == 0 and report["hangs"] == 0, events
    assert report["final_stop_seconds"] < 15
    assert report["engines_left_after_kill_9"] == 0 and report["processes_left_at_end"] == 0
    assert report["checkpoints_lost"] == 0 and report["csv_gaps_or_duplicates"] == 0
    assert report["final_exit_code"] == 0 and report["episodes"] > 0 and report["peak_memory_mib"] > 0


def test_sample_factory_true_objective_from_its_tensorboard_in_game_units(tmp_path):
    """Its TensorBoard mean of true_objective at 8,000 frames: 2,000 env steps; x 100 for health_gathering's
    0.01 a tic alive."""
    peer = load_script("peer_sample_factory")
    start = time.time() - 1.0
    writer = tf.summary.create_file_writer(str(tmp_path / "seed0" / ".summary" / "0"))
    with writer.as_default():
        tf.summary.scalar(peer.TRUE_OBJECTIVE_TAG, 12.5, step=8000)
        tf.summary.scalar("reward/reward", 99.0, step=8000)  # shaped: not the score
    writer.close()
    points = peer.true_objective_points(peer.event_files(str(tmp_path)), start, 100.0)
    assert len(points) == 1
    wall, steps, mean = points[0]
    assert 1.0 <= wall < 30 and steps == 2000 and mean == pytest.approx(1250.0)


def test_a_peer_event_file_cut_mid_record_gives_the_points_before_the_cut(tmp_path):
    """Sample Factory stopped at its budget part-way through writing a record: the complete ones still count."""
    peer = load_script("peer_sample_factory")
    start = time.time() - 1.0
    writer = tf.summary.create_file_writer(str(tmp_path / "seed0" / ".summary" / "0"))
    with writer.as_default():
        tf.summary.scalar(peer.TRUE_OBJECTIVE_TAG, 4.0, step=4000)
        tf.summary.scalar(peer.TRUE_OBJECTIVE_TAG, 5.0, step=8000)
    writer.close()
    (path,) = peer.event_files(str(tmp_path))
    with open(path, "rb") as events:
        whole = events.read()
    with open(path, "wb") as events:
        events.write(whole[:-5])  # the last record loses its tail
    points = peer.true_objective_points([path], start, 1.0)
    assert [(steps, mean) for _, steps, mean in points] == [(1000, 4.0)]


def test_comparison_with_sample_factory_at_equal_wall_time(tmp_path):
    """Ours: 200 episodes, one every 6 s; the first 100 last 50 steps, the next 100 last 100 (frame skip 4: 200
    and 400 tics alive). At minute 5 (episode 50) our mean-100 is 200 tics, the peer's 250: ratio 0.8. At minute
    15 (episode 150) ours is (50 x 200 + 50 x 400) / 100 = 300 against 750: 0.4. Ours ends at minute 20."""
    peer = load_script("peer_sample_factory")
    run = tmp_path / "ours"
    run.mkdir()
    (run / "config.json").write_text('{"frame_skip": 4}')
    with open(run / "progress.csv", "w") as handle:
        handle.write("wall_s,env_steps,episode,worker,reward,length\n")
        for i in range(1, 201):
            length = 50 if i <= 100 else 100
            handle.write(f"{i * 6},{i * 100},{i},0,{length * 4 - 100},{length}\n")
    peer_points = [(60.0 * m, 1000.0 * m, 50.0 * m) for m in range(1, 21)]  # 50 tics more a minute
    rows = peer.compare(str(run), "doom_health_gathering", peer_points, str(tmp_path))
    assert [r[0] for r in rows] == [5, 10, 15, 20]  # both runs last 20 minutes
    assert rows[0][1:] == pytest.approx((200.0, 250.0, 0.8))
    assert rows[2][1:] == pytest.approx((300.0, 750.0, 0.4))
    assert (tmp_path / "comparison.png").stat().st_size > 1000


@pytest.mark.parametrize("scenario, title", [
    ("/home/me/maps/battle2_continuous_turning.cfg", "battle2_continuous_turning"),  # the same .cfg
    ("/home/me/maps/battle2.cfg", "battle2 (doom_a3c) beside battle2_continuous_turning (Sample Factory)"),
])
def test_the_comparison_chart_names_each_sides_map_when_they_differ(tmp_path, scenario, title):
    peer = load_script("peer_sample_factory")
    (tmp_path / "config.json").write_text(json.dumps({"frame_skip": 6, "scenario": scenario}))
    assert peer.chart_title(str(tmp_path), "doom_battle2") == title


@pytest.mark.parametrize("env, ours, peer_objective, unit", [
    ("doom_battle2", 5.0, 2.5, "kills"),  # +1 a monster killed, in both
    ("doom_two_colors_hard", 10.0, 4.0, "score"),  # 0.01 a tic alive, in both: 1,000 tics against 400
])
def test_sample_factory_maps_of_its_own_compare_in_the_games_own_score(tmp_path, capsys, env, ours, peer_objective,
                                                                         unit):
    """Sample Factory's battle2 and two_colors_hard: its true_objective is the game's own score as it is, and ours
    is progress.csv's reward, not tics alive (167 steps x frame skip 6 = 1,002 tics). Ours: 100 episodes, one every
    3 s, to minute 5; its one TensorBoard report at about 4.8 minutes. At minute 5 the ratio is ours / its."""
    peer = load_script("peer_sample_factory")
    assert (peer.PEER_ENVS[env].to_game_units, peer.PEER_ENVS[env].unit) == (1.0, unit)
    writer = tf.summary.create_file_writer(str(tmp_path / "sf" / "seed0" / ".summary" / "0"))
    with writer.as_default():
        tf.summary.scalar(peer.TRUE_OBJECTIVE_TAG, peer_objective, step=40000)
    writer.close()
    points = peer.true_objective_points(peer.event_files(str(tmp_path / "sf")), time.time() - 290,
                                        peer.PEER_ENVS[env].to_game_units)
    assert [(steps, mean) for _, steps, mean in points] == [(10000, pytest.approx(peer_objective))]
    run = tmp_path / "ours"
    run.mkdir()
    (run / "config.json").write_text('{"frame_skip": 6}')
    write_progress(str(run / "progress.csv"), [ours] * 100, seconds_per_episode=3.0, steps_per_episode=167)
    rows = peer.compare(str(run), env, points, str(tmp_path))
    assert rows == [(5, pytest.approx(ours), pytest.approx(peer_objective), pytest.approx(ours / peer_objective))]
    assert f"({unit}): ratio {ours / peer_objective:.2f}" in capsys.readouterr().out


# A deathmatch's first match ends minutes in: until then its log reports frames only.
SF_DEATHMATCH_LOG = "\n".join(line for line in SF_LOG.splitlines() if "Avg episode reward" not in line) + "\n"


def test_sample_factory_training_time_and_steps_come_from_its_frame_reports():
    """8,192 frames (2,048 env steps) 10.000 s after the first frame report, with or without reward reports."""
    peer = load_script("peer_sample_factory")
    assert peer.training_progress(SF_LOG.splitlines()) == (pytest.approx(10.0), 2048.0)
    assert peer.parse_log(SF_DEATHMATCH_LOG.splitlines()) == []
    assert peer.training_progress(SF_DEATHMATCH_LOG.splitlines()) == (pytest.approx(10.0), 2048.0)
    assert peer.training_progress(SF_LOG.splitlines()[2:3]) is None  # start-up: no frame report yet


@pytest.mark.slow
def test_sample_factory_run_without_an_ended_episode_stops_at_its_budget(tmp_path, capsys):
    """A deathmatch stand-in whose log has frames and no episode: the budget of 0.1 minutes (6 s) is over at its
    10 s frame report, so the runner stops it there instead of waiting out start-up's 2 minutes past the budget,
    and prints the speed from the frames: 2,048 env steps in 10 s."""
    peer = load_script("peer_sample_factory")
    (tmp_path / "log.txt").write_text(SF_DEATHMATCH_LOG)
    fake = tmp_path / "fake_python"
    fake.write_text(f"#!/bin/sh\ncat {tmp_path / 'log.txt'}\nsleep 60\n")
    fake.chmod(0o755)
    started = time.monotonic()
    result = peer.run_seed(str(fake), seed=3, minutes=0.1, threshold=80.0, out=str(tmp_path), workers=2, envs=4,
                           env="doom_deathmatch_bots")
    assert time.monotonic() - started < 30
    assert result.reached is None and np.isnan(result.final) and result.rate == pytest.approx(204.8)
    out = capsys.readouterr().out
    assert "--timelimit=4.0" in out  # its match length, which the conversion to frags a minute assumes
    assert "no mean-100 in its TensorBoard yet" in out and "2,048 env steps at 205 env steps/s" in out


def test_sample_factory_deathmatch_frags_a_match_become_frags_a_minute_beside_our_cig(tmp_path, capsys):
    """Its matches last 4 minutes: a mean of 6 frags a match at 84,000 frames is 1.5 frags a minute at 21,000 env
    steps. Ours (cig, 10-minute matches): 11 matches, one every 27 s, to 4.95 minutes; frags_per_minute 0.2 in the
    first 5, empty in the 6th (a row from before the column), 0.8 in the last 5: mean (5 x 0.2 + 5 x 0.8) / 10 =
    0.5 a minute, where the reward column (frags a match) would give (5 x 2 + 5 + 5 x 8) / 11 = 5. At minute 5 the
    ratio is 0.5 / 1.5."""
    peer = load_script("peer_sample_factory")
    env = "doom_deathmatch_bots"
    assert peer.sf_command("py", env, 0, "out", 2, 4)[-1] == "--timelimit=4.0"
    writer = tf.summary.create_file_writer(str(tmp_path / "sf" / "seed0" / ".summary" / "0"))
    with writer.as_default():
        tf.summary.scalar(peer.TRUE_OBJECTIVE_TAG, 6.0, step=84000)
    writer.close()
    points = peer.true_objective_points(peer.event_files(str(tmp_path / "sf")), time.time() - 290,
                                        peer.PEER_ENVS[env].to_game_units)
    assert [(steps, mean) for _, steps, mean in points] == [(21000, pytest.approx(1.5))]
    run = tmp_path / "ours"
    run.mkdir()
    (run / "config.json").write_text('{"frame_skip": 4, "scenario": "cig"}')
    with open(run / "progress.csv", "w") as handle:
        handle.write("wall_s,env_steps,episode,worker,reward,length,frags,deaths,frags_per_minute,place\n")
        for i in range(1, 12):
            per_minute = "0.2" if i <= 5 else "" if i == 6 else "0.8"
            frags = 2 if i <= 5 else 5 if i == 6 else 8
            handle.write(f"{i * 27},{i * 5250},{i},0,{frags},5250,{frags},9,{per_minute},4\n")
    rows = peer.compare(str(run), env, points, str(tmp_path))
    assert rows == [(5, pytest.approx(0.5), pytest.approx(1.5), pytest.approx(1 / 3))]
    assert "doom_a3c 0.50, Sample Factory 1.50 (frags per minute): ratio 0.33" in capsys.readouterr().out
    assert peer.chart_title(str(run), env) == "cig (doom_a3c) beside dwango5_dm_continuous_weap (Sample Factory)"


@pytest.mark.slow
def test_sample_factory_deathmatch_beside_a_run_without_matches_is_refused_before_it_starts(tmp_path):
    """--ours naming a basic run (no frags_per_minute column) beside doom_deathmatch_bots: one line and exit 2, before
    Sample Factory (here a Python that does not exist) is started."""
    write_progress(str(tmp_path / "progress.csv"), [1.0], seconds_per_episode=1.0, steps_per_episode=10)
    peer = load_script("peer_sample_factory")
    assert peer.lacks_match_column(str(tmp_path)) and not peer.lacks_match_column(str(tmp_path / "none"))
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "peer_sample_factory.py"), "--sf-python",
                           str(tmp_path / "no_python"), "--env", "doom_deathmatch_bots", "--ours", str(tmp_path),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "has no frags_per_minute column" in done.stderr.splitlines()[-1]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_env_libraries_counts_the_cpu_of_child_processes_per_step(tmp_path):
    """A 'step' that makes a child process burn about 0.3 s of CPU: the CPU per step must include it."""
    import subprocess

    script = load_script("tools/env_libraries")
    burner = [sys.executable, "-c", "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"
              "time.sleep(2.5)"]  # alive a while after burning, so its CPU is counted while it runs

    children = []

    def step() -> int:
        if not children:
            children.append(subprocess.Popen(burner))
        time.sleep(0.05)
        return 1

    # 2 s, not less: on a loaded machine (a CI run beside training runs) the child got too little CPU in 0.7 s.
    rate, cpu_ms = script.timed(step, lambda: None, seconds=2.0)
    children[0].wait()
    steps = rate * 2.0
    assert 5 < steps < 50
    assert cpu_ms * steps >= 250  # the child's 0.3 s, counted while it ran


def test_reference_a2c_returns_by_hand_and_its_recipe_is_the_trainers_atari_network():
    """benchmarks/tools/reference_a2c.py: its own discounted returns against hand numbers (a terminal cuts the bootstrap),
    the trainer's config it swaps in (RLlib's recipe), and its network's shapes."""
    reference = load_script("tools/reference_a2c")
    rewards = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], np.float32)
    dones = np.array([[0, 0], [1, 0], [0, 0]], np.float32)
    returns = reference.discounted_returns(rewards, dones, np.array([10.0, 2.0], np.float32), gamma=0.5)
    # game 0: the terminal at t=1 cuts t=0 off the rest: t2 = 1 + 0.5*10 = 6, t1 = 0, t0 = 1 + 0.5*0 = 1
    # game 1: t2 = 0 + 0.5*2 = 1, t1 = 1 + 0.5*1 = 1.5, t0 = 0 + 0.5*1.5 = 0.75
    np.testing.assert_allclose(returns, [[1.0, 0.75], [0.0, 1.5], [6.0, 1.0]])
    config = reference.recipe_config("ALE/Breakout-v5", 16, 0, "elu")
    assert (config.lstm, config.frame_stack, config.frame_norm, config.activation) == (False, 4, "scale", "elu")
    assert (config.envs_per_worker, config.learning_rate, config.gae_lambda) == (16, 7e-4, 1.0)
    logits, values = reference.reference_network(4, (84, 84, 4), "relu")(np.zeros((3, 84, 84, 4), np.uint8))
    assert logits.shape == (3, 4) and values.shape == (3,)
    ours = reference.ours_as_a_model(config, 4, (84, 84, 4))
    logits, values = ours(tf.zeros((3, 84, 84, 4), tf.uint8))
    assert logits.shape == (3, 4) and values.shape == (3,) and ours.net.conv1.activation.__name__ == "elu"


# ---- benchmarks/tools/deathmatch_random.py -------------------------------------------------------------------------
def test_deathmatch_random_sets_the_match_length_in_the_host_arguments():
    with_time_limit = load_script("tools/deathmatch_random").with_time_limit
    assert with_time_limit("-host 1 -deathmatch +timelimit 10.0 +sv_nocrouch 1", 0.5) == \
        "-host 1 -deathmatch +sv_nocrouch 1 +timelimit 0.5"
    assert with_time_limit("-host 1", 2) == "-host 1 +timelimit 2"


# ---- benchmarks/tools/eval_cost.py ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_eval_cost_plays_cigs_evaluation_matches_and_counts_every_games_steps(monkeypatch, capsys):
    """3 matches of 0.05 game minutes (105 tics, about 26 steps at 4 tics) on 3 games, one a game: every game's
    steps are counted."""
    monkeypatch.setattr(sys, "argv", ["eval_cost.py", "--scenario", "cig", "--minutes", "0.05", "--eval-episodes", "3"])
    assert load_script("tools/eval_cost").main() == 0
    out = capsys.readouterr().out
    assert "3 sampled episodes on 3 games" in out and "+timelimit 0.05" in out and "over 3 matches" in out
    counts = re.search(r"([\d,]+) batched steps, ([\d,]+) agent steps", out).groups()
    batched, agent = (int(count.replace(",", "")) for count in counts)
    assert 20 <= batched <= 30 and agent == 3 * batched



# ---- benchmarks/tools/torso_probe.py ---------------------------------------------------------------------------------
def test_torso_probe_spread_against_hand_numbers():
    """Unit 0 never fires; unit 1 is 1 and 3 (mean 2, std 1: spread 0.5); unit 2 is always 2 (spread 0): the median
    spread of the active units is 0.25 and their mean output 2."""
    spread = load_script("tools/torso_probe").feature_spread(np.array([[0.0, 1.0, 2.0], [0.0, 3.0, 2.0]]))
    assert spread == pytest.approx({"never_active": 1 / 3, "mean": 2.0, "spread": 0.25})
    assert load_script("tools/torso_probe").feature_spread(np.zeros((4, 3)))["never_active"] == 1.0


def test_torso_probe_reads_a_real_checkpoint_and_refuses_a_missing_one(capsys):
    torso_probe = load_script("tools/torso_probe")
    result = torso_probe.probe(f"{REPO_ROOT}/tests/fixtures/old_pong_preset_checkpoint", frames=8, warmup=4, seed=1)
    assert 0.0 <= result["never_active"] < 1.0 and result["spread"] > 0.0  # a trained LSTM torso: not blind
    assert torso_probe.main(["/nonexistent/last.ckpt", "--frames", "4"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
