"""The clipped passes over a rollout: PPO's surrogate, its gradient and the KL estimate against numbers computed by
hand; the minibatches' whole sequences; every pass's LSTM starting from the rollout's saved state."""
import math

import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo.learner import GradientStep, minibatch_columns, rollout_columns, uses_clipped_passes
from doom_a3c.algo.losses import a3c_loss, clipped_surrogate_loss
from doom_a3c.algo.model.actor_critic import LSTMState
from doom_a3c.algo.rollout import log_probabilities
from doom_a3c.modes.build import build_global

from support import GAMES, REPO_ROOT, fixed_rollouts, small_config, spec

# T=2, B=1, A=2; both steps' logits [0, 0]: pi = [1/2, 1/2] now. Action 0 both times.
# t=0: acting pi(a) = 0.4 -> r = 1.25, A = +1: min(1.25, clip(1.25) = 1.2) = 1.2 (clipped: no gradient)
# t=1: acting pi(a) = 0.5 -> r = 1,    A = -2: min(-2, -2) = -2
LOGITS = [[[0.0, 0.0]], [[0.0, 0.0]]]
ACTIONS = [[0], [0]]
ACTING = [[math.log(0.4)], [math.log(0.5)]]
ADVANTAGES = [[1.0], [-2.0]]
RETURNS = [[1.0], [1.0]]
VALUES = [[0.5], [1.0]]
POLICY = -(1.2 - 2.0)  # 0.8
VALUE = 0.5 * (0.5 ** 2 + 0.0)  # 0.125
ENTROPY = 2 * math.log(2.0)
# (r - 1) - log r: t=0 0.25 - ln 1.25; t=1 0
APPROX_KL = (0.25 - math.log(1.25)) / 2
CLIP_FRACTION = 0.5  # t=0's ratio is outside [0.8, 1.2]


def clipped(logits, acting=ACTING, clip_ratio=0.2):
    return clipped_surrogate_loss(logits, tf.constant(VALUES, tf.float32), tf.constant(ACTIONS, tf.int32),
                                  tf.constant(acting, tf.float32), tf.constant(RETURNS, tf.float32),
                                  tf.constant(ADVANTAGES, tf.float32), clip_ratio, 0.5, 1.0, 0.01)


def test_the_clipped_surrogate_and_its_diagnostics_match_hand_computation():
    out = clipped(tf.constant(LOGITS, tf.float32))
    assert float(out.terms.policy) == pytest.approx(POLICY, abs=1e-6)
    assert float(out.terms.value) == pytest.approx(VALUE, abs=1e-6)
    assert float(out.terms.entropy) == pytest.approx(ENTROPY, abs=1e-6)
    assert float(out.terms.total) == pytest.approx(POLICY + 0.5 * VALUE - 0.01 * ENTROPY, abs=1e-6)
    assert float(out.approx_kl) == pytest.approx(APPROX_KL, abs=1e-6)
    assert float(out.clip_fraction) == pytest.approx(CLIP_FRACTION)


def test_the_clipped_steps_gradient_is_zero_and_the_others_is_the_policy_gradient():
    logits = tf.Variable(LOGITS, dtype=tf.float32)
    with tf.GradientTape() as tape:
        policy = clipped(logits).terms.policy
    grad = tape.gradient(policy, logits).numpy()
    # t=0 clipped: nothing. t=1: -A * d log pi(0) / d logits = 2 * [1/2, -1/2] = [1, -1]
    np.testing.assert_allclose(grad, [[[0.0, 0.0]], [[1.0, -1.0]]], atol=1e-6)


def test_at_ratio_one_the_clipped_gradient_is_a3cs():
    """The first pass over a rollout (the policy that acted) takes exactly A3C's step direction."""
    rng = np.random.default_rng(3)
    logits = tf.Variable(rng.normal(size=(5, 3, 4)).astype(np.float32))
    actions = tf.constant(rng.integers(0, 4, (5, 3)), tf.int32)
    values = tf.constant(rng.normal(size=(5, 3)), tf.float32)
    returns = tf.constant(rng.normal(size=(5, 3)), tf.float32)
    advantages = tf.constant(rng.normal(size=(5, 3)), tf.float32)
    acting = tf.constant(log_probabilities(logits.numpy().reshape(15, 4), actions.numpy().reshape(15)).reshape(5, 3))
    with tf.GradientTape(persistent=True) as tape:
        ppo = clipped_surrogate_loss(logits, values, actions, acting, returns, advantages, 0.2, 0.5, 1.0, 0.01)
        a3c = a3c_loss(logits, values, actions, returns, advantages, 0.5, 1.0, 0.01)
    np.testing.assert_allclose(tape.gradient(ppo.terms.total, logits), tape.gradient(a3c.total, logits), atol=1e-6)
    assert float(ppo.approx_kl) == pytest.approx(0.0, abs=1e-6)
    assert float(ppo.clip_fraction) == 0.0


