"""--entropy-target: the entropy weight's multiplier by hand, its place among the network's running statistics
(shared through the gradient list, saved in the checkpoint), and the loss taking the weight it says."""
import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo.entropy_target import (
    ENTROPY_TARGET_RATE,
    MAX_LOG_MULTIPLIER,
    entropy_weight,
    multiplier_step,
    uniform_entropy,
)
from doom_a3c.algo.learner import GlobalLearner, GradientStep
from doom_a3c.algo.losses import a3c_loss
from doom_a3c.algo.model.actor_critic import build_actor_critic
from doom_a3c.algo.model.heads import FactorisedHeads, joint_log_probs
from doom_a3c.config import TrainConfig
from doom_a3c.envs.doom.action_sets import combined_action_heads, combined_actions, head_option_matrix
from doom_a3c.errors import ConfigError
from doom_a3c.modes.build import build_global
from doom_a3c.run.saved_config import resolve_resumed_run

from support import REPO_ROOT, SHAPE, spec, tiny_config, variable_rollout


def test_uniform_entropy_by_hand():
    assert uniform_entropy(6) == pytest.approx(np.log(6))
    # Turn {none, left, right} x fire {no, yes}: every one of the 6 actions has probability 1/3 * 1/2.
    buttons = ["TURN_LEFT", "TURN_RIGHT", "ATTACK"]
    actions, heads = combined_actions(buttons), combined_action_heads(buttons)
    matrix = head_option_matrix(actions, heads)
    assert uniform_entropy(len(actions), [len(h) for h in heads], matrix) == pytest.approx(np.log(3) + np.log(2))


def test_uniform_entropy_of_heads_with_a_which_head_matches_tensorflow():
    """Buttons left out of the product make a "which" head: the joint of uniform heads is then not uniform over
    the actions; the NumPy value must be the entropy of the distribution the network gives with zero logits."""
    buttons = ["ATTACK", "SPEED", "STRAFE", "USE", "MOVE_RIGHT", "MOVE_LEFT", "MOVE_BACKWARD", "MOVE_FORWARD",
               "TURN_RIGHT", "TURN_LEFT", "SELECT_WEAPON1", "SELECT_WEAPON2"]
    actions, heads = combined_actions(buttons), combined_action_heads(buttons)
    sizes, matrix = [len(h) for h in heads], head_option_matrix(actions, heads)
    log_probs = joint_log_probs(tf.zeros([sum(sizes)]), FactorisedHeads(sizes, matrix)).numpy()
    expected = -(np.exp(log_probs) * log_probs).sum()
    assert np.exp(log_probs).sum() == pytest.approx(1.0, abs=1e-5)
    assert uniform_entropy(len(actions), sizes, matrix) == pytest.approx(expected, rel=1e-5)
    assert expected < np.log(len(actions))  # not simply log(A)


def test_multiplier_step_by_hand():
    # 0.1 short of a target of 0.3 (entropy 0.2 of a uniform 1.0): m grows by rate * 0.1.
    assert multiplier_step(1.0, 0.2, 1.0, 0.3) == pytest.approx(ENTROPY_TARGET_RATE * 0.1)
    # 0.4 above the target: m sinks by rate * 0.4, but never below 0.
    assert multiplier_step(1.0, 1.4, 2.0, 0.3) == pytest.approx(-ENTROPY_TARGET_RATE * 0.4)
    assert multiplier_step(0.001, 2.0, 2.0, 0.3) == pytest.approx(-0.001)
    assert multiplier_step(MAX_LOG_MULTIPLIER, 0.0, 1.0, 0.5) == 0.0  # at the cap
    assert entropy_weight(0.004, 0.0) == pytest.approx(0.004)
    assert entropy_weight(0.004, np.log(3.0)) == pytest.approx(0.012)
    assert entropy_weight(0.004, -0.5) == pytest.approx(0.004)  # a stale overshoot below 0 reads as 0


