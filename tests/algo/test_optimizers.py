"""--optimizer rmsprop (doom_a3c/algo/optimizers.py): TensorFlow 1's RMSProp and Keras' against updates computed by
hand, one set of statistics for every worker, the mean squares through a real checkpoint and --resume, and the
config values (their checks, what an old checkpoint ran with, what --resume may change)."""
import threading

import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo.learner import GlobalLearner
from doom_a3c.algo.model.actor_critic import build_actor_critic
from doom_a3c.algo.optimizers import TFLikeRMSprop, build_optimizer
from doom_a3c.config import TrainConfig
from doom_a3c.envs.interface import EnvSpec
from doom_a3c.errors import ConfigError
from doom_a3c.modes.build import build_global
from doom_a3c.modes.ray.parameter_server import ParameterServer
from doom_a3c.quiet_import import keras
from doom_a3c.run.saved_config import resolve_resumed_run, upgrade_saved_config

VECTOR_SHAPE = (4,)
GRADIENTS = [np.array([2.0, -1.0, 0.0], np.float32), np.array([0.5, 3.0, -4.0], np.float32),
             np.array([-1.0, -1.0, 1.0], np.float32)]


def small_config(model_dir="unused", **overrides):
    """A resolved config for a vector env with 2 actions, saving into `model_dir`."""
    values = {"scenario": "fake", "env_kind": "vector", "scenario_path": "fake-v0", "actions": [["LEFT"], ["RIGHT"]],
              "frame_skip": 1, "reward_scale": 1.0, "clip_rewards": False, "lstm_size": 8, "hidden_size": 8,
              "learning_rate": 0.1, "optimizer": "rmsprop", "model_dir": str(model_dir)}
    return TrainConfig(**{**values, **overrides})


SPEC = EnvSpec(2, VECTOR_SHAPE, 0.02, ["LEFT", "RIGHT"])


def apply_in_graph(optimizer, variable, gradients):
    """Each gradient in turn, through a tf.function as GlobalLearner applies them."""
    step = tf.function(lambda g: optimizer.apply_gradients([(g, variable)]))
    for g in gradients:
        step(tf.constant(g))


# ---- the update against hand numbers -------------------------------------------------------------------------
def test_tf1_style_starts_the_mean_square_at_one_and_adds_epsilon_inside_the_root():
    w = keras.Variable(np.array([1.0, 2.0, 3.0], np.float32))
    optimizer = TFLikeRMSprop(learning_rate=0.1, decay=0.99, epsilon=1e-5)
    apply_in_graph(optimizer, w, GRADIENTS)
    ms, expected = np.ones(3), np.array([1.0, 2.0, 3.0])  # TF1's mean square starts at 1
    for g in GRADIENTS:
        ms = 0.99 * ms + 0.01 * g ** 2
        expected = expected - 0.1 * g / np.sqrt(ms + 1e-5)
    # the first step written out: ms = 0.99 + 0.01 * [4, 1, 0] = [1.03, 1.0, 0.99]
    np.testing.assert_allclose(ms, [0.99 ** 3 + 0.01 * (0.99 ** 2 * 4 + 0.99 * 0.25 + 1),
                                    0.99 ** 3 + 0.01 * (0.99 ** 2 * 1 + 0.99 * 9 + 1),
                                    0.99 ** 3 + 0.01 * (0.99 * 16 + 1)])
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(optimizer.variables[2].numpy(), ms, rtol=1e-6)  # the one slot: the mean square


def test_tf1_style_first_step_by_hand():
    w = keras.Variable(np.array([1.0, 2.0, 3.0], np.float32))
    apply_in_graph(TFLikeRMSprop(learning_rate=0.1, decay=0.99, epsilon=1e-5), w, GRADIENTS[:1])
    np.testing.assert_allclose(w.numpy(), [1.0 - 0.1 * 2.0 / np.sqrt(1.03001), 2.0 + 0.1 / np.sqrt(1.00001),
                                           3.0], rtol=1e-6)


def test_keras_style_starts_at_zero_with_epsilon_also_inside_the_root():
    """Keras 3's RMSprop (--rmsprop-style keras, the old --optimizer rmsprop): the same rule from a mean square of 0.
    Its epsilon is inside the root too (not outside, as PyTorch's): the first step is lr * g / sqrt(0.01 g^2 + eps)."""
    config = small_config(rmsprop_style="keras", rmsprop_decay=0.99, rmsprop_epsilon=0.1)
    w = keras.Variable(np.array([1.0, 2.0, 3.0], np.float32))
    optimizer = build_optimizer(config)
    apply_in_graph(optimizer, w, GRADIENTS)
    ms, expected = np.zeros(3), np.array([1.0, 2.0, 3.0])
    for g in GRADIENTS:
        ms = 0.99 * ms + 0.01 * g ** 2
        expected = expected - 0.1 * g / np.sqrt(ms + 0.1)
    np.testing.assert_allclose(w.numpy(), expected, rtol=1e-6)
    first = keras.Variable(np.array([1.0, 2.0, 3.0], np.float32))
    apply_in_graph(build_optimizer(config), first, GRADIENTS[:1])
    inside = [1.0 - 0.1 * 2.0 / np.sqrt(0.04 + 0.1), 2.0 + 0.1 / np.sqrt(0.01 + 0.1), 3.0]  # [0.4655, 2.3015, 3]
    outside = [1.0 - 0.1 * 2.0 / (np.sqrt(0.04) + 0.1), 2.0 + 0.1 / (np.sqrt(0.01) + 0.1), 3.0]  # [0.3333, 2.5, 3]
    np.testing.assert_allclose(first.numpy(), inside, rtol=1e-6)
    assert not np.allclose(first.numpy(), outside, rtol=1e-2)


