"""The GA3C trainer (--trainer ga3c): it learns a tiny fake pixel task, the predictor's per-game LSTM
states give the logits of stepping the network by hand, policy lag is counted, an error in any of its
threads stops the run, and a real basic.wad run plays, and resumes as A3C."""
import glob
import json
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo.learner import GradientStep
from doom_a3c.algo.rollout import GameRunner, concatenate_rollouts
from doom_a3c.modes.ga3c import Predictor, PredictorPolicy, RolloutTrainer, Runner, ga3c_threads
from doom_a3c.runtime.checkpoint import read_checkpoint

from support import BRIGHT_SHAPE, BrightSideEnv, fake_config, fake_thread_run, read_rows, run


def small_config(tmp_path, **overrides):
    return fake_config(tmp_path, **{"learning_rate": 7e-4, "rollout": 30, "env_threads": 1, **overrides})


def make_runner(parts, index, predictor, training_queue=None, policy_class=PredictorPolicy, seed=None):
    """Runner `index` of the run's parts, acting through `predictor`, as ga3c_threads builds it."""
    config = parts.config
    policy = policy_class(predictor, index)
    game_runner = GameRunner(index, config, parts.games[index], policy, parts.run,
                             seed=index if seed is None else seed)
    return Runner(index, game_runner, policy, config.rollout, training_queue)


def start_threads(bodies):
    threads = [threading.Thread(target=body.run_thread, daemon=True) for body in bodies]
    for thread in threads:
        thread.start()
    return threads


def join_all(threads, timeout=20.0):
    deadline = time.time() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.time()))
    assert not any(t.is_alive() for t in threads), "a GA3C thread did not stop"


def drain_rewards(run):
    return [episode.reward for episode in run.finished_episodes()]


@pytest.mark.slow
def test_ga3c_learns_a_pixel_task(tmp_path):
    """2 runners x 4 games through one predictor and one trainer: random play scores about 3.3 of 10,
    the learnt policy must read the screen and score > 8 (measured: > 9 after 60 updates, about 17 s)."""
    groups = [[BrightSideEnv(10 * r + e) for e in range(4)] for r in range(2)]
    parts = fake_thread_run(small_config(tmp_path, workers=2, envs_per_worker=4), groups)
    run, counters = parts.run, parts.run.counters
    threads = start_threads(ga3c_threads(parts))
    deadline = time.time() + 120
    while counters.updates < 80 and time.time() < deadline and not run.stop.is_set():
        time.sleep(0.1)
    drain_rewards(run)
    updates_before = counters.updates
    while counters.updates < updates_before + 4 and time.time() < deadline and not run.stop.is_set():
        time.sleep(0.05)
    run.stop.set()
    join_all(threads)
    assert not run.errors, run.errors
    rewards = drain_rewards(run)
    assert len(rewards) >= 16, (counters.updates, len(rewards))
    assert np.mean(rewards) > 8.0, (counters.updates, rewards)
    assert all(m.policy_lag is not None and m.policy_lag >= 0 for m in run.latest_metrics.values())


