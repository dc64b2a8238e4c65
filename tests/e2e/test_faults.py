"""Faults on real processes, in every mode: a trainer killed with kill -9 leaves no ViZDoom engine behind; an
engine killed mid-run is restarted and training goes on; an engine that stops answering (SIGSTOP) is replaced
within --game-timeout, and stops nothing."""
import csv
import os
import signal
import subprocess
import sys
import time

import pytest

from doom_a3c.runtime.checkpoint import read_checkpoint

from support import (
    REPO_ROOT,
    clean_up,
    descendants,
    engines_under,
    episodes_logged,
    output,
    running,
    start_trainer,
    wait_for,
    wait_for_training,
)

pytestmark = pytest.mark.slow

ENGINE_GONE_SECONDS = 10


MODES = {
    "threads": [],  # ViZDoom's games in child processes, the default
    "in-process": ["--env-processes", "0"],
    "ga3c": ["--trainer", "ga3c"],
    "ray": ["--distributed", "ray"],
}


@pytest.mark.parametrize("mode", list(MODES))
def test_a_killed_engine_is_restarted_and_no_engine_outlives_a_trainer_killed_with_kill_9(tmp_path, mode):
    """One trainer per mode (a train.py start costs 15-25 s): an engine killed by pid mid-run is replaced, one
    warning line says so and 10 more episodes are logged; then kill -9 of the trainer leaves none of its engines,
    the replacement included, running 10 s later. (A run that goes on to a clean exit after restarts:
    test_restarts.py.)"""
    if mode == "ray":
        pytest.importorskip("ray")
    proc = start_trainer(tmp_path, *MODES[mode])
    engines: list[int] = []
    try:
        engines = wait_for_training(tmp_path, proc, episodes=3)
        os.kill(engines[0], signal.SIGKILL)
        episodes_at_kill = episodes_logged(tmp_path)
        replaced = wait_for(lambda: len(engines_under(proc.pid)) == 2 and engines[0] not in engines_under(proc.pid),
                            seconds=60)
        assert replaced, output(tmp_path)[-3000:]
        assert wait_for(lambda: episodes_logged(tmp_path) >= episodes_at_kill + 10, seconds=120), \
            output(tmp_path)[-3000:]
        warnings = (tmp_path / "stderr.log").read_text().strip().splitlines()
        restarts = [line for line in warnings if line.startswith("warning: game")]
        assert len(restarts) == 1 and "worker 0" in restarts[0] and "restarted with a fresh seed" in restarts[0], warnings
        assert not [line for line in warnings if line.startswith("error")], warnings

        engines += engines_under(proc.pid)
        proc.kill()  # SIGKILL: no code of the trainer's runs
        proc.wait(timeout=30)
        gone = wait_for(lambda: not any(running(p) for p in engines), seconds=ENGINE_GONE_SECONDS)
        assert gone, f"engines still running {ENGINE_GONE_SECONDS} s after kill -9: {[p for p in engines if running(p)]}"
    finally:
        clean_up(proc, engines)