def test_keras_style_first_step_with_a_small_epsilon_is_ten_times_the_learning_rate():
    """Why the A2C anchors start at 1: from 0, with epsilon 1e-5, a gradient of 2 moves its weight by about 10 lr
    and one of 0.001 by a third of lr; from 1, by about 2 lr and 0.001 lr (lr * g)."""
    tiny = [np.array([1e-3, 2.0], np.float32)]
    keras_w, tf1_w = (keras.Variable(np.zeros(2, np.float32)) for _ in range(2))
    apply_in_graph(build_optimizer(small_config(rmsprop_style="keras")), keras_w, tiny)
    apply_in_graph(build_optimizer(small_config(rmsprop_style="tf1")), tf1_w, tiny)
    np.testing.assert_allclose(keras_w.numpy(), [-0.1 * 1e-3 / np.sqrt(1e-8 + 1e-5), -0.1 * 2.0 / np.sqrt(0.04 + 1e-5)],
                               rtol=1e-5)  # [-0.0316, -0.99988]
    np.testing.assert_allclose(tf1_w.numpy(), [-0.1 * 1e-3 / np.sqrt(0.99 + 1e-8 + 1e-5),
                                               -0.1 * 2.0 / np.sqrt(0.99 + 0.04 + 1e-5)], rtol=1e-5)


def test_build_optimizer_follows_the_flags():
    tf1 = build_optimizer(small_config(rmsprop_decay=0.95, rmsprop_epsilon=1e-3))
    assert isinstance(tf1, TFLikeRMSprop) and (tf1.decay, tf1.epsilon) == (0.95, 1e-3)
    assert tf1.get_config()["decay"] == 0.95 and tf1.get_config()["epsilon"] == 1e-3
    old = build_optimizer(small_config(rmsprop_style="keras", rmsprop_decay=0.99, rmsprop_epsilon=0.1))
    assert type(old) is keras.optimizers.RMSprop and (old.rho, old.epsilon) == (0.99, 0.1)
    assert isinstance(build_optimizer(small_config(optimizer="adam")), keras.optimizers.Adam)


