"""doom_a3c/algo/gradients.py against hand-computed numbers.

Two gradient tensors throughout: g1 = [3, 4] (L2 norm 5, 2 elements, average norm 2.5) and
g2 = [[0, 0], [0, 12]] (L2 norm 12, 4 elements, average norm 3). Joint L2 norm sqrt(25 + 144) = 13.
"""
import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo.gradients import clip_gradients, normalize_gradients, process_gradients


def _grads():
    return [tf.constant([3.0, 4.0]), tf.constant([[0.0, 0.0], [0.0, 12.0]])]


def test_clip_scales_everything_by_one_factor():
    clipped, norm = clip_gradients(_grads(), 2.6)
    # scale 2.6 / 13 = 0.2: g1 -> [0.6, 0.8], g2 -> [[0, 0], [0, 2.4]]
    assert float(norm) == pytest.approx(13.0)
    np.testing.assert_allclose(clipped[0], [0.6, 0.8], rtol=1e-6)
    np.testing.assert_allclose(clipped[1], [[0.0, 0.0], [0.0, 2.4]], rtol=1e-6)


def test_clip_below_the_bound_changes_nothing():
    clipped, norm = clip_gradients(_grads(), 40.0)
    assert float(norm) == pytest.approx(13.0)
    np.testing.assert_allclose(clipped[0], [3.0, 4.0])


def test_normalize_scales_only_the_tensor_over_its_average_norm():
    normalized, norm = normalize_gradients(_grads(), 2.6)
    # g1: average norm 2.5 <= 2.6, unchanged
    # g2: average norm 3 > 2.6, scaled by 2.6 / 3: 12 -> 10.4
    assert float(norm) == pytest.approx(13.0)  # reported norm is the input's global norm
    np.testing.assert_allclose(normalized[0], [3.0, 4.0], rtol=1e-6)
    np.testing.assert_allclose(normalized[1], [[0.0, 0.0], [0.0, 10.4]], rtol=1e-6)


def test_normalize_both_over_the_bound():
    normalized, _ = normalize_gradients(_grads(), 1.0)
    # g1: scale 1 / 2.5 = 0.4 -> [1.2, 1.6]; g2: scale 1 / 3 -> [[0, 0], [0, 4]]
    np.testing.assert_allclose(normalized[0], [1.2, 1.6], rtol=1e-6)
    np.testing.assert_allclose(normalized[1], [[0.0, 0.0], [0.0, 4.0]], rtol=1e-6)


def test_normalize_bound_grows_with_tensor_size():
    """Same L2 norm 5, but 2 vs 100 elements: only the small tensor is scaled at clip_norm 1."""
    big = np.zeros(100, np.float32)
    big[:2] = [3.0, 4.0]
    normalized, _ = normalize_gradients([tf.constant([3.0, 4.0]), tf.constant(big)], 1.0)
    # small: average 5/2 = 2.5 > 1 -> scale 0.4; big: average 5/100 = 0.05 <= 1 -> unchanged
    np.testing.assert_allclose(normalized[0], [1.2, 1.6], rtol=1e-6)
    np.testing.assert_allclose(normalized[1], big)


def test_normalize_matches_tf1_clip_by_average_norm():
    """--gradient-mode normalize is TF1's clip_by_average_norm per tensor; compat.v1 still ships it."""
    if not hasattr(tf.compat.v1, "clip_by_average_norm"):
        pytest.skip("tf.compat.v1.clip_by_average_norm is gone from this TensorFlow")
    rng = np.random.default_rng(0)
    grads = [tf.constant(rng.normal(size=shape).astype(np.float32)) for shape in [(3,), (4, 5), (2, 3, 3)]]
    normalized, _ = normalize_gradients(grads, 0.1)
    for g, ours in zip(grads, normalized):
        np.testing.assert_allclose(ours, tf.compat.v1.clip_by_average_norm(g, 0.1), rtol=1e-6)


def test_none_gradients_pass_through_and_zero_gradients_stay_finite():
    for mode in ("clip", "normalize"):
        grads, norm = process_gradients([None, tf.zeros(3), tf.zeros((0,))], mode, 1.0)
        assert grads[0] is None
        np.testing.assert_array_equal(grads[1], [0.0, 0.0, 0.0])
        assert grads[2].shape == (0,)
        assert float(norm) == 0.0


@pytest.mark.parametrize("mode, expected_g2", [("clip", 2.4), ("normalize", 10.4)])
def test_process_gradients_dispatches_inside_tf_function(mode, expected_g2):
    @tf.function
    def step(g1, g2):
        return process_gradients([g1, g2], mode, 2.6)

    grads, norm = step(*_grads())
    assert float(norm) == pytest.approx(13.0)
    assert float(grads[1][1, 1]) == pytest.approx(expected_g2)


def test_unknown_mode_is_rejected():
    with pytest.raises(ValueError, match="clip"):
        process_gradients(_grads(), "average", 1.0)
