"""doom_a3c/algo/exploration.py: epsilon schedule, per-worker epsilons, epsilon-greedy action swap."""
import numpy as np
import pytest

from doom_a3c.algo.exploration import apply_epsilon, epsilon_at, worker_epsilons


def test_schedule_by_hand():
    """0.4 -> 0.15 over 100 steps: slope -0.0025 per step, then flat."""
    assert epsilon_at(0, 0.4, 0.15, 100) == pytest.approx(0.4)
    assert epsilon_at(20, 0.4, 0.15, 100) == pytest.approx(0.35)  # 0.4 - 20*0.0025
    assert epsilon_at(50, 0.4, 0.15, 100) == pytest.approx(0.275)  # 0.4 - 50*0.0025
    assert epsilon_at(100, 0.4, 0.15, 100) == pytest.approx(0.15)
    assert epsilon_at(10_000, 0.4, 0.15, 100) == pytest.approx(0.15)


def test_schedule_without_decay_phase_is_flat():
    assert epsilon_at(0, 1.0, 0.1, 0) == pytest.approx(0.1)
    assert epsilon_at(-5, 1.0, 0.1, 10) == pytest.approx(1.0)  # negative steps clamp to the start


def test_same_spread_repeats_the_final_value():
    np.testing.assert_allclose(worker_epsilons(4, 0.4, 0.15), [0.15] * 4)
    np.testing.assert_allclose(worker_epsilons(1, 0.4, 0.15, "geometric"), [0.15])


def test_linear_spread_by_hand():
    # step (0.4 - 0.1) / 3 = 0.1
    np.testing.assert_allclose(worker_epsilons(4, 0.4, 0.1, "linear"), [0.1, 0.2, 0.3, 0.4])


def test_geometric_spread_by_hand():
    # ratio start/end = 0.8/0.1 = 8, so 0.1 * 8 ** (i/3) = 0.1, 0.2, 0.4, 0.8
    np.testing.assert_allclose(worker_epsilons(4, 0.8, 0.1, "geometric"), [0.1, 0.2, 0.4, 0.8])


@pytest.mark.parametrize("spread", ["linear", "geometric"])
def test_worker_epsilons_distinct_and_within_range(spread):
    finals = worker_epsilons(8, 0.4, 0.15, spread)
    assert finals.shape == (8,)
    assert len(np.unique(finals)) == 8
    assert np.all(finals >= 0.15 - 1e-12) and np.all(finals <= 0.4 + 1e-12)
    assert finals[0] == pytest.approx(0.15)  # worker 0 keeps the configured value


def test_bad_spread_arguments_say_what_to_do():
    with pytest.raises(ValueError, match="one of"):
        worker_epsilons(4, 0.4, 0.1, "apex")
    with pytest.raises(ValueError, match="linear"):
        worker_epsilons(4, 0.4, 0.0, "geometric")


def test_epsilon_zero_leaves_actions_unchanged():
    actions = np.array([0, 3, 1, 2, 2], np.int32)
    out = apply_epsilon(actions, 4, 0.0, np.random.default_rng(0))
    np.testing.assert_array_equal(out, actions)
    assert out.dtype == np.int32


def test_epsilon_one_gives_uniform_actions():
    """All policy actions are 0; with epsilon 1 the output must be uniform over the 4 actions."""
    n, k = 40_000, 4
    out = apply_epsilon(np.zeros(n, np.int64), k, 1.0, np.random.default_rng(1))
    counts = np.bincount(out, minlength=k)
    chi_square = np.sum((counts - n / k) ** 2 / (n / k))
    # 3 degrees of freedom: P(chi2 > 25) is about 2e-5, so this only fails if the draw is not uniform
    assert chi_square < 25, counts


def test_partial_epsilon_replaces_the_expected_fraction():
    """epsilon 0.2 with 5 actions: an action changes with probability 0.2 * 4/5 = 0.16."""
    out = apply_epsilon(np.zeros(50_000, np.int64), 5, 0.2, np.random.default_rng(2))
    assert np.mean(out != 0) == pytest.approx(0.16, abs=0.01)


def test_per_environment_epsilon_broadcasts():
    """One epsilon per environment: column 0 never changes, column 1 always draws at random."""
    actions = np.zeros((2000, 2), np.int32)
    out = apply_epsilon(actions, 3, np.array([0.0, 1.0]), np.random.default_rng(3))
    assert np.all(out[:, 0] == 0)
    assert set(np.unique(out[:, 1])) == {0, 1, 2}


def test_same_seed_same_actions():
    actions = np.arange(10) % 3
    first = apply_epsilon(actions, 3, 0.5, np.random.default_rng(7))
    np.testing.assert_array_equal(first, apply_epsilon(actions, 3, 0.5, np.random.default_rng(7)))
