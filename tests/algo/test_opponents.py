"""Self-play's opponents: the snapshot pool (when snapshots are taken, how many it keeps, how a match's opponents are
drawn) on fake weights and a fake clock, and the frozen policy's batched acting with one LSTM state per opponent."""
import numpy as np
import pytest

from doom_a3c.algo.opponents import LATEST_SHARE, POOL_SIZE, FrozenOpponents, OpponentPool
from doom_a3c.modes.build import build_network

from support import spec, tiny_config


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def counting_pool(every=60.0, seed=0):
    """A pool whose source's weights are [k] at its k-th copy, on a clock the test moves."""
    clock, copies = Clock(), []

    def source():
        copies.append(len(copies))
        return [np.array([float(len(copies) - 1)], np.float32)]

    pool = OpponentPool(every, seed=seed, clock=clock)
    pool.source = source
    return pool, clock, copies


def test_the_first_draw_takes_a_snapshot_and_the_next_one_only_when_due():
    pool, clock, copies = counting_pool(every=60.0)
    first = pool.draw()
    assert first.version == 0 and first.weights[0][0] == 0.0 and copies == [0]
    clock.now += 59.0
    assert all(pool.draw().version == 0 for _ in range(10)) and copies == [0]  # not due yet: no new copy
    clock.now += 1.0
    assert pool.versions == [0] and copies == [0]
    pool.draw()
    assert pool.versions == [0, 1] and copies == [0, 1]


def test_the_pool_keeps_the_latest_and_four_older_snapshots():
    pool, clock, _ = counting_pool(every=1.0)
    for _ in range(8):
        pool.draw()
        clock.now += 1.0
    assert POOL_SIZE == 5 and pool.versions == [3, 4, 5, 6, 7]


def test_a_snapshot_is_a_copy_the_global_networks_later_updates_do_not_change():
    weights = [np.zeros(3, np.float32)]
    pool = OpponentPool(60.0, clock=Clock())
    pool.source = lambda: weights
    snapshot = pool.draw()
    weights[0][:] = 7.0
    assert np.all(snapshot.weights[0] == 0.0)


def test_draws_play_the_latest_half_the_time_and_an_older_one_uniformly_else():
    pool, clock, _ = counting_pool(every=1.0, seed=3)
    for _ in range(POOL_SIZE):
        pool.draw()
        clock.now += 1.0
    clock.now -= 0.5  # the pool is full and no snapshot is due during the draws
    draws = np.array([pool.draw().version for _ in range(8000)])
    latest = np.mean(draws == 4)
    assert LATEST_SHARE == 0.5 and latest == pytest.approx(0.5, abs=0.03)
    for older in range(4):  # (1 - 1/2) / 4 each
        assert np.mean(draws == older) == pytest.approx(0.125, abs=0.02)


def test_a_single_snapshot_is_always_drawn():
    pool, _, _ = counting_pool(every=60.0, seed=1)
    assert {pool.draw().version for _ in range(50)} == {0}


def test_frozen_opponents_play_the_drawn_snapshot_each_with_its_own_lstm_state(tmp_path):
    config = tiny_config(tmp_path, game_variables=[], normalize_variables=False)
    source = build_network(config, spec(), "source")
    pool = OpponentPool(60.0, clock=Clock())
    pool.source = lambda: [v.numpy() for v in source.trainable_variables]
    opponents = FrozenOpponents(pool, seed=0)
    opponents.attach(build_network(config, spec(), "opponents"))
    opponents.new_match(3)
    observations = np.random.default_rng(0).integers(0, 256, (3, *spec().observation_shape)).astype(np.uint8)
    actions = opponents.act(observations, np.arange(3))
    assert actions.shape == (3,) and set(actions) <= {0, 1, 2} and opponents.version == 0
    for mine, theirs in zip(opponents.net.trainable_variables, source.trainable_variables):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    h_before = opponents._h.copy()
    assert np.abs(h_before).sum() > 0  # every opponent stepped its LSTM
    opponents.act(observations[1:2], np.array([1]))  # only opponent 1 stepped
    np.testing.assert_array_equal(opponents._h[[0, 2]], h_before[[0, 2]])
    assert not np.array_equal(opponents._h[1], h_before[1]) and list(opponents._starts) == [0.0, 0.0, 0.0]
    opponents.new_match(2)  # a new match: fresh states, marked as starts
    assert opponents._h.shape[0] == 2 and not opponents._h.any() and list(opponents._starts) == [1.0, 1.0]
