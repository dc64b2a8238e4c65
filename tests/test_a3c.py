"""The worker on a tiny fake pixel environment: it learns, NaN gradients never reach the global
weights, and an error in a worker stops the run instead of hanging it."""
import numpy as np
import keras
import pytest

from doom_a3c.config import TrainConfig
from doom_a3c.envs import StepResult
from doom_a3c.network import ActorCritic
from doom_a3c.worker import SharedState, Worker

SHAPE = (84, 84, 1)


class BrightSideEnv:
    """The bright half of the screen says which action pays 1 (0: left, 1: right); 2 never pays."""

    num_actions = 3
    action_names = ["left", "right", "wait"]

    def __init__(self, seed, reward=1.0, episode_length=10, fail_after=None):
        self.rng = np.random.default_rng(seed)
        self.reward, self.episode_length, self.fail_after = reward, episode_length, fail_after
        self.steps_taken = 0

    def _observe(self):
        self.side = int(self.rng.integers(2))
        frame = np.zeros(SHAPE, np.uint8)
        if self.side == 0:
            frame[:, :42] = 255
        else:
            frame[:, 42:] = 255
        return frame

    def reset(self):
        self.t = 0
        return self._observe()

    def step(self, action):
        self.steps_taken += 1
        if self.fail_after is not None and self.steps_taken > self.fail_after:
            raise RuntimeError("the game crashed")
        paid = self.reward if action == self.side else 0.0
        self.t += 1
        return StepResult(self._observe(), paid, self.t >= self.episode_length)

    def screen(self):
        return np.zeros((12, 16, 3), np.uint8)

    def close(self):
        pass


def make_worker(envs, learning_rate=7e-4):
    config = TrainConfig(learning_rate=learning_rate, rollout=30)
    global_net = ActorCritic(3, name="global").build_variables(SHAPE)
    optimizer = keras.optimizers.Adam(learning_rate)
    optimizer.build(global_net.trainable_variables)
    shared = SharedState(global_net, optimizer)
    local = ActorCritic(3, name="worker_0").build_variables(SHAPE)
    worker = Worker(0, config, envs, local, shared, reward_scale=1.0, seed=0)
    worker.sync()
    return worker, shared


def drain_rewards(shared):
    rewards = []
    while not shared.episodes.empty():
        rewards.append(shared.episodes.get().reward)
    return rewards


def test_worker_learns_a_pixel_task():
    """Random play scores about 3.3 of 10; the trained policy must read the screen and score > 8."""
    worker, shared = make_worker([BrightSideEnv(seed) for seed in range(8)])
    for _ in range(120):
        worker.learn(worker.collect_rollout(30))
    drain_rewards(shared)
    for _ in range(5):
        worker.learn(worker.collect_rollout(30))
    rewards = drain_rewards(shared)
    assert len(rewards) >= 8
    assert np.mean(rewards) > 8.0, rewards


def test_local_copy_equals_global_after_learning():
    worker, shared = make_worker([BrightSideEnv(0)])
    before = [v.numpy().copy() for v in shared.global_net.trainable_variables]
    metrics = worker.learn(worker.collect_rollout(30))
    assert metrics.applied
    after = [v.numpy() for v in shared.global_net.trainable_variables]
    assert any(not np.allclose(a, b) for a, b in zip(before, after)), "the global weights did not change"
    for local, source in zip(worker.local_net.trainable_variables, shared.global_net.trainable_variables):
        np.testing.assert_array_equal(local.numpy(), source.numpy())


def test_nan_gradient_is_never_applied():
    worker, shared = make_worker([BrightSideEnv(0, reward=float("nan"))])
    before = [v.numpy().copy() for v in shared.global_net.trainable_variables]
    metrics = worker.learn(worker.collect_rollout(30))
    assert not metrics.applied
    assert shared.skipped_updates == 1
    for b, v in zip(before, shared.global_net.trainable_variables):
        np.testing.assert_array_equal(b, v.numpy())


def test_worker_error_stops_the_run():
    worker, shared = make_worker([BrightSideEnv(0, fail_after=45)])
    worker.run()  # returns instead of hanging: the error is recorded and the stop flag raised
    assert shared.stop.is_set()
    assert len(shared.errors) == 1 and "crashed" in str(shared.errors[0])