def test_the_loss_takes_the_weight_it_is_given():
    logits = tf.constant(np.random.default_rng(0).normal(size=(4, 2, 3)), tf.float32)
    zeros = tf.zeros((4, 2))
    actions = tf.zeros((4, 2), tf.int32)
    low = a3c_loss(logits, zeros, actions, zeros, zeros, 0.5, 1.0, tf.constant(0.01))
    high = a3c_loss(logits, zeros, actions, zeros, zeros, 0.5, 1.0, tf.constant(0.03))
    assert float(low.total - high.total) == pytest.approx(0.02 * float(low.entropy), rel=1e-5)


@pytest.mark.slow
def test_the_multiplier_rides_the_gradient_list_and_moves_the_next_weight(tmp_path):
    config = tiny_config(tmp_path, entropy_target=0.99, entropy_coef=0.01)  # the tiny net starts near 0.99
    net = build_actor_critic(config, 3, SHAPE, "global")
    assert net.statistics[-1] is net.entropy_multiplier and len(net.statistics) == 3
    learner = GlobalLearner(config, net)
    step = GradientStep(net, config)
    net.entropy_multiplier.moments.assign([1.0])
    gradient = step(variable_rollout())
    assert gradient.entropy_weight == pytest.approx(0.01 * np.e, rel=1e-5)  # the weight this loss used
    expected = multiplier_step(1.0, gradient.entropy, np.log(3), 0.99)
    assert expected != 0.0
    learner.apply(gradient.grads, gradient.finite)
    assert net.entropy_multiplier.moments.numpy()[0] == pytest.approx(1.0 + expected, abs=1e-6)
    # Without a target the weight is --entropy-coef itself.
    fixed = GradientStep(build_actor_critic(tiny_config(tmp_path), 3, SHAPE, "fixed"), tiny_config(tmp_path))
    assert fixed(variable_rollout()).entropy_weight == 0.01


def test_without_a_target_the_network_has_no_multiplier(tmp_path):
    net = build_actor_critic(tiny_config(tmp_path), 3, SHAPE, "global")
    assert net.entropy_multiplier is None and len(net.statistics) == 2


def test_the_multiplier_is_saved_in_the_checkpoint(tmp_path):
    config = tiny_config(tmp_path, entropy_target=0.3)
    parts = build_global(config, spec())
    parts.learner.net.entropy_multiplier.moments.assign([2.5])
    prefix = parts.save(episodes=0, wall_seconds=1.0)
    restored = build_global(config, spec(), resume_prefix=prefix)
    np.testing.assert_array_equal(restored.learner.net.entropy_multiplier.moments.numpy(), [2.5])


@pytest.mark.parametrize("bad", [-0.1, 1.0, float("nan")])
def test_a_target_outside_0_1_is_refused(bad):
    with pytest.raises(ConfigError, match="--entropy-target must be in"):
        TrainConfig(entropy_target=bad).validate()


def test_resume_cannot_turn_the_target_on_or_off_but_can_move_it(tmp_path):
    saved = tiny_config(tmp_path, entropy_target=0.3)
    with pytest.raises(ConfigError, match="--entropy-target"):
        resolve_resumed_run(saved, {"entropy_target": 0.0}, "m")
    assert resolve_resumed_run(saved, {"entropy_target": 0.2}, "m").entropy_target == 0.2


def test_a_config_saved_before_the_target_existed_runs_without_one():
    """tests/fixtures/old_basic_checkpoint's config has no entropy_target: it loads as trained, with a fixed
    weight and a network without the multiplier (so its checkpoint restores as it was)."""
    import os

    from doom_a3c.run.saved_config import upgrade_saved_config
    from doom_a3c.runtime.checkpoint import read_checkpoint

    fixture = os.path.join(REPO_ROOT, "tests", "fixtures", "old_basic_checkpoint")
    saved = read_checkpoint(os.path.join(fixture, "last.ckpt"))
    assert "entropy_target" not in saved.config
    config = upgrade_saved_config(saved.config, "the fixture")
    assert config.entropy_target == 0.0
    net = build_actor_critic(config, saved.num_actions, (20, 20, 1), "old")
    assert net.entropy_multiplier is None