class RecordingPolicy(PredictorPolicy):
    """Keeps the logits the predictor gave its runner at every step."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.logits = []

    def act(self, observations, starts):
        logits, values = super().act(observations, starts)
        self.logits.append(np.array(logits))
        return logits, values


def test_predictor_lstm_states_match_stepping_the_network_by_hand(tmp_path):
    """Two runners (2 games and 1 game, episodes of 3, 4 and 5 steps: resets at different steps) are always
    answered in one batched step; each game's logits equal stepping the network alone for that runner."""
    config = small_config(tmp_path, rollout=7, workers=2)
    parts = fake_thread_run(config, [[BrightSideEnv(0, episode_length=3), BrightSideEnv(1, episode_length=4)],
                                     [BrightSideEnv(2, episode_length=5)]])
    net = parts.learner.net
    predictor = Predictor(net, parts.run, [2, 1])
    # next_item() is called directly: no training queue
    runners = [make_runner(parts, r, predictor, policy_class=RecordingPolicy) for r in range(2)]
    items = {0: [], 1: []}

    def play(runner):
        for _ in range(2):
            items[runner.index].append(runner.next_item())

    threads = [threading.Thread(target=play, args=(r,), daemon=True) for r in runners]
    for thread in threads:
        thread.start()
    deadline = time.time() + 60
    while any(t.is_alive() for t in threads) and time.time() < deadline:
        if predictor.requests.qsize() >= sum(t.is_alive() for t in threads):
            predictor.serve(timeout=0.01)  # answer only once every live runner waits: one batch of 3 games
        else:
            time.sleep(0.001)
    join_all(threads, timeout=1)
    assert predictor.batch_sizes and set(predictor.batch_sizes) == {3}
    step = tf.function(net.step)
    for runner in runners:
        state = net.initial_state(len(runner.game_runner.games))
        rollouts = [item.rollout for item in items[runner.index]]
        assert sum(r.starts[1:].sum() for r in rollouts) >= 2  # episodes began inside the rollouts
        for k, rollout in enumerate(rollouts):
            np.testing.assert_allclose(rollout.initial_state.h, state.h.numpy(), atol=1e-5)
            np.testing.assert_allclose(rollout.initial_state.c, state.c.numpy(), atol=1e-5)
            for t in range(config.rollout):
                out = step(rollout.observations[t], state, rollout.starts[t])
                np.testing.assert_allclose(runner.policy.logits[k * config.rollout + t], out.logits.numpy(),
                                           atol=1e-5)
                np.testing.assert_allclose(rollout.values[t], out.values.numpy(), atol=1e-5)
                state = out.state
    # the predictor kept the state the hand-stepped network reached
    np.testing.assert_allclose(predictor.state_of(1).h, state.h.numpy(), atol=1e-5)


def test_policy_lag_counts_updates_between_acting_and_training(tmp_path):
    config = small_config(tmp_path, rollout=5)
    parts = fake_thread_run(config, [[BrightSideEnv(0), BrightSideEnv(1)]])
    learner = parts.learner
    predictor = Predictor(learner.net, parts.run, [2])
    runner = make_runner(parts, 0, predictor)
    trainer = RolloutTrainer(0, learner, GradientStep(learner.net, config), parts.run, None, rollouts_per_batch=1)
    serving = start_threads([predictor])
    try:
        # one trainer, nothing else updating: trained before any other update, lag 0
        assert trainer.train([runner.next_item()]).policy_lag == 0
        first, second = runner.next_item(), runner.next_item()
        assert trainer.train([first]).policy_lag == 0
        assert trainer.train([second]).policy_lag == 1  # one update between acting and training
        third = runner.next_item()
        for _ in range(3):
            trainer.train([runner.next_item()])
        assert trainer.train([third]).policy_lag == 3
        assert parts.run.counters.updates == 7
    finally:
        parts.run.stop.set()
        join_all(serving)


def test_concatenated_rollouts_put_games_side_by_side(tmp_path):
    config = small_config(tmp_path, rollout=4, workers=2)
    parts = fake_thread_run(config, [[BrightSideEnv(0), BrightSideEnv(1)], [BrightSideEnv(2)]])
    predictor = Predictor(parts.learner.net, parts.run, [2, 1])
    serving = start_threads([predictor])
    try:
        a = make_runner(parts, 0, predictor).next_item()
        b = make_runner(parts, 1, predictor).next_item()
    finally:
        parts.run.stop.set()
        join_all(serving)
    both = concatenate_rollouts([a.rollout, b.rollout])
    assert both.observations.shape == (4, 3, *BRIGHT_SHAPE) and both.actions.shape == (4, 3)
    np.testing.assert_array_equal(both.actions[:, 2], b.rollout.actions[:, 0])
    assert both.initial_state.h.shape == (3, 256) and both.bootstrap_values.shape == (3,)


@pytest.mark.slow
@pytest.mark.parametrize("failing", ["runner", "predictor", "trainer"])
def test_an_error_in_any_ga3c_thread_stops_them_all(failing, tmp_path, monkeypatch):
    crash = 45 if failing == "runner" else None
    groups = [[BrightSideEnv(0, fail_after=crash), BrightSideEnv(1)], [BrightSideEnv(2)]]
    parts = fake_thread_run(small_config(tmp_path, workers=2, envs_per_worker=2, rollout=5), groups)
    bodies = ga3c_threads(parts)
    predictor = next(b for b in bodies if isinstance(b, Predictor))
    trainer = next(b for b in bodies if isinstance(b, RolloutTrainer))

    def broken(*args, **kwargs):
        raise RuntimeError("the game crashed")

    if failing == "predictor":
        predictor._step = broken
    elif failing == "trainer":
        monkeypatch.setattr(trainer, "train", broken)
    threads = start_threads(bodies)
    join_all(threads)  # every thread returns by itself: nobody waits forever on a queue
    assert parts.run.stop.is_set()
    assert len(parts.run.errors) == 1 and "crashed" in str(parts.run.errors[0])


