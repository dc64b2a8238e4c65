"""Scale-free learning: returns in units of their running 5th-95th percentile range (DreamerV3), game variables
standardised by running statistics, and the statistics riding in the gradient list to the global network; the
maths against numbers computed by hand.
"""

import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo import normalization as norm
from doom_a3c.algo.gradients import process_gradients
from doom_a3c.algo.learner import GlobalLearner, GradientStep, learning_targets
from doom_a3c.algo.model.actor_critic import build_actor_critic
from doom_a3c.algo.model.layers import normalized_variables_tensor, return_scale_tensor
from doom_a3c.modes.build import build_global

from support import SHAPE, spec, tiny_config, variable_rollout

DECAY = norm.MOMENTS_DECAY


# ---- return normalisation: the maths by hand ----------------------------------------------------------------
def test_return_scale_is_the_debiased_running_percentile_range_by_hand():
    moments = np.zeros(3)
    assert norm.return_scale(moments) == 1.0  # nothing seen yet
    # 0, 1, ..., 20: numpy's linear percentiles are exactly 1 (5th) and 19 (95th).
    assert list(norm.return_targets(np.arange(21.0))) == [1.0, 1.0, 19.0]
    moments = moments + norm.moments_update(moments, norm.return_targets(np.arange(21.0)))
    np.testing.assert_allclose(moments, [0.01, 0.01, 0.19])  # 0.99 * 0 + 0.01 * target
    assert norm.return_scale(moments) == pytest.approx(18.0)  # (0.19 - 0.01) / 0.01: the first batch in full
    # 0, 2, ..., 40: percentiles 2 and 38, a range of 36. Debiased: (0.99 * 0.01 * 18 + 0.01 * 36) / (1 - 0.99^2).
    moments = moments + norm.moments_update(moments, norm.return_targets(np.arange(0.0, 41.0, 2.0)))
    np.testing.assert_allclose(moments, [0.0199, 0.0299, 0.5681])
    assert norm.return_scale(moments) == pytest.approx((0.99 * 18 + 36) / 1.99)  # 27.0452...


def test_small_returns_are_never_scaled_up():
    moments = np.zeros(3)
    moments = moments + norm.moments_update(moments, norm.return_targets(np.array([0.0, 0.1, 0.2])))
    assert norm.return_scale(moments) == 1.0  # advantages stay as they are


def test_a_lower_floor_scales_a_small_sparse_return_up_and_the_network_agrees(tmp_path):
    """--return-scale-floor 0.01 (a map with no preset): returns spanning 0.1 are divided by 0.1, not by 1; the
    network's value output uses the same S."""
    moments = np.zeros(3) + norm.moments_update(np.zeros(3), norm.return_targets(np.linspace(0.0, 0.1, 21)))
    assert norm.return_scale(moments, floor=0.01) == pytest.approx(0.09)  # 95th 0.095 - 5th 0.005
    assert norm.return_scale(moments, floor=1.0) == 1.0
    assert norm.return_scale(np.zeros(3), floor=0.01) == 1.0  # nothing seen yet
    np.testing.assert_allclose(np.array([0.009, -0.018]) / norm.return_scale(moments, floor=0.01), [0.1, -0.2])
    flat = norm.moments_update(np.zeros(3), norm.return_targets(np.zeros(10)))  # no reward yet: S = 0
    assert norm.return_scale(flat, floor=0.01) == 0.01
    for floor in (0.01, 1.0):
        scale = return_scale_tensor(tf.constant(moments, tf.float32), floor)
        assert float(scale) == pytest.approx(norm.return_scale(moments, floor), rel=1e-5)
    config = tiny_config(tmp_path, game_variables=[], normalize_variables=False, return_scale_floor=0.01)
    net = build_actor_critic(config, 3, SHAPE, "floor")
    assert net.return_scale_floor == 0.01