# ---- one set of statistics for every worker --------------------------------------------------------------------
def test_two_workers_move_one_mean_square_per_weight():
    """Two worker threads push their gradients through the one GlobalLearner at once: the shared mean squares
    and weights end as the two gradients applied in turn (in whichever order the lock let them in)."""
    config = small_config(learning_rate=0.05)
    learner = GlobalLearner(config, build_actor_critic(config, 2, VECTOR_SHAPE, name="global"))
    variables = learner.net.learned_variables
    assert len(learner.optimizer.variables) == 2 + len(variables)  # iterations, learning rate, one slot per weight
    start = [v.numpy().astype(np.float64) for v in variables]
    pushed = {"a": 0.5, "b": -2.0}  # worker a's gradient is 0.5 everywhere, worker b's -2
    barrier = threading.Barrier(2)

    def worker(value):
        barrier.wait()
        assert learner.apply([np.full(v.shape, value, np.float32) for v in learner.net.trainable_variables])

    threads = [threading.Thread(target=worker, args=(value,)) for value in pushed.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert learner.counters.updates == 2 and int(learner.optimizer.iterations.numpy()) == 2

    def in_turn(first, second):
        ms1 = 0.99 * 1.0 + 0.01 * first ** 2
        ms2 = 0.99 * ms1 + 0.01 * second ** 2
        return ms2, -0.05 * first / np.sqrt(ms1 + 1e-5) - 0.05 * second / np.sqrt(ms2 + 1e-5)

    slots = learner.optimizer.variables[2:]
    outcomes = [in_turn(0.5, -2.0), in_turn(-2.0, 0.5)]
    matched = [all(np.allclose(slot.numpy(), ms, rtol=1e-6) and np.allclose(v.numpy() - w0, step, atol=1e-6)
                   for slot, v, w0 in zip(slots, variables, start)) for ms, step in outcomes]
    assert any(matched), "the shared slots are not the two gradients applied in turn"


def test_the_ray_parameter_server_builds_the_same_optimizer(tmp_path):
    server = ParameterServer(small_config(tmp_path).to_json(), configure_threads=False)
    assert server.build(SPEC) is None
    assert isinstance(server.parts.learner.optimizer, TFLikeRMSprop)


# ---- through a checkpoint -----------------------------------------------------------------------------------
def _trained_parts(config, steps=3):
    parts = build_global(config, SPEC)
    grads = [np.full(v.shape, 0.3, np.float32) for v in parts.learner.net.trainable_variables]
    for i in range(steps):
        assert parts.learner.apply([g * (i + 1) for g in grads])
    return parts


def test_resume_restores_the_mean_squares(tmp_path):
    config = small_config(tmp_path)
    parts = _trained_parts(config)
    prefix = parts.save(episodes=0, wall_seconds=1.0)
    resumed = build_global(config, SPEC, resume_prefix=prefix)
    before, after = parts.learner.optimizer, resumed.learner.optimizer
    assert int(after.iterations.numpy()) == 3
    for a, b in zip(before.variables[2:], after.variables[2:]):
        assert not np.allclose(b.numpy(), 1.0)  # restored, not the fresh ones
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # the same next gradient then gives the same weights
    grads = [np.full(v.shape, -0.7, np.float32) for v in parts.learner.net.trainable_variables]
    parts.learner.apply(grads)
    resumed.learner.apply(grads)
    for a, b in zip(parts.learner.weights(), resumed.learner.weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_a_keras_style_checkpoint_resumes_with_tf1_style_keeping_its_statistics(tmp_path):
    """One mean square per weight in the same place either way: --rmsprop-style may change on --resume."""
    parts = _trained_parts(small_config(tmp_path, rmsprop_style="keras", rmsprop_epsilon=0.1))
    prefix = parts.save(episodes=0, wall_seconds=1.0)
    resumed = build_global(small_config(tmp_path, rmsprop_style="tf1"), SPEC, resume_prefix=prefix)
    assert isinstance(resumed.learner.optimizer, TFLikeRMSprop)
    for a, b in zip(parts.learner.optimizer.variables[2:], resumed.learner.optimizer.variables[2:]):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


# ---- the config ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("field, value", [("rmsprop_decay", 1.0), ("rmsprop_decay", -0.1), ("rmsprop_decay", np.nan),
                                          ("rmsprop_epsilon", 0.0), ("rmsprop_epsilon", -1e-5),
                                          ("rmsprop_epsilon", np.inf), ("rmsprop_epsilon", np.nan),
                                          ("rmsprop_style", "outside"), ("optimizer", "sgd")])
def test_bad_rmsprop_values_are_one_line_config_errors(field, value):
    with pytest.raises(ConfigError, match=f"--{field.replace('_', '-')}") as error:
        small_config(**{field: value}).validate()
    assert "\n" not in str(error.value)


def test_the_defaults_are_the_a2c_anchors():
    config = TrainConfig()
    assert (config.rmsprop_decay, config.rmsprop_epsilon, config.rmsprop_style) == (0.99, 1e-5, "tf1")


def test_a_config_saved_before_these_fields_resumes_as_trained():
    data = small_config().to_dict()
    for key in ("rmsprop_decay", "rmsprop_epsilon", "rmsprop_style"):
        del data[key]
    config = upgrade_saved_config(data, "old/last.ckpt")
    assert (config.rmsprop_decay, config.rmsprop_epsilon, config.rmsprop_style) == (0.99, 0.1, "keras")
    optimizer = build_optimizer(config)
    assert type(optimizer) is keras.optimizers.RMSprop and (optimizer.rho, optimizer.epsilon) == (0.99, 0.1)


def test_resume_refuses_another_optimizer_but_takes_other_rmsprop_values():
    saved = small_config()
    with pytest.raises(ConfigError, match=r"cannot change --optimizer \(trained with rmsprop\) on --resume"):
        resolve_resumed_run(saved, {"optimizer": "adam"}, "models/last.ckpt")
    changed = {"rmsprop_decay": 0.9, "rmsprop_epsilon": 1e-3, "rmsprop_style": "keras", "optimizer": "rmsprop"}
    resumed = resolve_resumed_run(saved, changed, "models/last.ckpt")
    assert (resumed.rmsprop_decay, resumed.rmsprop_epsilon, resumed.rmsprop_style) == (0.9, 1e-3, "keras")


def test_a_config_saved_before_activation_existed_keeps_elu():
    """A checkpoint from before --activation ran ELU, whatever today's Atari defaults say."""
    data = small_config().to_dict()
    del data["activation"]
    config = upgrade_saved_config(data, "old/last.ckpt")
    assert config.activation == "elu"
    net = build_actor_critic(config, 2, VECTOR_SHAPE, "global")
    assert net.fc1.activation.__name__ == "elu"
    relu = build_actor_critic(small_config(activation="relu"), 2, VECTOR_SHAPE, "global")
    assert relu.fc1.activation.__name__ == "relu" and relu.fc2.activation.__name__ == "relu"