def test_a_scenario_suite_stopped_by_sigterm_keeps_its_trainers_run_and_leaves_no_engine(tmp_path):
    """benchmarks/learn_scenarios.py got SIGTERM mid-run: its train.py saves a checkpoint, its engines are gone,
    the suite's table holds the stopped run, and the suite exits with 143 (128 + SIGTERM) without starting the
    next seed."""
    out = tmp_path / "suite"
    log, errors = open(tmp_path / "train.log", "w"), open(tmp_path / "stderr.log", "w")
    proc = subprocess.Popen([sys.executable, os.path.join(REPO_ROOT, "benchmarks", "learn_scenarios.py"),
                             "--minutes", "10", "--seeds", "0", "1", "--scenarios", "basic", "--random-episodes", "1",
                             "--out", str(out), "--", "--workers", "1", "--envs-per-worker", "2", "--gif-every", "0"],
                            cwd=REPO_ROOT, stdout=log, stderr=errors, start_new_session=True)
    proc.log, proc.errors = log, errors
    engines: list[int] = []
    try:
        run_dir = out / "basic-seed0"
        progress = run_dir / "progress.csv"
        started = wait_for(lambda: progress.exists() and len(progress.read_text().splitlines()) > 1
                           and len(engines_under(proc.pid)) >= 2, seconds=400)
        assert started, output(tmp_path)[-3000:]
        engines = engines_under(proc.pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        assert proc.returncode == 128 + signal.SIGTERM, output(tmp_path)[-3000:]
        assert "stopped by SIGTERM: train.py exited with 0" in (tmp_path / "stderr.log").read_text()
        logged = len(progress.read_text().splitlines()) - 1
        assert read_checkpoint(str(run_dir / "last.ckpt")).counters["episodes"] == logged  # saved at the stop
        results = (out / "results.md").read_text()
        assert "| basic | 0 |" in results and "| basic | 1 |" not in results, results
        assert not (out / "basic-seed1").exists()
        assert wait_for(lambda: not any(running(p) for p in engines), seconds=ENGINE_GONE_SECONDS)
    finally:
        clean_up(proc, engines)


def worker_episodes_after(tmp_path, wall_s: float) -> set[int]:
    """The workers that logged an episode after `wall_s` seconds of the run."""
    with open(tmp_path / "run" / "progress.csv", newline="") as handle:
        return {int(row["worker"]) for row in csv.DictReader(handle) if float(row["wall_s"]) > wall_s}


def wall_seconds_now(tmp_path) -> float:
    with open(tmp_path / "run" / "progress.csv", newline="") as handle:
        return max(float(row["wall_s"]) for row in csv.DictReader(handle))


@pytest.mark.parametrize("trainer", ["a3c", "ga3c"])
def test_a_stopped_engine_is_replaced_within_the_bound_and_the_run_ends_on_its_time_limit(tmp_path, trainer):
    """SIGSTOP of one engine mid-run (what an engine that died holding ViZDoom's message-queue lock does to the
    thread that waits on it: it never answers): its game process is killed and replaced within --game-timeout,
    with a warning line; both workers log episodes after it; the run stops on its --max-minutes with exit 0; no
    engine is left, the stopped one included."""
    proc = start_trainer(tmp_path, "--trainer", trainer, "--workers", "2", "--max-minutes", "0.9",
                         "--game-timeout", "5")
    engines: list[int] = []
    try:
        started = wait_for(lambda: episodes_logged(tmp_path) >= 3 and len(engines_under(proc.pid)) >= 4, seconds=400)
        assert started, f"no training with 4 engines: {output(tmp_path)[-3000:]}"
        engines = engines_under(proc.pid)
        stopped_at = wall_seconds_now(tmp_path)
        os.kill(engines[0], signal.SIGSTOP)
        warned = wait_for(lambda: "did not answer within 5 s" in (tmp_path / "stderr.log").read_text(), seconds=20)
        assert warned, output(tmp_path)[-3000:]
        assert wait_for(lambda: not running(engines[0]), seconds=5), "the stopped engine was not killed"
        assert proc.wait(timeout=150) == 0, output(tmp_path)[-3000:]
        assert "stopped: reached --max-minutes 0.9" in output(tmp_path), output(tmp_path)[-3000:]
        assert worker_episodes_after(tmp_path, stopped_at + 10) == {0, 1}, output(tmp_path)[-3000:]
        warnings = [line for line in (tmp_path / "stderr.log").read_text().splitlines() if line.startswith("warning")]
        assert warnings and all("did not answer within 5 s" in line for line in warnings), warnings
        engines += engines_under(proc.pid)
        assert wait_for(lambda: not any(running(p) for p in engines), seconds=ENGINE_GONE_SECONDS), \
            [p for p in engines if running(p)]
    finally:
        clean_up(proc, engines)


def test_sigterm_to_a_trainer_with_a_stopped_engine_exits_within_15_s_with_a_checkpoint(tmp_path):
    """The stop never waits on a game that does not answer: the worker that waits on the stopped engine gives up,
    the final checkpoint holds every logged episode, and nothing is left running."""
    proc = start_trainer(tmp_path, "--workers", "2")  # the default --game-timeout: the watchdog has not acted yet
    engines: list[int] = []
    try:
        started = wait_for(lambda: episodes_logged(tmp_path) >= 3 and len(engines_under(proc.pid)) >= 4, seconds=400)
        assert started, f"no training with 4 engines: {output(tmp_path)[-3000:]}"
        engines = engines_under(proc.pid)
        everything = descendants(proc.pid)  # its game processes too
        os.kill(engines[0], signal.SIGSTOP)
        time.sleep(2)
        sent = time.time()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, output(tmp_path)[-3000:]
        assert time.time() - sent < 15, f"took {time.time() - sent:.1f} s to stop"
        assert "stopped by SIGTERM" in output(tmp_path)
        checkpoint = read_checkpoint(str(tmp_path / "run" / "last.ckpt"))
        assert checkpoint.counters["episodes"] == episodes_logged(tmp_path)
        assert wait_for(lambda: not any(running(p) for p in everything), seconds=ENGINE_GONE_SECONDS), \
            [p for p in everything if running(p)]
    finally:
        clean_up(proc, engines)
