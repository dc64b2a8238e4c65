"""The learning core shared by the three modes: from the same rollouts, thread A3C, GA3C's trainer and the Ray
parameter server with a pushing worker make identical global weights; and the package's import graph has no
cycle, with the three mode modules siblings that never import one another."""
import queue

import numpy as np
import pytest

from doom_a3c.modes.ray import worker as ray_worker
from doom_a3c.modes.a3c import a3c_workers
from doom_a3c.modes.build import ThreadRun, build_global, configure_threads
from doom_a3c.config import TrainConfig
from doom_a3c.envs.batch import EnvBatch
from doom_a3c.envs.interface import EnvSpec, Step
from doom_a3c.modes.ga3c import RolloutTrainer, TrainingItem
from doom_a3c.algo.learner import GradientStep
from doom_a3c.algo.model.actor_critic import LSTMState
from doom_a3c.modes.ray.parameter_server import ParameterServer
from doom_a3c.modes.ray.worker import PushingWorker
from doom_a3c.algo.rollout import Rollout
from doom_a3c.runtime.state import RunState

SHAPE = (20, 20, 1)
STEPS, GAMES = 6, 3


class StillEnv:
    """A game that never changes: the modes are fed ready-made rollouts, it only has to exist."""

    num_actions = 3
    action_names = ["a", "b", "c"]
    observation_shape = SHAPE
    seconds_per_step = 0.1

    def reset(self):
        return np.zeros(SHAPE, np.uint8)

    def step(self, action):
        return Step(np.zeros(SHAPE, np.uint8), 0.0, False, False)

    def screen(self):
        return np.zeros((4, 4, 3), np.uint8)

    def close(self):
        pass


def small_config(tmp_path, **overrides) -> TrainConfig:
    values = dict(scenario="fake", env_kind="doom", scenario_path="fake.cfg", actions=[["a"], ["b"], ["c"]],
                  frame_skip=1, reward_scale=1.0, clip_rewards=False, frame_size=SHAPE[0], hidden_size=32,
                  lstm_size=16, workers=1, envs_per_worker=GAMES, env_threads=1, rollout=STEPS,
                  learning_rate=1e-3, clip_norm=0.5, model_dir=str(tmp_path / "m"), gif_every=0)
    return TrainConfig(**{**values, **overrides})


def fixed_rollouts(count: int, lstm_size: int) -> list[Rollout]:
    """Rollouts with rewards, an episode end inside (dones then starts) and a non-zero initial LSTM state."""
    rng = np.random.default_rng(7)
    rollouts = []
    for _ in range(count):
        dones = np.zeros((STEPS, GAMES), np.float32)
        dones[2, 0] = dones[4, 2] = 1.0
        starts = np.zeros((STEPS, GAMES), np.float32)
        starts[1:] = dones[:-1]
        rollouts.append(Rollout(
            observations=rng.integers(0, 256, (STEPS, GAMES, *SHAPE)).astype(np.uint8),
            actions=rng.integers(0, 3, (STEPS, GAMES)).astype(np.int32),
            rewards=rng.normal(size=(STEPS, GAMES)).astype(np.float32),
            dones=dones, starts=starts,
            values=rng.normal(size=(STEPS, GAMES)).astype(np.float32),
            initial_state=LSTMState(rng.normal(size=(GAMES, lstm_size)).astype(np.float32),
                                    rng.normal(size=(GAMES, lstm_size)).astype(np.float32)),
            bootstrap_values=rng.normal(size=GAMES).astype(np.float32),
            end_values=np.zeros((STEPS, GAMES), np.float32)))
    return rollouts


def spec() -> EnvSpec:
    return EnvSpec(3, SHAPE, 0.1, ["a", "b", "c"])


def test_three_modes_apply_identical_updates_from_the_same_rollouts(tmp_path, monkeypatch):
    """Three updates (clipped at global norm 0.5, so clipping acts) through each mode's own learning path."""
    config = small_config(tmp_path)
    rollouts = fixed_rollouts(3, config.lstm_size)
    initial = build_global(small_config(tmp_path / "initial"), spec()).learner.weights()

    def start_from_initial(learner):  # the LSTM's recurrent initializer is not seeded: every mode starts alike
        for variable, value in zip(learner.net.trainable_variables, initial):
            variable.assign(value)

    # Thread A3C: the worker's local copy takes the gradient; the global learner applies it.
    run = RunState()
    parts = build_global(small_config(tmp_path / "a3c"), spec(), counters=run.counters)
    start_from_initial(parts.learner)
    a3c_run = ThreadRun(config, [EnvBatch([StillEnv() for _ in range(GAMES)])], spec(), parts, run)
    worker = a3c_workers(a3c_run)[0]
    worker.sync()
    for rollout in rollouts:
        assert worker.learn(rollout).applied
    a3c_weights = parts.learner.weights()

    # GA3C: the trainer takes the gradient on the global network itself.
    ga3c_run = RunState()
    ga3c_parts = build_global(small_config(tmp_path / "ga3c"), spec(), counters=ga3c_run.counters)
    start_from_initial(ga3c_parts.learner)
    trainer = RolloutTrainer(0, ga3c_parts.learner, GradientStep(ga3c_parts.learner.net, config), ga3c_run,
                             queue.Queue(), 1)
    for rollout in rollouts:
        assert trainer.train([TrainingItem(rollout, 0.0)]).applied
    ga3c_weights = ga3c_parts.learner.weights()

    # Ray: a pushing worker's local copy takes the gradient; the parameter server applies it.
    server = ParameterServer(small_config(tmp_path / "ray").to_json(), configure_threads=False)
    assert server.build(spec()) is None
    start_from_initial(server.parts.learner)
    monkeypatch.setattr(ray_worker, "worker_games", lambda cfg, index, offset=0: EnvBatch([StillEnv()] * GAMES))
    pushing = PushingWorker(0, config, server.apply)
    pushing.accept(server.pull())
    for rollout in rollouts:
        assert pushing.learn(rollout, []).applied
    ray_weights = server.weights()

    assert any(not np.allclose(a, b) for a, b in zip(initial, a3c_weights))  # the updates did something
    for a, g, r in zip(a3c_weights, ga3c_weights, ray_weights):
        np.testing.assert_allclose(a, g, rtol=0, atol=1e-6)
        # The parameter server clips what arrives once more: the same bound, rounding apart.
        np.testing.assert_allclose(a, r, rtol=0, atol=1e-6)
    assert run.counters.updates == ga3c_run.counters.updates == server.counters.updates == 3
    assert server.counters.env_steps == 3 * STEPS * GAMES


def test_a_second_run_in_one_process_keeps_tensorflows_threads():
    """Regression: a second training run from Python (a notebook, the test suite) raised "Intra op parallelism
    cannot be modified after initialization" in configure_threads."""
    import tensorflow as tf

    tf.constant(1.0) + 1.0  # TensorFlow is initialised
    configure_threads(2)
    configure_threads(1)


def test_no_rollout_starts_once_the_step_budget_is_spent():
    """A runner under --max-steps goes on; one at it waits for the coordinator's stop and leaves (Stopped), so a
    coordinator that checks late (writing a GIF) cannot let fast games run far past the budget."""
    from doom_a3c.runtime.state import RunState
    from doom_a3c.errors import Stopped

    under = RunState(max_steps=100)
    under.counters.add_steps(99)
    under.wait_if_budget_spent()  # returns at once
    RunState().wait_if_budget_spent()  # no budget
    spent = RunState(max_steps=100)
    spent.counters.add_steps(100)
    spent.stop.set()
    with pytest.raises(Stopped):
        spent.wait_if_budget_spent()
