"""doom_a3c/algo/returns.py against values worked out by hand."""
import numpy as np
import pytest

from doom_a3c.algo.returns import discount, discounted_returns, generalized_advantages, standardized

R = np.array([1.0, 2.0, 3.0])
V = np.array([0.5, 1.0, 2.0])


def test_discount_plain():
    """y[t] = x[t] + gamma*y[t+1]."""
    # y2 = 3, y1 = 2 + 0.5*3 = 3.5, y0 = 1 + 0.5*3.5 = 2.75
    np.testing.assert_allclose(discount(R, 0.5), [2.75, 3.5, 3.0])


def test_discount_gamma_one_and_zero():
    """gamma=1 is a reversed cumulative sum, gamma=0 the identity."""
    np.testing.assert_allclose(discount(R, 1.0), [6.0, 5.0, 3.0])
    np.testing.assert_allclose(discount(R, 0.0), [1.0, 2.0, 3.0])


def test_returns_episode_ended_at_last_step_ignores_bootstrap():
    """dones[-1]=1: the bootstrap value must not be added."""
    out = discounted_returns(R, np.array([0, 0, 1]), bootstrap_value=100.0, gamma=0.5)
    # R2 = 3, R1 = 2 + 0.5*3 = 3.5, R0 = 1 + 0.5*3.5 = 2.75
    np.testing.assert_allclose(out, [2.75, 3.5, 3.0])
    assert out.dtype == np.float32


def test_returns_with_bootstrap():
    """A rollout cut mid-episode bootstraps from V(s_T)."""
    out = discounted_returns(R, np.array([0, 0, 0]), bootstrap_value=4.0, gamma=0.5)
    # R2 = 3 + 0.5*4 = 5, R1 = 2 + 0.5*5 = 4.5, R0 = 1 + 0.5*4.5 = 3.25
    np.testing.assert_allclose(out, [3.25, 4.5, 5.0])


def test_returns_episode_end_inside_rollout():
    """No credit crosses an episode boundary; only the last segment bootstraps."""
    out = discounted_returns(R, np.array([0, 1, 0]), bootstrap_value=4.0, gamma=0.5)
    # segment [0,1] ended: R1 = 2, R0 = 1 + 0.5*2 = 2; segment [2] cut: R2 = 3 + 0.5*4 = 5
    np.testing.assert_allclose(out, [2.0, 2.0, 5.0])


def test_returns_done_on_first_and_consecutive_steps():
    """dones=[1,1,0]: two one-step episodes, then a cut segment."""
    out = discounted_returns(R, np.array([1, 1, 0]), bootstrap_value=4.0, gamma=0.5)
    # R0 = 1, R1 = 2, R2 = 3 + 0.5*4 = 5
    np.testing.assert_allclose(out, [1.0, 2.0, 5.0])


def test_returns_float_dones_as_the_worker_passes_them():
    """The worker stores dones as float32 0./1."""
    out = discounted_returns(R.astype(np.float32), np.array([0.0, 1.0, 0.0], np.float32), 4.0, 0.5)
    np.testing.assert_allclose(out, [2.0, 2.0, 5.0])


def test_gae_lambda_one_equals_returns_minus_values():
    """lambda=1: A_t = R_t - V(s_t)."""
    adv = generalized_advantages(R, V, np.array([0, 0, 0]), 4.0, gamma=0.5, lam=1.0)
    # returns [3.25, 4.5, 5] - values [0.5, 1, 2]
    np.testing.assert_allclose(adv, [2.75, 3.5, 3.0])
    ret = discounted_returns(R, np.array([0, 0, 0]), 4.0, 0.5)
    np.testing.assert_allclose(adv, ret - V, rtol=1e-6)


def test_gae_lambda_one_with_episode_end_inside():
    """lambda=1 with dones=[0,1,0] still equals returns minus values."""
    dones = np.array([0, 1, 0])
    adv = generalized_advantages(R, V, dones, 4.0, gamma=0.5, lam=1.0)
    # returns [2, 2, 5] - values [0.5, 1, 2]
    np.testing.assert_allclose(adv, [1.5, 1.0, 3.0])


def test_gae_lambda_zero_is_one_step_td_error():
    """lambda=0: A_t = r_t + gamma V(s_{t+1}) - V(s_t)."""
    adv = generalized_advantages(R, V, np.array([0, 0, 0]), 4.0, gamma=0.5, lam=0.0)
    # d0 = 1 + 0.5*1 - 0.5 = 1, d1 = 2 + 0.5*2 - 1 = 2, d2 = 3 + 0.5*4 - 2 = 3
    np.testing.assert_allclose(adv, [1.0, 2.0, 3.0])


