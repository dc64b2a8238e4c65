"""n_step_targets (doom_a3c/algo/returns.py) against values worked out by hand.

One 5-step rollout throughout: gamma = 0.5, rewards r = [1, 2, 3, 4, 5],
values V(s_0..s_4) = [2, 4, 6, 8, 10], bootstrap V(s_5) = 16.
"""
import numpy as np
import pytest

from doom_a3c.algo.returns import discounted_returns, n_step_targets

GAMMA = 0.5
R = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
V = np.array([2.0, 4.0, 6.0, 8.0, 10.0])
BOOT = 16.0
NO_END = np.zeros(5)
END_AT_2 = np.array([0, 0, 1, 0, 0])


@pytest.mark.parametrize("variant", ["zero", "max"])
def test_one_step_is_td_target_in_both_variants(variant):
    """n=1: G_t = r_t + gamma V(s_{t+1}); the horizon never overruns, so the variants agree."""
    out = n_step_targets(R, V, NO_END, BOOT, GAMMA, 1, variant)
    # 1+0.5*4=3, 2+0.5*6=5, 3+0.5*8=7, 4+0.5*10=9, 5+0.5*16=13
    np.testing.assert_allclose(out, [3.0, 5.0, 7.0, 9.0, 13.0])
    assert out.dtype == np.float32


@pytest.mark.parametrize("variant", ["zero", "max"])
def test_one_step_with_episode_end(variant):
    """n=1, episode ends at t=2: step 2 gets only its reward, V(s_3) belongs to the next episode."""
    out = n_step_targets(R, V, END_AT_2, BOOT, GAMMA, 1, variant)
    # t0 = 3, t1 = 5, t2 = 3 (terminal, no bootstrap), t3 = 9, t4 = 5 + 0.5*16 = 13
    np.testing.assert_allclose(out, [3.0, 5.0, 3.0, 9.0, 13.0])


def test_three_step_max_bootstraps_at_rollout_end():
    """n=3 "max": the last two steps shorten their horizon and bootstrap from V(s_5)."""
    out = n_step_targets(R, V, NO_END, BOOT, GAMMA, 3, "max")
    # t0 = 1 + 0.5*2 + 0.25*3 + 0.125*V3 = 1 + 1 + 0.75 + 1     = 3.75
    # t1 = 2 + 0.5*3 + 0.25*4 + 0.125*V4 = 2 + 1.5 + 1 + 1.25   = 5.75
    # t2 = 3 + 0.5*4 + 0.25*5 + 0.125*16 = 3 + 2 + 1.25 + 2     = 8.25
    # t3 = 4 + 0.5*5 + 0.25*16           = 4 + 2.5 + 4          = 10.5
    # t4 = 5 + 0.5*16                                           = 13
    np.testing.assert_allclose(out, [3.75, 5.75, 8.25, 10.5, 13.0])


def test_three_step_zero_drops_terms_past_the_rollout():
    """n=3 "zero": same as "max" up to t=2 (horizon ends on s_5), then no bootstrap at all."""
    out = n_step_targets(R, V, NO_END, BOOT, GAMMA, 3, "zero")
    # t0..t2 as in "max": 3.75, 5.75, 8.25 (t2 = 3 + 2 + 1.25 + 0.125*16 uses the bootstrap)
    # t3 = 4 + 0.5*5 + [r_5, V(s_6) missing] = 6.5
    # t4 = 5 + [r_5, r_6, V(s_7) missing]    = 5
    np.testing.assert_allclose(out, [3.75, 5.75, 8.25, 6.5, 5.0])


def test_three_step_with_episode_end_inside():
    """n=3, episode ends at t=2: the ended segment is identical in both variants."""
    zero = n_step_targets(R, V, END_AT_2, BOOT, GAMMA, 3, "zero")
    full = n_step_targets(R, V, END_AT_2, BOOT, GAMMA, 3, "max")
    # ended segment [0, 2]: t0 = 1 + 0.5*2 + 0.25*3 = 2.75 (V(s_3) is terminal -> 0),
    #                       t1 = 2 + 0.5*3 = 3.5, t2 = 3
    # cut segment [3, 4], "max":  t3 = 4 + 0.5*5 + 0.25*16 = 10.5, t4 = 5 + 0.5*16 = 13
    # cut segment [3, 4], "zero": t3 = 4 + 0.5*5 = 6.5,           t4 = 5
    np.testing.assert_allclose(full, [2.75, 3.5, 3.0, 10.5, 13.0])
    np.testing.assert_allclose(zero, [2.75, 3.5, 3.0, 6.5, 5.0])


@pytest.mark.parametrize("variant", ["zero", "max"])
def test_episode_end_at_last_step_ignores_bootstrap(variant):
    """dones[-1]=1: V(s_5) must not be used by either variant."""
    dones = np.array([0, 0, 0, 0, 1])
    out = n_step_targets(R, V, dones, 1000.0, GAMMA, 3, variant)
    # t0..t1 as before: 3.75, 5.75; t2 = 3 + 0.5*4 + 0.25*5 = 6.25; t3 = 4 + 2.5 = 6.5; t4 = 5
    np.testing.assert_allclose(out, [3.75, 5.75, 6.25, 6.5, 5.0])