def test_log_probabilities_of_the_chosen_actions():
    logits = np.array([[0.0, math.log(3.0)], [1.0, 1.0]], np.float32)
    np.testing.assert_allclose(log_probabilities(logits, np.array([1, 0])), [math.log(0.75), math.log(0.5)],
                               atol=1e-6)


def test_minibatches_deal_every_game_once_in_whole_sequences():
    rng = np.random.default_rng(0)
    parts = minibatch_columns(7, 3, rng)
    assert sorted(len(p) for p in parts) == [2, 2, 3]
    assert sorted(np.concatenate(parts).tolist()) == list(range(7))
    assert len(minibatch_columns(2, 4, rng)) == 2  # never an empty minibatch
    rollout = fixed_rollouts(1, 8)[0]._replace(log_probs=np.zeros((6, GAMES), np.float32))
    part = rollout_columns(rollout, np.array([2, 0]))
    np.testing.assert_array_equal(part.observations, rollout.observations[:, [2, 0]])
    np.testing.assert_array_equal(part.initial_state.h, rollout.initial_state.h[[2, 0]])
    np.testing.assert_array_equal(part.bootstrap_values, rollout.bootstrap_values[[2, 0]])
    assert part.log_probs.shape == (6, 2)


def test_one_pass_of_one_update_is_a3c_and_any_more_is_clipped(tmp_path):
    assert not uses_clipped_passes(small_config(tmp_path))
    assert uses_clipped_passes(small_config(tmp_path, epochs=2))
    assert uses_clipped_passes(small_config(tmp_path, minibatches=3))


def first_pass_gradient(config, rollout):
    parts = build_global(config, spec())
    return [g.numpy() for g in next(GradientStep(parts.learner.net, config).passes(rollout)).grads], parts


def test_every_pass_starts_the_lstm_from_the_rollouts_saved_state(tmp_path):
    """The first clipped pass, with the acting policy's own probabilities, is A3C's gradient on the rollout, which
    unrolls from the rollout's initial state; from a zero state instead, it differs. A second pass, after the first
    was applied, starts from that saved state too: it equals a first pass taken on the updated weights."""
    config = small_config(tmp_path, epochs=2)
    rollout = fixed_rollouts(1, config.lstm_size)[0]
    parts = build_global(config, spec())
    step = GradientStep(parts.learner.net, config)
    out = parts.learner.net.unroll(tf.constant(rollout.observations), LSTMState(rollout.initial_state.h,
                                   rollout.initial_state.c), tf.constant(rollout.starts))
    acting = log_probabilities(out.logits.numpy().reshape(-1, 3), rollout.actions.reshape(-1)).reshape(6, GAMES)
    rollout = rollout._replace(log_probs=acting)

    passes = step.passes(rollout)
    first = next(passes)
    a3c = step(rollout)
    for g, reference in zip(first.grads, a3c.grads):
        np.testing.assert_allclose(g.numpy(), reference.numpy(), atol=2e-6)
    zero_state = rollout._replace(initial_state=LSTMState(np.zeros_like(rollout.initial_state.h),
                                                          np.zeros_like(rollout.initial_state.c)))
    zero = next(step.passes(zero_state))
    assert any(not np.allclose(g.numpy(), z.numpy(), atol=1e-5) for g, z in zip(first.grads, zero.grads))

    assert parts.learner.apply(first.grads, first.finite)
    second = next(passes)
    again = next(GradientStep(parts.learner.net, config).passes(rollout))  # a fresh pass on the new weights
    for g, reference in zip(second.grads, again.grads):
        np.testing.assert_allclose(g.numpy(), reference.numpy(), atol=2e-6)
    assert second.approx_kl > 0  # the policy moved since acting


def test_a_checkpoint_saved_before_the_passes_resumes_with_a3cs_one_update():
    import os

    from doom_a3c.run.saved_config import upgrade_saved_config
    from doom_a3c.runtime.checkpoint import read_checkpoint

    saved = read_checkpoint(os.path.join(REPO_ROOT, "tests", "fixtures", "old_basic_checkpoint", "last.ckpt"))
    assert not {"epochs", "minibatches", "clip_ratio"} & set(saved.config)
    config = upgrade_saved_config(saved.config, "the fixture")
    assert (config.epochs, config.minibatches) == (1, 1) and not uses_clipped_passes(config)


def test_more_minibatches_than_a_workers_games_is_refused_once_the_preset_gives_the_games(tmp_path):
    """defend_the_center's preset plays 8 games a worker: 8 minibatches are fine, 9 are one line naming both."""
    from doom_a3c.errors import ConfigError
    from doom_a3c.run.resolve import resolve_new_run
    from doom_a3c.run.training import start_run

    flags = {"scenario": "defend_the_center", "model_dir": str(tmp_path / "m"), "workers": 2}
    assert resolve_new_run({**flags, "minibatches": 8}).validate().minibatches == 8
    with pytest.raises(ConfigError, match=r"--minibatches must be at most --envs-per-worker \(8\).*got 9"):
        start_run({**flags, "minibatches": 9})
    assert not (tmp_path / "m").exists()