def test_gae_lambda_zero_terminal_step_has_no_next_value():
    """At an episode end the TD target is just the reward."""
    adv = generalized_advantages(R, V, np.array([0, 1, 0]), 4.0, gamma=0.5, lam=0.0)
    # d0 = 1 + 0.5*V1 - V0 = 1 + 0.5 - 0.5 = 1, d1 = 2 - 1 = 1, d2 = 3 + 0.5*4 - 2 = 3
    np.testing.assert_allclose(adv, [1.0, 1.0, 3.0])


def test_gae_lambda_half_hand_computed():
    """lambda=0.5, gamma=0.5: deltas discounted by 0.25."""
    adv = generalized_advantages(R, V, np.array([0, 0, 0]), 4.0, gamma=0.5, lam=0.5)
    # deltas [1, 2, 3]; A2 = 3, A1 = 2 + 0.25*3 = 2.75, A0 = 1 + 0.25*2.75 = 1.6875
    np.testing.assert_allclose(adv, [1.6875, 2.75, 3.0])


def test_batched_input_equals_column_by_column():
    """[T, B] input with per-column bootstraps equals B separate 1-D calls."""
    rng = np.random.default_rng(0)
    T, B = 7, 4
    rewards = rng.normal(size=(T, B))
    values = rng.normal(size=(T, B))
    dones = np.zeros((T, B))
    dones[2, 1] = dones[6, 2] = dones[0, 3] = dones[4, 3] = 1
    boot = np.array([0.3, -1.2, 5.0, 2.0])
    ret = discounted_returns(rewards, dones, boot, 0.9)
    adv = generalized_advantages(rewards, values, dones, boot, 0.9, 0.7)
    assert ret.shape == adv.shape == (T, B)
    for b in range(B):
        np.testing.assert_allclose(ret[:, b], discounted_returns(rewards[:, b], dones[:, b], boot[b], 0.9), rtol=1e-6)
        np.testing.assert_allclose(adv[:, b], generalized_advantages(rewards[:, b], values[:, b], dones[:, b],
                                                                     boot[b], 0.9, 0.7), rtol=1e-6)
    # column 2 ended at the last step: its bootstrap (5.0) must not matter
    np.testing.assert_allclose(ret[-1, 2], rewards[-1, 2], rtol=1e-6)


def test_batched_hand_computed_columns():
    """Two columns written out by hand, one cut and one ended inside."""
    rewards = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    dones = np.array([[0, 0], [0, 1], [0, 0]])
    out = discounted_returns(rewards, dones, np.array([4.0, 4.0]), 0.5)
    np.testing.assert_allclose(out, [[3.25, 2.0], [4.5, 2.0], [5.0, 5.0]])


def test_batched_scalar_bootstrap_broadcasts():
    """A scalar bootstrap applies to every column."""
    rewards = np.stack([R, R], axis=1)
    out = discounted_returns(rewards, np.zeros((3, 2)), 4.0, 0.5)
    np.testing.assert_allclose(out, [[3.25, 3.25], [4.5, 4.5], [5.0, 5.0]])


@pytest.mark.parametrize("gamma", [0.0, 0.5, 0.99, 1.0])
def test_returns_match_naive_loop(gamma):
    """Against a plain backwards loop on a longer random rollout."""
    rng = np.random.default_rng(1)
    rewards = rng.normal(size=40)
    dones = (rng.random(40) < 0.15).astype(float)
    dones[-1] = 0
    expected, running = np.zeros(40), 2.5
    for t in reversed(range(40)):
        running = rewards[t] + gamma * (0.0 if dones[t] else running)
        expected[t] = running
    np.testing.assert_allclose(discounted_returns(rewards, dones, 2.5, gamma), expected, rtol=1e-5, atol=1e-5)


def test_standardized_by_hand():
    # mean 2.5, std sqrt(((1.5^2 + 0.5^2) * 2) / 4) = sqrt(1.25) = 1.1180
    out = standardized(np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_allclose(out, [[-1.3416408, -0.4472136], [0.4472136, 1.3416408]], rtol=1e-6)
    assert out.dtype == np.float32
    np.testing.assert_allclose(standardized(np.full(5, 7.0)), np.zeros(5))  # no spread: all zero, no NaN
