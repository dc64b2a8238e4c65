"""Thread A3C (doom_a3c/modes/a3c.py) on a tiny fake pixel environment: a worker learns, its local copy equals
the global network after each update, NaN gradients never reach the global weights, and an error in a
worker stops the run instead of hanging it. The fakes and `fake_thread_run` here serve the GA3C and Ray
mode tests too."""
import numpy as np
import pytest

from doom_a3c.modes.a3c import a3c_workers

from support import BrightSideEnv, fake_config, fake_thread_run


def make_worker(tmp_path, envs, learning_rate=7e-4):
    parts = fake_thread_run(fake_config(tmp_path, learning_rate=learning_rate, rollout=30), [envs])
    worker = a3c_workers(parts)[0]
    worker.sync()
    return worker, parts


def drain_rewards(run):
    return [episode.reward for episode in run.finished_episodes()]


@pytest.mark.slow
def test_worker_learns_a_pixel_task(tmp_path):
    """Random play scores about 3.3 of 10; the trained policy must read the screen and score > 8."""
    worker, parts = make_worker(tmp_path, [BrightSideEnv(seed) for seed in range(8)])
    for _ in range(120):
        worker.learn(worker.runner.collect(30))
    drain_rewards(parts.run)
    for _ in range(5):
        worker.learn(worker.runner.collect(30))
    rewards = drain_rewards(parts.run)
    assert len(rewards) >= 8
    assert np.mean(rewards) > 8.0, rewards


@pytest.mark.slow
def test_local_copy_equals_global_after_learning(tmp_path):
    worker, parts = make_worker(tmp_path, [BrightSideEnv(0)])
    global_net = parts.learner.net
    before = [v.numpy().copy() for v in global_net.trainable_variables]
    metrics = worker.learn(worker.runner.collect(30))
    assert metrics.applied
    after = [v.numpy() for v in global_net.trainable_variables]
    assert any(not np.allclose(a, b) for a, b in zip(before, after)), "the global weights did not change"
    for local, source in zip(worker.local.net.trainable_variables, global_net.trainable_variables):
        np.testing.assert_array_equal(local.numpy(), source.numpy())


@pytest.mark.slow
def test_nan_gradient_is_never_applied(tmp_path):
    worker, parts = make_worker(tmp_path, [BrightSideEnv(0, reward=float("nan"))])
    global_net = parts.learner.net
    before = [v.numpy().copy() for v in global_net.trainable_variables]
    metrics = worker.learn(worker.runner.collect(30))
    assert not metrics.applied
    assert parts.run.counters.skipped_updates == 1 and parts.run.counters.updates == 1
    for b, v in zip(before, global_net.trainable_variables):
        np.testing.assert_array_equal(b, v.numpy())


@pytest.mark.slow
def test_worker_error_stops_the_run(tmp_path):
    worker, parts = make_worker(tmp_path, [BrightSideEnv(0, fail_after=45)])
    worker.run_thread()  # returns instead of hanging: the error is recorded and the stop flag raised
    assert parts.run.stop.is_set()
    assert len(parts.run.errors) == 1 and "crashed" in str(parts.run.errors[0])