def test_returns_at_two_scales_give_the_same_normalised_advantages():
    """A stream of rollouts at a reward scale of 1 (ranges >= 1, so the floor stays out) and the same stream
    x1000: after each update the normalised advantages are the same numbers."""
    rng = np.random.default_rng(3)
    batches = [(rng.uniform(0, 5 + 3 * k, size=(10, 4)), rng.normal(size=(10, 4))) for k in range(5)]
    small, large = np.zeros(3), np.zeros(3)
    for returns, advantages in batches:
        small = small + norm.moments_update(small, norm.return_targets(returns))
        large = large + norm.moments_update(large, norm.return_targets(1000.0 * returns))
        assert norm.return_scale(small) > 1.0
        np.testing.assert_allclose(1000.0 * advantages / norm.return_scale(large), advantages / norm.return_scale(small),
                                   rtol=1e-9)
    # And by hand for the first: advantages are divided by the 95th - 5th percentile of the first returns.
    low, high = np.percentile(batches[0][0], [5, 95])
    one = np.zeros(3) + norm.moments_update(np.zeros(3), norm.return_targets(batches[0][0]))
    assert norm.return_scale(one) == pytest.approx(high - low, rel=1e-12)


def test_updates_from_stale_copies_add_up_as_gradients_do():
    """Each step is linear in the copy's moments: two workers stepping from the same copy move the global
    moments by the sum of their steps, and the debiasing weight counts both updates."""
    start = np.zeros(3)
    a = norm.moments_update(start, norm.return_targets(np.arange(21.0)))
    b = norm.moments_update(start, norm.return_targets(np.arange(0.0, 41.0, 2.0)))
    both = start + a + b
    assert both[0] == pytest.approx(0.02)
    assert norm.return_scale(both) == pytest.approx((18 + 36) / 2)


# ---- game variables: running standardisation ----------------------------------------------------------------
def test_variable_moments_by_hand_and_in_the_network():
    # HEALTH 100 and 50 (mean 75, deviation 25); AMMO 0 and 0 (never moves).
    variables = np.array([[100.0, 0.0], [50.0, 0.0]])
    moments = np.zeros(norm.variable_moments_size(2))
    np.testing.assert_allclose(norm.variable_targets(variables), [1.0, 75.0, 0.0, 6250.0, 0.0])
    moments = moments + norm.moments_update(moments, norm.variable_targets(variables))
    mean, std = norm.variable_mean_std(moments)
    np.testing.assert_allclose(mean, [75.0, 0.0])
    np.testing.assert_allclose(std, [np.sqrt(625.0 + 1e-4), 0.01])
    seen = norm.normalized_variables(np.array([[100.0, 0.0], [0.0, 1.0]]), moments)
    np.testing.assert_allclose(seen, [[25 / np.sqrt(625.0001), 0.0], [-3.0 / np.sqrt(1.00000016), 5.0]], rtol=1e-6)
    in_graph = normalized_variables_tensor(tf.constant([[100.0, 0.0], [0.0, 1.0]]), tf.constant(moments, tf.float32))
    np.testing.assert_allclose(in_graph.numpy(), seen, rtol=1e-5)
    # Before any update: the raw values, clipped.
    np.testing.assert_allclose(norm.normalized_variables(np.array([[100.0, 0.5]]), np.zeros(5)), [[5.0, 0.5]])