@pytest.mark.slow
def test_training_reports_a_ga3c_thread_error_in_one_line_after_a_final_checkpoint(tmp_path, monkeypatch, capsys):
    from doom_a3c.config import TrainConfig
    from doom_a3c.run.training import train

    calls = []

    def train_then_fail(self, items):
        calls.append(len(items))
        if len(calls) > 2:
            raise RuntimeError("trainer thread broke")
        return original(self, items)

    original = RolloutTrainer.train
    monkeypatch.setattr(RolloutTrainer, "train", train_then_fail)
    config = TrainConfig(scenario="CartPole-v1", trainer="ga3c", workers=2, envs_per_worker=2, env_threads=1,
                         rollout=10, lstm_size=8, hidden_size=8, gif_every=0, model_dir=str(tmp_path / "m"),
                         frames_dir=str(tmp_path / "f"))
    assert train(config).exit_code == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "trainer thread broke" in lines[0], lines
    assert calls == [2, 2, 2]  # one rollout per runner in each batch
    assert (tmp_path / "m" / "last.ckpt.index").is_file()


@pytest.mark.slow
def test_ga3c_train_play_and_resume_as_a3c(tmp_path):
    """train.py --trainer ga3c on basic.wad, play.py on its checkpoint, then --resume it with --trainer a3c."""
    model_dir, frames_dir = tmp_path / "model", tmp_path / "frames"
    # --no-evaluate (the resumed run keeps it): no final evaluation, which nothing here checks.
    proc = run("train.py", "--trainer", "ga3c", "--scenario", "basic.wad", "--max-steps", 1500, "--workers", 2,
               "--envs-per-worker", 2, "--gif-every", 5, "--model-dir", model_dir, "--frames-dir", frames_dir,
               "--log-every-seconds", 1, "--no-evaluate")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "stopped: reached --max-steps 1500" in proc.stdout
    assert json.loads((model_dir / "config.json").read_text())["trainer"] == "ga3c"
    rows = read_rows(model_dir / "progress.csv")
    assert len(rows) >= 4 and {r["worker"] for r in rows} == {0.0, 1.0}
    assert [r["episode"] for r in rows] == list(range(1, len(rows) + 1))
    assert list(frames_dir.glob("episode_*.gif"))
    tags = set()
    for path in glob.glob(str(model_dir / "tensorboard" / "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            tags.update(value.tag for value in event.summary.value)
    assert {"Perf/Policy Lag", "Perf/Reward", "Losses/Value Loss"} <= tags

    played = run("play.py", "--model", model_dir / "last.ckpt", "--out", tmp_path / "play", "--episodes", 1)
    assert played.returncode == 0, played.stderr[-3000:]
    assert len(json.loads((tmp_path / "play" / "results.json").read_text())["episodes"]) == 1

    # 600 steps past the saved ones: at least 150 for each game of the faster worker (2 x 2 games), so at least one
    # whole basic episode (at most 76 steps) each.
    target = int(read_checkpoint(str(model_dir / "last.ckpt")).counters["env_steps"]) + 600
    resumed = run("train.py", "--resume", "--trainer", "a3c", "--model-dir", model_dir, "--frames-dir", frames_dir,
                  "--max-steps", target)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "(a3c)" in resumed.stdout
    config = json.loads((model_dir / "config.json").read_text())
    assert config["trainer"] == "a3c" and config["workers"] == 2 and config["max_steps"] == target
    after = read_rows(model_dir / "progress.csv")
    assert after[: len(rows)] == rows and len(after) > len(rows)
    # The step counter, not the last episode's row: no game need end in the last rollouts before the stop.
    counters = read_checkpoint(str(model_dir / "last.ckpt")).counters
    assert counters["env_steps"] >= target and after[-1]["env_steps"] > rows[-1]["env_steps"]