@pytest.mark.parametrize("n", [5, 6, 50])
def test_max_with_long_horizon_equals_discounted_returns(n):
    """n >= T: "max" is the full discounted return with bootstrap."""
    out = n_step_targets(R, V, NO_END, BOOT, GAMMA, n, "max")
    # R4 = 5 + 8 = 13, R3 = 4 + 6.5 = 10.5, R2 = 3 + 5.25 = 8.25, R1 = 2 + 4.125 = 6.125, R0 = 1 + 3.0625
    np.testing.assert_allclose(out, [4.0625, 6.125, 8.25, 10.5, 13.0])
    np.testing.assert_allclose(out, discounted_returns(R, NO_END, BOOT, GAMMA))
    np.testing.assert_allclose(n_step_targets(R, V, END_AT_2, BOOT, GAMMA, n, "max"),
                               discounted_returns(R, END_AT_2, BOOT, GAMMA))


def test_zero_with_horizon_longer_than_rollout_never_bootstraps():
    """n > T: every horizon overruns, so "zero" is the discounted return with V(s_T) taken as 0."""
    out = n_step_targets(R, V, NO_END, BOOT, GAMMA, 6, "zero")
    np.testing.assert_allclose(out, discounted_returns(R, NO_END, 0.0, GAMMA))
    # n = T exactly: only t0's horizon lands on s_5: 4.0625 as in "max"; t1 = 2+1.5+1+0.625 = 5.125
    np.testing.assert_allclose(n_step_targets(R, V, NO_END, BOOT, GAMMA, 5, "zero")[:2], [4.0625, 5.125])


@pytest.mark.parametrize("variant", ["zero", "max"])
def test_batched_input_equals_column_by_column(variant):
    """[T, B] with per-column bootstraps equals B separate [T] calls."""
    rng = np.random.default_rng(0)
    T, B = 9, 4
    rewards, values = rng.normal(size=(T, B)), rng.normal(size=(T, B))
    dones = np.zeros((T, B), np.float32)
    dones[2, 1] = dones[8, 2] = dones[0, 3] = dones[5, 3] = 1
    boot = np.array([0.3, -1.2, 5.0, 2.0])
    out = n_step_targets(rewards, values, dones, boot, 0.9, 4, variant)
    assert out.shape == (T, B) and out.dtype == np.float32
    for b in range(B):
        np.testing.assert_allclose(out[:, b], n_step_targets(rewards[:, b], values[:, b], dones[:, b],
                                                             boot[b], 0.9, 4, variant), rtol=1e-6)


def test_batched_hand_computed_and_scalar_bootstrap():
    """Two columns by hand (one cut, one ended at t=2); a scalar bootstrap applies to both."""
    rewards, values = np.stack([R, R], axis=1), np.stack([V, V], axis=1)
    dones = np.stack([NO_END, END_AT_2], axis=1)
    out = n_step_targets(rewards, values, dones, BOOT, GAMMA, 3, "max")
    np.testing.assert_allclose(out, np.stack([[3.75, 5.75, 8.25, 10.5, 13.0], [2.75, 3.5, 3.0, 10.5, 13.0]], 1))


def _seed_style_missing_as_zero(rewards, values, terms, gamma):
    """A plain loop of the missing-terms-as-0 variant on a whole episode: `terms` terms per target, the last of them
    a value, stopping at the end of the data."""
    targets = np.zeros(len(rewards))
    for t in range(len(rewards)):
        for k in range(terms):
            if t + k >= len(rewards):
                break
            targets[t] += gamma ** k * (values[t + k] if k == terms - 1 else rewards[t + k])
    return targets


@pytest.mark.parametrize("terms", [2, 3, 5])
def test_zero_matches_seed_variant_with_n_one_less_than_its_term_count(terms):
    """On a rollout that ends its episode, "zero" with n equals the plain loop with n + 1 terms."""
    rng = np.random.default_rng(3)
    rewards, values = rng.normal(size=6), rng.normal(size=6)
    dones = np.array([0, 0, 0, 0, 0, 1])
    np.testing.assert_allclose(n_step_targets(rewards, values, dones, 99.0, 0.9, terms - 1, "zero"),
                               _seed_style_missing_as_zero(rewards, values, terms, 0.9), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("variant", ["zero", "max"])
@pytest.mark.parametrize("n", [1, 2, 4, 7])
def test_matches_naive_loop(variant, n):
    """Against a direct sum over a longer random rollout with several episode ends."""
    rng = np.random.default_rng(n)
    T, gamma, boot = 20, 0.9, 2.5
    rewards, values = rng.normal(size=T), rng.normal(size=T)
    dones = (rng.random(T) < 0.2).astype(float)
    dones[-1] = 0
    expected = np.zeros(T)
    for t in range(T):
        k = 0
        while k < n:
            expected[t] += gamma ** k * rewards[t + k]
            if dones[t + k]:
                break  # terminal: nothing further, value 0
            k += 1
            if t + k == T:
                if variant == "max" or k == n:
                    expected[t] += gamma ** k * boot
                break
        else:
            expected[t] += gamma ** n * values[t + n]
    np.testing.assert_allclose(n_step_targets(rewards, values, dones, boot, gamma, n, variant), expected,
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n, variant", [(0, "max"), (2.5, "max"), (3, "seed")])
def test_bad_arguments_are_rejected(n, variant):
    with pytest.raises(ValueError):
        n_step_targets(R, V, NO_END, BOOT, GAMMA, n, variant)
