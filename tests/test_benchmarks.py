"""The benchmark scripts' own logic: reading a run's progress.csv, and the peer's environment."""
import csv
import importlib.util
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "benchmarks", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_progress(path: str, rewards: list[float], seconds_per_episode: float, steps_per_episode: int) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["wall_s", "env_steps", "episode", "worker", "reward", "length"])
        for i, reward in enumerate(rewards, start=1):
            writer.writerow([i * seconds_per_episode, i * steps_per_episode, i, 0, reward, steps_per_episode])


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


def test_engine_speed_counts_steps_and_the_cpu_of_python_and_of_the_engines():
    pytest.importorskip("vizdoom")
    engine_speed = load_script("engine_speed")
    from doom_a3c.config import TrainConfig
    from doom_a3c.scenarios import with_preset_defaults

    config = with_preset_defaults(TrainConfig(scenario="basic.wad"), explicit={"scenario"})
    rate, python_us, engine_us = engine_speed.measure(config, games=2, seconds=0.5)
    assert rate > 50  # steps/s: any machine that runs the suite does far more
    assert python_us > 0 and engine_us > 0  # the engines are separate processes, found and timed
