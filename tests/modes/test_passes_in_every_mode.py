"""--epochs, --minibatches in each mode: one pass of one update is today's A3C update, weight for weight; several
clipped passes make the same global weights whether thread A3C, GA3C's trainer or a Ray worker takes them."""
import functools
import queue

import numpy as np
import pytest

from doom_a3c.algo.learner import GradientStep
from doom_a3c.envs.batch import EnvBatch
from doom_a3c.modes.a3c import a3c_workers
from doom_a3c.modes.build import ThreadRun, build_global
from doom_a3c.modes.ga3c import RolloutTrainer, TrainingItem
from doom_a3c.modes.ray import worker as ray_worker
from doom_a3c.modes.ray.parameter_server import ParameterServer
from doom_a3c.modes.ray.worker import PushingWorker
from doom_a3c.runtime.state import RunState

from support import GAMES, STEPS, BrightSideEnv, StillEnv, fake_config, fake_thread_run, fixed_rollouts, small_config, spec

UPDATES = 3


def acting_rollouts(lstm_size: int) -> list:
    """fixed_rollouts with acting probabilities near a fresh network's (uniform over the 3 actions)."""
    rng = np.random.default_rng(11)
    return [r._replace(log_probs=(np.log(1 / 3) + 0.05 * rng.normal(size=(STEPS, GAMES))).astype(np.float32))
            for r in fixed_rollouts(UPDATES, lstm_size)]


def weights_after(mode: str, config, tmp_path, monkeypatch, initial, rollouts):
    """The global weights after each rollout went through the mode's own learning path."""
    def start_from(learner):
        for variable, value in zip(learner.net.trainable_variables, initial):
            variable.assign(value)
    if mode == "a3c":
        run = RunState()
        parts = build_global(config, spec(), counters=run.counters)
        start_from(parts.learner)
        worker = a3c_workers(ThreadRun(config, [EnvBatch([StillEnv() for _ in range(GAMES)])], spec(), parts, run))[0]
        worker.sync()
        metrics = [worker.learn(r) for r in rollouts]
        return parts.learner.weights(), run.counters, metrics
    if mode == "ga3c":
        run = RunState()
        parts = build_global(config, spec(), counters=run.counters)
        start_from(parts.learner)
        trainer = RolloutTrainer(0, parts.learner, GradientStep(parts.learner.net, config), run, queue.Queue(), 1)
        metrics = [trainer.train([TrainingItem(r, 0.0)]) for r in rollouts]
        return parts.learner.weights(), run.counters, metrics
    server = ParameterServer(config.to_json(), configure_threads=False)
    assert server.build(spec()) is None
    start_from(server.parts.learner)
    monkeypatch.setattr(ray_worker, "worker_games", lambda cfg, index, offset=0: EnvBatch([StillEnv()] * GAMES))
    pushing = PushingWorker(0, config, server.apply)
    pushing.accept(server.pull())
    metrics = [pushing.learn(r, []) for r in rollouts]
    return server.weights(), server.counters, metrics


@pytest.fixture
def initial(tmp_path):
    return build_global(small_config(tmp_path / "initial"), spec()).learner.weights()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["a3c", "ga3c", "ray"])
def test_one_pass_is_todays_update_in_every_mode(tmp_path, monkeypatch, initial, mode):
    """Today's update written out: the gradient of the whole rollout taken once, applied once."""
    config = small_config(tmp_path)
    rollouts = acting_rollouts(config.lstm_size)
    reference = build_global(small_config(tmp_path / "reference"), spec()).learner
    for variable, value in zip(reference.net.trainable_variables, initial):
        variable.assign(value)
    step = GradientStep(reference.net, config)
    for rollout in rollouts:
        gradient = step(rollout)
        assert reference.apply(gradient.grads, gradient.finite)
    weights, counters, metrics = weights_after(mode, config, tmp_path, monkeypatch, initial, rollouts)
    tolerance = 1e-6 if mode == "ray" else 0.0  # the parameter server clips what arrives once more
    for ours, theirs in zip(weights, reference.weights()):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=tolerance)
    assert counters.updates == UPDATES
    assert all(m.approx_kl is None and m.clip_fraction is None for m in metrics)


@pytest.mark.slow
def test_several_clipped_passes_make_the_same_weights_in_every_mode(tmp_path, monkeypatch, initial):
    small = functools.partial(small_config, epochs=2, minibatches=2)
    rollouts = acting_rollouts(small(tmp_path).lstm_size)
    results = {mode: weights_after(mode, small(tmp_path / mode), tmp_path / mode, monkeypatch, initial, rollouts)
               for mode in ("a3c", "ga3c", "ray")}
    one_pass = weights_after("a3c", small_config(tmp_path / "one", epochs=1), tmp_path, monkeypatch, initial, rollouts)
    for mode, (weights, counters, metrics) in results.items():
        assert counters.updates == UPDATES * 2 * 2, mode  # 2 passes of 2 minibatches a rollout
        assert all(m.approx_kl is not None and m.approx_kl >= 0 for m in metrics), mode
        assert all(0.0 <= m.clip_fraction <= 1.0 for m in metrics), mode
        assert all(0.0 < m.update_share <= 1.0 for m in metrics), mode
        for ours, a3c in zip(weights, results["a3c"][0]):
            np.testing.assert_allclose(ours, a3c, rtol=0, atol=2e-6)
    assert any(not np.allclose(a, b, atol=1e-5) for a, b in zip(results["a3c"][0], one_pass[0]))
    if "ray" in results:
        assert results["ray"][1].env_steps == UPDATES * STEPS * GAMES  # each rollout's steps counted once


@pytest.mark.slow
def test_a_worker_learns_the_pixel_task_with_clipped_passes_over_its_own_rollouts(tmp_path):
    """The rollouts a GameRunner plays carry their acting log-probabilities; 4 passes of 2 minibatches over each
    learn the task within 40 rollouts (random play scores about 3.3 of 10)."""
    parts = fake_thread_run(fake_config(tmp_path, rollout=30, epochs=4, minibatches=2),
                            [[BrightSideEnv(seed) for seed in range(8)]])
    worker = a3c_workers(parts)[0]
    worker.sync()
    rollout = worker.runner.collect(30)
    assert rollout.log_probs.shape == (30, 8) and np.all(rollout.log_probs <= 0)
    for _ in range(40):
        metrics = worker.learn(worker.runner.collect(30))
    parts.run.finished_episodes()
    for _ in range(5):
        worker.learn(worker.runner.collect(30))
    rewards = [episode.reward for episode in parts.run.finished_episodes()]
    assert np.mean(rewards) > 8.0, rewards
    assert metrics.approx_kl is not None and metrics.clip_fraction is not None
    assert parts.run.counters.updates == 45 * 4 * 2  # the first rollout was only looked at
