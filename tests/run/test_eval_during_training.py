"""Evaluation during training: the episodes it plays (fakes), when best.ckpt is replaced (fakes), bad flags, and
real runs: eval.csv rows at the interval, a best.ckpt that plays and survives --resume, and kill -9 during an
evaluation leaving both checkpoints loadable."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from doom_a3c.config import TrainConfig
from doom_a3c.envs.batch import BatchStep
from doom_a3c.envs.interface import EnvSpec
from doom_a3c.errors import ConfigError, Stopped
from doom_a3c.run.periodic_evaluation import EvalResult, due_before_the_end, episode_targets, improves, play_episodes
from doom_a3c.runtime.state import RunState

from support import REPO_ROOT


# ---- the episodes an evaluation plays, on fake games ----------------------------------------------------------
class ScriptedGames:
    """Games whose episodes last the given numbers of steps, a reward of 1 a step; game 1 crashes once at its
    third step (a restarted game: its episode is dropped)."""

    def __init__(self, lengths):
        self.lengths = lengths  # per game: its episodes' lengths in order
        self.episode = [0] * len(lengths)
        self.elapsed = [0] * len(lengths)
        self.crashed = False
        self.spec = EnvSpec(2, (1,), 0.1, ["A", "B"])

    def __len__(self):
        return len(self.lengths)

    def take_start_failures(self):
        return []

    def reset(self):
        self.elapsed = [0] * len(self.lengths)
        return np.zeros((len(self.lengths), 1), np.float32)

    def step(self, actions):
        count = len(self.lengths)
        overs, crashes = np.zeros(count, bool), np.full(count, "", object)
        for game in range(count):
            self.elapsed[game] += 1
            if game == 1 and self.elapsed[game] == 3 and not self.crashed:
                self.crashed, crashes[game], self.elapsed[game] = True, "RuntimeError: engine died", 0
                continue
            if self.elapsed[game] == self.lengths[game][self.episode[game] % len(self.lengths[game])]:
                overs[game], self.elapsed[game] = True, 0
                self.episode[game] += 1
        rewards = np.where(crashes == "", 1.0, 0.0).astype(np.float32)
        return BatchStep(np.zeros((count, 1), np.float32), rewards, overs | (crashes != ""), overs,
                         np.zeros(count, np.float32), crashes, np.zeros(count, bool), None)


class FirstAction:
    def act(self, observations, starts):
        logits = np.zeros((len(observations), 2), np.float32)
        logits[:, 0] = 1.0
        return logits, np.zeros(len(observations), np.float32)


def test_each_game_plays_its_share_and_a_crashed_episode_is_played_again():
    games = ScriptedGames([[2], [5, 5, 5], [3]])
    scores, restarts = play_episodes(games, FirstAction(), 7, True, np.random.default_rng(0), threading.Event())
    assert episode_targets(7, 3) == [2, 2, 3]
    # game 0: two episodes of 2; game 1: its first episode crashed, then two of 5; game 2: three of 3
    assert sorted(scores) == [2.0, 2.0, 3.0, 3.0, 3.0, 5.0, 5.0] and restarts == ["RuntimeError: engine died"]


def test_a_stop_wakes_an_idle_evaluator_at_once(tmp_path):
    """Regression: SIGTERM during the 5 minutes between evaluations left the thread asleep, and the run waited."""
    from doom_a3c.run.periodic_evaluation import Evaluator
    from doom_a3c.runtime.state import Counters

    config = TrainConfig(scenario="CartPole-v1", model_dir=str(tmp_path), env_kind="vector", lstm=False,
                         hidden_size=8, eval_every_minutes=5.0)
    evaluator = Evaluator(config, EnvSpec(2, (4,), 0.02, ["A", "B"]), Counters())
    evaluator.start(list, float)
    started = time.monotonic()
    evaluator.stop_now()
    evaluator.close()
    assert not evaluator.running() and time.monotonic() - started < 2.0 and evaluator.results() == []


def test_an_aborted_evaluation_stops():
    abort = threading.Event()
    abort.set()
    with pytest.raises(Stopped):
        play_episodes(ScriptedGames([[1000]]), FirstAction(), 1, True, np.random.default_rng(0), abort)


# ---- best.ckpt: replaced only by a better evaluation ----------------------------------------------------------
class FakeBackend:
    def __init__(self):
        self.run, self.spec, self.description = RunState(), EnvSpec(3, (42, 42, 1), 4 / 35, ["A", "B", "C"]), "fake"

    def close(self):
        pass


class FakeEvaluator:
    def __init__(self, results):
        self.queued, self.acknowledged = list(results), 0

    def results(self):
        queued, self.queued = self.queued, []
        return queued

    def handled(self):
        self.acknowledged += 1


class FakeBest:
    def __init__(self):
        self.saved = []

    def save(self, mean, env_steps, updates, episodes, wall_seconds):
        self.saved.append((mean, env_steps))


def test_best_is_replaced_only_by_a_better_mean(tmp_path):
    from doom_a3c.run.coordinator import Coordinator
    from doom_a3c.run.summaries import read_progress

    coordinator = Coordinator(TrainConfig(model_dir=str(tmp_path), evaluate=False), FakeBackend())
    means = [(-5.0, 100), (3.0, 200), (3.0, 300), (1.0, 400), (7.5, 500)]
    coordinator.evaluator = FakeEvaluator([EvalResult(1.0 * i, steps, 0, [mean - 1, mean + 1], [])
                                           for i, (mean, steps) in enumerate(means)])
    coordinator.best = FakeBest()
    coordinator._handle_evaluations()
    assert coordinator.best.saved == [(-5.0, 100), (3.0, 200), (7.5, 500)]  # a tie keeps the older
    assert coordinator.best_mean == 7.5 and coordinator.evaluator.acknowledged == 5
    rows = read_progress(str(tmp_path / "eval.csv"))
    assert [(r["mean"], r["env_steps"], r["std"], r["min"], r["max"]) for r in rows] == [
        (m, s, 1.0, m - 1, m + 1) for m, s in means]
    assert improves(0.0, None) and not improves(1.0, 1.0)
    coordinator.log.close()


# ---- flags -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("flag,value", [("--eval-episodes", "0"), ("--eval-every-minutes", "-1"),
                                        ("--eval-every-minutes", "nan")])
def test_a_bad_evaluation_flag_is_one_line_and_exit_2(tmp_path, flag, value):
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "train.py"), flag, value, "--model-dir",
                           str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and flag in proc.stderr, proc.stderr


def test_ray_mode_refuses_evaluation_asked_for_and_runs_without_it_otherwise(tmp_path):
    from doom_a3c.run.resolve import resolve_new_run

    given = {"scenario": "CartPole-v1", "distributed": "ray", "model_dir": str(tmp_path)}
    with pytest.raises(ConfigError, match="--distributed ray"):
        resolve_new_run({**given, "evaluate": True})
    assert not resolve_new_run(given).evaluate


# ---- real runs --------------------------------------------------------------------------------------------------
RUN_FLAGS = ["--scenario", "basic.wad", "--workers", "1", "--envs-per-worker", "2", "--gif-every", "0",
             "--eval-every-minutes", "0.05", "--eval-episodes", "4", "--log-every-seconds", "60"]


def train(model_dir, *flags, timeout=300):
    return subprocess.run([sys.executable, os.path.join(REPO_ROOT, "train.py"), *RUN_FLAGS, "--model-dir",
                           str(model_dir), "--frames-dir", str(model_dir / "frames"), *flags], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_run_writes_eval_rows_at_the_interval_and_a_best_checkpoint_that_plays_and_resumes(tmp_path):
    from doom_a3c.run.playback import play
    from doom_a3c.run.summaries import read_progress
    from doom_a3c.runtime.checkpoint import best_evaluation_mean, read_checkpoint

    model = tmp_path / "model"
    # A time budget, not a step budget: 4,000 env steps once took under 6 s on a fast machine (two rows only).
    proc = train(model, "--max-minutes", "0.2")  # 12 s: at least three 3-s intervals at any speed
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = read_progress(str(model / "eval.csv"))
    assert len(rows) >= 3 and all(r["episodes"] == 4 for r in rows), rows
    last = read_checkpoint(str(model / "last.ckpt"))
    final_steps = last.counters["env_steps"]
    periodic = [r["wall_s"] for r in rows[:-1]]  # the last is the run's end
    # Never more often than the interval; later than it on a loaded machine (an evaluation that outlasts the
    # interval is followed by the next one due), so no upper bound.
    assert all(np.diff(periodic) >= 2.5), periodic
    assert rows[-1]["env_steps"] == final_steps, (rows[-1], final_steps)  # the final weights, evaluated once
    best_row = max(rows, key=lambda r: r["mean"])  # the first of equals: a tie keeps the older
    assert best_evaluation_mean(str(model)) == pytest.approx(best_row["mean"])
    assert read_checkpoint(str(model / "best.ckpt")).counters["env_steps"] == best_row["env_steps"]
    results = play(str(model / "best.ckpt"), str(tmp_path / "play"), episodes=1)
    assert len(results) == 1 and results[0].length > 0

    resumed = train(model, "--resume", "--max-steps", str(final_steps + 700))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    after = read_progress(str(model / "eval.csv"))
    assert after[:len(rows)] == rows and len(after) > len(rows)  # appended, one header
    best_after = max(after, key=lambda r: r["mean"])
    assert best_evaluation_mean(str(model)) == pytest.approx(best_after["mean"])  # the old best unless beaten
    assert read_checkpoint(str(model / "best.ckpt")).counters["env_steps"] == best_after["env_steps"]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_kill_9_during_an_evaluation_leaves_both_checkpoints_loadable_and_no_engine(tmp_path):
    """Evaluations of 40 episodes back to back (each outlasts the 3 s interval), checkpoints every 3 s: killed while
    an evaluation runs, last.ckpt and best.ckpt both load and play, and no ViZDoom engine outlives the trainer."""
    from doom_a3c.run.agent import load_agent

    from support import clean_up, engines_under, output, running, start_trainer, wait_for

    proc = start_trainer(tmp_path, *RUN_FLAGS[6:], "--evaluate", "--eval-episodes", "40",
                         "--save-every-minutes", "0.05")
    model = tmp_path / "run"
    pids = []
    try:
        assert wait_for(lambda: (model / "best.ckpt.index").exists() and (model / "last.ckpt.index").exists(),
                        240), output(tmp_path)[-3000:]
        # The evaluation games' 2 engines are up beside training's 2: an evaluation runs (the next has started).
        assert wait_for(lambda: len(engines_under(proc.pid)) >= 4, 60), output(tmp_path)[-3000:]
        time.sleep(1.0)
        pids = engines_under(proc.pid)
        os.kill(proc.pid, 9)
        proc.wait(timeout=30)
        assert wait_for(lambda: not any(running(p) for p in pids), 10), "an engine outlived the trainer"
    finally:
        clean_up(proc, pids)
    for name in ("last.ckpt", "best.ckpt"):
        agent = load_agent(str(model / name))
        env = agent.make_env()
        try:
            observation, info = env.reset()
            assert 0 <= agent.act(observation, info) < 3
        finally:
            env.close()


def test_a_periodic_evaluation_is_due_before_the_end_of_max_minutes_not_at_it():
    """A 5-minute run evaluated every 5 minutes: the evaluation due at 5:00 is the final one's to play."""
    assert due_before_the_end(240.0, 5.0) and due_before_the_end(298.5, 5.0)
    assert not due_before_the_end(300.0, 5.0) and not due_before_the_end(299.5, 5.0)
    assert not due_before_the_end(600.0, 5.0)  # after the end: the run is over by then
    assert due_before_the_end(300.0, 0.0) and due_before_the_end(6000.0, 0.0)  # no time budget