def test_the_global_learner_adds_each_rollouts_statistics_and_optimises_the_rest(tmp_path):
    config = tiny_config(tmp_path)
    net = build_actor_critic(config, 3, SHAPE, "global")
    assert len(net.statistics) == 2 and len(net.learned_variables) == len(net.trainable_variables) - 2
    learner = GlobalLearner(config, net)
    rollout = variable_rollout()
    step = GradientStep(net, config)
    before = [layer.moments.numpy().copy() for layer in net.statistics]
    expected = step.statistics_updates(rollout, learning_targets(config, rollout)[0])
    gradient = step(rollout)
    assert gradient.finite
    # Processing the list again, as a Ray parameter server does with what it receives, changes nothing but rounding:
    # a gradient clipped to norm 0.5 can measure 0.5 plus an ulp the second time, and be scaled by 1 - 6e-8.
    received = [tf.convert_to_tensor(g) for g in gradient.grads]
    for mode, bound in (("clip", config.clip_norm), ("normalize", config.normalize_norm)):
        reprocessed, _ = process_gradients(received, mode, bound)
        slots = net.statistics_slots()
        for slot in slots:
            np.testing.assert_allclose(reprocessed[slot].numpy(), received[slot].numpy(), rtol=1e-6, atol=0)
    learner.apply(process_gradients(received, "clip", config.clip_norm)[0], True)
    for layer, old, update in zip(net.statistics, before, expected):
        np.testing.assert_allclose(layer.moments.numpy(), old + update, rtol=1e-5, atol=1e-7)
    variables = rollout.observations["variables"].reshape(-1, 2)
    mean, _ = norm.variable_mean_std(net.variable_moments.moments.numpy())
    np.testing.assert_allclose(mean, variables.mean(axis=0), rtol=1e-5)
    assert net.variable_moments.moments.numpy()[0] == pytest.approx(1 - DECAY)


def test_a_gradient_is_the_same_at_reward_scales_1_and_1000(tmp_path):
    """Two copies of one network whose return statistics differ by x1000, fed the same rollout with rewards
    and values x1000: the value outputs differ by x1000 and the gradients (policy and critic) are the same."""
    config = tiny_config(tmp_path, game_variables=[], normalize_variables=False)
    small = build_actor_critic(config, 3, SHAPE, "small")
    large = build_actor_critic(config, 3, SHAPE, "large")
    for a, b in zip(small.trainable_variables, large.trainable_variables):
        b.assign(a)
    small.return_moments.moments.assign([0.01, 0.02, 0.1])  # debiased low 2, high 10: S = 8
    large.return_moments.moments.assign([0.01, 20.0, 100.0])  # S = 8000
    observations = np.random.default_rng(1).integers(0, 256, (2, *SHAPE)).astype(np.uint8)
    out_small = small.step(observations, small.initial_state(2), tf.ones([2]))
    out_large = large.step(observations, large.initial_state(2), tf.ones([2]))
    np.testing.assert_allclose(out_large.values.numpy(), 1000 * out_small.values.numpy(), rtol=1e-5)

    rollout = variable_rollout()
    pixels = rollout._replace(observations=np.ascontiguousarray(rollout.observations["frame"]))
    scaled = pixels._replace(rewards=1000 * pixels.rewards, values=1000 * pixels.values,
                             bootstrap_values=1000 * pixels.bootstrap_values)
    g_small, g_large = GradientStep(small, config)(pixels), GradientStep(large, config)(scaled)
    assert g_small.policy_loss == pytest.approx(g_large.policy_loss, rel=1e-4)
    assert g_small.value_loss == pytest.approx(g_large.value_loss, rel=1e-4)
    slots = set(small.statistics_slots())
    for i, (a, b) in enumerate(zip(g_small.grads, g_large.grads)):
        if i in slots:  # the statistics' own steps: x1000 for the percentiles, the same for the weight
            np.testing.assert_allclose(b.numpy()[1:], 1000 * a.numpy()[1:], rtol=1e-4)
        else:
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-3, atol=1e-6)


def test_statistics_are_saved_in_the_checkpoint(tmp_path):
    config = tiny_config(tmp_path)
    parts = build_global(config, spec())
    parts.learner.net.return_moments.moments.assign([0.5, 1.0, 2.0])
    parts.learner.net.variable_moments.moments.assign([0.5, 1.0, 2.0, 3.0, 4.0])
    prefix = parts.save(episodes=0, wall_seconds=1.0)
    restored = build_global(config, spec(), resume_prefix=prefix)
    np.testing.assert_array_equal(restored.learner.net.return_moments.moments.numpy(), [0.5, 1.0, 2.0])
    np.testing.assert_array_equal(restored.learner.net.variable_moments.moments.numpy(), [0.5, 1.0, 2.0, 3.0, 4.0])
