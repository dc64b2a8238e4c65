"""Thread A3C (doom_a3c/modes/a3c.py) on a tiny fake pixel environment: a worker learns, its local copy equals
the global network after each update, NaN gradients never reach the global weights, and an error in a
worker stops the run instead of hanging it. The fakes and `fake_thread_run` here serve the GA3C and Ray
mode tests too."""
import numpy as np

from doom_a3c.modes.a3c import a3c_workers
from doom_a3c.modes.build import ThreadRun, build_global
from doom_a3c.config import TrainConfig
from doom_a3c.envs.batch import EnvBatch
from doom_a3c.envs.interface import Step
from doom_a3c.runtime.state import RunState

SHAPE = (84, 84, 1)


class BrightSideEnv:
    """The bright half of the screen says which action pays 1 (0: left, 1: right); 2 never pays."""

    num_actions = 3
    action_names = ["left", "right", "wait"]
    observation_shape = SHAPE
    seconds_per_step = 0.1

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
        over = self.t >= self.episode_length
        return Step(self._observe(), paid, over, over)

    def screen(self):
        return np.zeros((12, 16, 3), np.uint8)

    def close(self):
        pass


def fake_config(tmp_path, **overrides) -> TrainConfig:
    """A resolved config for BrightSideEnv games (which declare their own observation shape)."""
    values = dict(scenario="fake", env_kind="doom", scenario_path="fake.cfg",
                  actions=[[name] for name in BrightSideEnv.action_names], frame_skip=1, reward_scale=1.0,
                  clip_rewards=False, learning_rate=7e-4, rollout=30, workers=1, gif_every=0,
                  model_dir=str(tmp_path / "model"), frames_dir=str(tmp_path / "frames"))
    return TrainConfig(**{**values, **overrides})


def fake_thread_run(config: TrainConfig, game_lists) -> ThreadRun:
    """What build_thread_run makes, with these fake games (one batch per worker or GA3C runner)."""
    batches = [EnvBatch(envs, threads=config.env_threads) for envs in game_lists]
    run = RunState()
    spec = batches[0].spec
    return ThreadRun(config, batches, spec, build_global(config, spec, counters=run.counters), run)


def make_worker(tmp_path, envs, learning_rate=7e-4):
    parts = fake_thread_run(fake_config(tmp_path, learning_rate=learning_rate, rollout=30), [envs])
    worker = a3c_workers(parts)[0]
    worker.sync()
    return worker, parts


def drain_rewards(run):
    return [episode.reward for episode in run.finished_episodes()]


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


def test_nan_gradient_is_never_applied(tmp_path):
    worker, parts = make_worker(tmp_path, [BrightSideEnv(0, reward=float("nan"))])
    global_net = parts.learner.net
    before = [v.numpy().copy() for v in global_net.trainable_variables]
    metrics = worker.learn(worker.runner.collect(30))
    assert not metrics.applied
    assert parts.run.counters.skipped_updates == 1 and parts.run.counters.updates == 1
    for b, v in zip(before, global_net.trainable_variables):
        np.testing.assert_array_equal(b, v.numpy())


def test_worker_error_stops_the_run(tmp_path):
    worker, parts = make_worker(tmp_path, [BrightSideEnv(0, fail_after=45)])
    worker.run_thread()  # returns instead of hanging: the error is recorded and the stop flag raised
    assert parts.run.stop.is_set()
    assert len(parts.run.errors) == 1 and "crashed" in str(parts.run.errors[0])
