"""The learning core shared by the three modes: from the same rollouts, thread A3C, GA3C's trainer and the Ray
parameter server with a pushing worker make identical global weights (the import layers that keep the modes
siblings: tests/package/test_layers.py)."""
import functools
import queue

import numpy as np
import pytest

from doom_a3c.algo.learner import GradientStep
from doom_a3c.envs.batch import EnvBatch
from doom_a3c.modes.a3c import a3c_workers
from doom_a3c.modes.build import ThreadRun, build_global, configure_threads
from doom_a3c.modes.ga3c import RolloutTrainer, TrainingItem
from doom_a3c.modes.ray import worker as ray_worker
from doom_a3c.modes.ray.parameter_server import ParameterServer
from doom_a3c.modes.ray.worker import PushingWorker
from doom_a3c.runtime.state import RunState

from support import GAMES, STEPS, StillEnv, fixed_rollouts, small_config, spec


@pytest.mark.slow
@pytest.mark.parametrize("precision, heard", [("float32", False), ("bfloat16", False), ("float32", True)])
def test_three_modes_apply_identical_updates_from_the_same_rollouts(tmp_path, monkeypatch, precision, heard):
    """Three updates (clipped at global norm 0.5, so clipping acts) through each mode's own learning path; in
    bfloat16 too, where GA3C's trainer and the Ray parameter server build the same mixed-precision network through
    build_actor_critic; and with each step's sound beside the frames (--audio), on the same one path."""
    small = functools.partial(small_config, precision=precision, audio=heard)
    config = small(tmp_path)
    rollouts = fixed_rollouts(3, config.lstm_size, heard)
    initial = build_global(small(tmp_path / "initial"), spec()).learner.weights()

    def start_from_initial(learner):  # the LSTM's recurrent initializer is not seeded: every mode starts alike
        for variable, value in zip(learner.net.trainable_variables, initial):
            variable.assign(value)

    # Thread A3C: the worker's local copy takes the gradient; the global learner applies it.
    run = RunState()
    parts = build_global(small(tmp_path / "a3c"), spec(), counters=run.counters)
    start_from_initial(parts.learner)
    a3c_run = ThreadRun(config, [EnvBatch([StillEnv() for _ in range(GAMES)])], spec(), parts, run)
    worker = a3c_workers(a3c_run)[0]
    worker.sync()
    for rollout in rollouts:
        assert worker.learn(rollout).applied
    a3c_weights = parts.learner.weights()

    # GA3C: the trainer takes the gradient on the global network itself.
    ga3c_run = RunState()
    ga3c_parts = build_global(small(tmp_path / "ga3c"), spec(), counters=ga3c_run.counters)
    start_from_initial(ga3c_parts.learner)
    trainer = RolloutTrainer(0, ga3c_parts.learner, GradientStep(ga3c_parts.learner.net, config), ga3c_run,
                             queue.Queue(), 1)
    for rollout in rollouts:
        assert trainer.train([TrainingItem(rollout, 0.0)]).applied
    ga3c_weights = ga3c_parts.learner.weights()

    # Ray: a pushing worker's local copy takes the gradient; the parameter server applies it.
    server = ParameterServer(small(tmp_path / "ray").to_json(), configure_threads=False)
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
    threads = tf.config.threading
    before = (threads.get_intra_op_parallelism_threads(), threads.get_inter_op_parallelism_threads())
    configure_threads(2)
    configure_threads(1)
    assert (threads.get_intra_op_parallelism_threads(), threads.get_inter_op_parallelism_threads()) == before


def test_no_rollout_starts_once_the_step_budget_is_spent():
    """A runner under --max-steps goes on; one at it waits for the coordinator's stop and leaves (Stopped), so a
    coordinator that checks late (writing a GIF) cannot let fast games run far past the budget."""
    from doom_a3c.errors import Stopped
    from doom_a3c.runtime.state import RunState

    under = RunState(max_steps=100)
    under.counters.add_steps(99)
    under.wait_if_budget_spent()  # returns at once
    RunState().wait_if_budget_spent()  # no budget
    spent = RunState(max_steps=100)
    spent.counters.add_steps(100)
    spent.stop.set()
    with pytest.raises(Stopped):
        spent.wait_if_budget_spent()
