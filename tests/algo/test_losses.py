"""a3c_loss on tiny tensors against hand computation."""
import math

import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo.losses import a3c_loss

LN2 = math.log(2.0)

# T=2, B=2, A=2.
# t=0: column 0 logits [0, 0] -> p = [1/2, 1/2]; column 1 logits [0, ln 3] -> p = [1/4, 3/4]
# t=1: both columns logits [0, 0] -> p = [1/2, 1/2]
LOGITS = [[[0.0, 0.0], [0.0, math.log(3.0)]],
          [[0.0, 0.0], [0.0, 0.0]]]
ACTIONS = [[1, 0], [0, 0]]
ADVANTAGES = [[2.0, 3.0], [1.0, 1.0]]
RETURNS = [[1.0, 0.0], [0.0, 0.0]]
VALUES = [[0.5, 1.0], [0.0, 0.0]]

# policy = -sum(log pi(a) * adv) / B
#        = -(ln(1/2)*2 + ln(1/4)*3 + ln(1/2)*1 + ln(1/2)*1) / 2 = (2 ln2 + 6 ln2 + ln2 + ln2) / 2 = 5 ln2
POLICY = 5 * LN2
# value = 0.5 * sum((R - V)^2) / B = 0.5 * (0.5^2 + 1^2 + 0 + 0) / 2 = 0.3125
VALUE = 0.3125
# entropy = -sum(p log p) / B = (ln2 + (1/4 ln4 + 3/4 ln(4/3)) + ln2 + ln2) / 2
ENTROPY = (3 * LN2 + 0.25 * math.log(4.0) + 0.75 * math.log(4.0 / 3.0)) / 2


def _loss(value_coef=0.5, policy_coef=1.0, entropy_coef=0.01, logits=LOGITS, values=VALUES,
          returns=RETURNS, advantages=ADVANTAGES):
    return a3c_loss(tf.constant(logits, tf.float32), tf.constant(values, tf.float32),
                    tf.constant(ACTIONS, tf.int32), tf.constant(returns, tf.float32),
                    tf.constant(advantages, tf.float32), value_coef, policy_coef, entropy_coef)


def test_terms_match_hand_computation():
    """policy, value and entropy terms."""
    terms = _loss()
    assert float(terms.policy) == pytest.approx(POLICY, rel=1e-6)
    assert float(terms.value) == pytest.approx(VALUE, rel=1e-6)
    assert float(terms.entropy) == pytest.approx(ENTROPY, rel=1e-6)


@pytest.mark.parametrize("value_coef,policy_coef,entropy_coef", [(0.5, 1.0, 0.01), (0.25, 2.0, 0.1), (1.0, 0.0, 0.0)])
def test_total_combines_terms_with_coefficients(value_coef, policy_coef, entropy_coef):
    """total = policy_coef*p + value_coef*v - entropy_coef*e."""
    terms = _loss(value_coef, policy_coef, entropy_coef)
    expected = policy_coef * POLICY + value_coef * VALUE - entropy_coef * ENTROPY
    assert float(terms.total) == pytest.approx(expected, rel=1e-6)


def test_terms_are_averaged_over_batch_not_time():
    """Doubling B with copies of the same column leaves every term unchanged; doubling T doubles it."""
    base = _loss()
    dup_b = a3c_loss(tf.constant(np.concatenate([LOGITS, LOGITS], 1), tf.float32),
                     tf.constant(np.concatenate([VALUES, VALUES], 1), tf.float32),
                     tf.constant(np.concatenate([ACTIONS, ACTIONS], 1), tf.int32),
                     tf.constant(np.concatenate([RETURNS, RETURNS], 1), tf.float32),
                     tf.constant(np.concatenate([ADVANTAGES, ADVANTAGES], 1), tf.float32), 0.5, 1.0, 0.01)
    dup_t = a3c_loss(tf.constant(np.concatenate([LOGITS, LOGITS], 0), tf.float32),
                     tf.constant(np.concatenate([VALUES, VALUES], 0), tf.float32),
                     tf.constant(np.concatenate([ACTIONS, ACTIONS], 0), tf.int32),
                     tf.constant(np.concatenate([RETURNS, RETURNS], 0), tf.float32),
                     tf.constant(np.concatenate([ADVANTAGES, ADVANTAGES], 0), tf.float32), 0.5, 1.0, 0.01)
    for name in ("policy", "value", "entropy", "total"):
        assert float(getattr(dup_b, name)) == pytest.approx(float(getattr(base, name)), rel=1e-6)
        assert float(getattr(dup_t, name)) == pytest.approx(2 * float(getattr(base, name)), rel=1e-6)


def test_no_gradient_into_returns_or_advantages():
    """Returns and advantages are targets: their gradients are None; values and logits get the right ones."""
    logits = tf.Variable(LOGITS, dtype=tf.float32)
    values = tf.Variable(VALUES, dtype=tf.float32)
    returns = tf.Variable(RETURNS, dtype=tf.float32)
    advantages = tf.Variable(ADVANTAGES, dtype=tf.float32)
    with tf.GradientTape() as tape:
        terms = a3c_loss(logits, values, tf.constant(ACTIONS), returns, advantages, 0.5, 1.0, 0.01)
    g_logits, g_values, g_returns, g_adv = tape.gradient(terms.total, [logits, values, returns, advantages])
    assert g_returns is None
    assert g_adv is None
    # d total / d V = value_coef * (V - R) / B = 0.5 * ([[0.5-1, 1-0], [0, 0]]) / 2
    np.testing.assert_allclose(g_values.numpy(), [[-0.125, 0.25], [0.0, 0.0]], atol=1e-6)
    assert np.all(np.isfinite(g_logits.numpy())) and np.abs(g_logits.numpy()).max() > 0


def test_policy_gradient_sign_with_zero_entropy_coef():
    """With a positive advantage, minimising the loss raises the taken action's logit."""
    logits = tf.Variable([[[0.0, 0.0]]])
    with tf.GradientTape() as tape:
        terms = a3c_loss(logits, tf.zeros([1, 1]), tf.constant([[1]]), tf.zeros([1, 1]), tf.constant([[1.0]]),
                         0.5, 1.0, 0.0)
    grad = tape.gradient(terms.total, logits).numpy()[0, 0]
    # d(-log softmax(z)_1)/dz = p - onehot(1) = [0.5, -0.5]
    np.testing.assert_allclose(grad, [0.5, -0.5], atol=1e-6)


def test_very_negative_logits_give_finite_loss_and_gradients():
    """log pi(a) of a near-impossible action stays finite (log-softmax, not log(softmax))."""
    logits = tf.Variable([[[-1e4, 0.0, 0.0], [0.0, -3e4, 50.0]]])
    with tf.GradientTape() as tape:
        terms = a3c_loss(logits, tf.zeros([1, 2]), tf.constant([[0, 1]]), tf.zeros([1, 2]), tf.constant([[1.0, 1.0]]),
                         0.5, 1.0, 0.01)
    for name in ("total", "policy", "value", "entropy"):
        assert np.isfinite(float(getattr(terms, name))), name
    # log pi(a0) = -1e4 - ln 2; log pi(a1) = -3e4 - 50 (up to e^-50): policy = (1e4 + ln2 + 3e4 + 50) / 2
    assert float(terms.policy) == pytest.approx((1e4 + LN2 + 3e4 + 50.0) / 2, rel=1e-5)
    assert np.all(np.isfinite(tape.gradient(terms.total, logits).numpy()))