@pytest.mark.slow
def test_a_periodic_evaluation_due_at_the_end_of_max_minutes_is_left_to_the_final_one(tmp_path, monkeypatch):
    """Regression: a 5-minute run evaluated every 5 minutes played the periodic evaluation due at 5:00, then the
    final one on nearly the same weights ("evaluation at 613,360 steps ... evaluation at 613,600 steps"). Here the
    budget is two 0.6-s intervals: the evaluation due at one interval runs, the one due at two does not, and the
    final one plays the weights of the run's end."""
    from doom_a3c.run import periodic_evaluation
    from doom_a3c.run.periodic_evaluation import Evaluator
    from doom_a3c.run.resolve import resolve_new_run
    from doom_a3c.runtime.state import Counters

    monkeypatch.setattr(periodic_evaluation, "END_MARGIN_SECONDS", 0.1)  # in proportion to these short intervals
    monkeypatch.setattr(periodic_evaluation, "make_env_batch", lambda *args, **kwargs: None)
    monkeypatch.setattr(periodic_evaluation, "play_episodes", lambda *args: ([1.0], []))
    config = resolve_new_run({"scenario": "CartPole-v1", "model_dir": str(tmp_path), "eval_every_minutes": 0.01,
                              "max_minutes": 0.02})
    counters = Counters()
    counters.env_steps = 1000
    evaluator = Evaluator(config, EnvSpec(2, (4,), 0.02, ["A", "B"]), counters)
    started = time.monotonic()
    evaluator.start(evaluator.net.get_weights, float)
    results = []
    deadline = started + 30
    while not results and time.monotonic() < deadline:  # the periodic evaluation, after 0.6 s
        results += evaluator.results()
        time.sleep(0.05)
    evaluator.handled()
    time.sleep(max(0.0, started + 1.5 - time.monotonic()))  # past the one due at the end, 1.2 s
    results += evaluator.results()
    assert [r.env_steps for r in results] == [1000]
    counters.env_steps += 240  # the run's end
    evaluator.finish()
    while evaluator.running() and time.monotonic() < deadline:
        results += evaluator.results()
        evaluator.handled()
        time.sleep(0.05)
    results += evaluator.results()
    evaluator.close()
    assert [r.env_steps for r in results] == [1000, 1240]
