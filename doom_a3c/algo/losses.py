"""The losses as small named pieces: A3C's policy gradient, value regression and entropy bonus, and PPO's clipped
surrogate for several passes over a rollout."""
from __future__ import annotations

from typing import NamedTuple

from doom_a3c.quiet_import import tf


class LossTerms(NamedTuple):
    total: tf.Tensor
    policy: tf.Tensor
    value: tf.Tensor
    entropy: tf.Tensor


def a3c_loss(logits: tf.Tensor, values: tf.Tensor, actions: tf.Tensor, returns: tf.Tensor,
             advantages: tf.Tensor, value_coef: float, policy_coef: float, entropy_coef: float) -> LossTerms:
    """logits [T, B, A]; values, actions, returns, advantages [T, B].

    Each term is summed over the rollout's time steps; it is averaged over the B
    environments so that the gradient's scale (and the meaning of --clip-norm 40) does not change
    with --envs-per-worker.
    """
    log_probs = tf.nn.log_softmax(logits)  # numerically safe: no log(softmax) of a 0
    probs = tf.exp(log_probs)
    batch = tf.cast(tf.shape(values)[1], tf.float32)
    taken_log_probs = tf.gather(log_probs, actions, batch_dims=2)  # [T, B]
    policy_loss = -tf.reduce_sum(taken_log_probs * tf.stop_gradient(advantages)) / batch
    value_loss = 0.5 * tf.reduce_sum(tf.square(tf.stop_gradient(returns) - values)) / batch
    entropy = -tf.reduce_sum(probs * log_probs) / batch
    total = policy_coef * policy_loss + value_coef * value_loss - entropy_coef * entropy
    return LossTerms(total, policy_loss, value_loss, entropy)


class ClippedLossTerms(NamedTuple):
    terms: LossTerms
    approx_kl: tf.Tensor  # mean over the steps of (r - 1) - log r: how far the policy moved since acting
    clip_fraction: tf.Tensor  # share of the steps whose ratio r fell outside [1 - clip, 1 + clip]


def clipped_surrogate_loss(logits: tf.Tensor, values: tf.Tensor, actions: tf.Tensor, acting_log_probs: tf.Tensor,
                           returns: tf.Tensor, advantages: tf.Tensor, clip_ratio: float, value_coef: float,
                           policy_coef: float, entropy_coef: float) -> ClippedLossTerms:
    """PPO's clipped surrogate in place of A3C's policy gradient: logits [T, B, A]; values, actions,
    acting_log_probs (log pi_old(a_t | s_t), as the actions were chosen), returns, advantages [T, B].

    Summed over time and averaged over the B environments as `a3c_loss` is, so that at r = 1 (the first pass) its
    gradient is A3C's and --clip-norm means the same. The value loss and entropy bonus are `a3c_loss`'s.
    """
    log_probs = tf.nn.log_softmax(logits)
    probs = tf.exp(log_probs)
    batch = tf.cast(tf.shape(values)[1], tf.float32)
    taken_log_probs = tf.gather(log_probs, actions, batch_dims=2)  # [T, B]
    log_ratio = taken_log_probs - tf.stop_gradient(acting_log_probs)
    ratio = tf.exp(log_ratio)
    advantages = tf.stop_gradient(advantages)
    surrogate = tf.minimum(ratio * advantages, tf.clip_by_value(ratio, 1.0 - clip_ratio, 1.0 + clip_ratio) * advantages)
    policy_loss = -tf.reduce_sum(surrogate) / batch
    value_loss = 0.5 * tf.reduce_sum(tf.square(tf.stop_gradient(returns) - values)) / batch
    entropy = -tf.reduce_sum(probs * log_probs) / batch
    total = policy_coef * policy_loss + value_coef * value_loss - entropy_coef * entropy
    # Schulman's low-variance estimator of KL(pi_old || pi), always >= 0 (SB3's and CleanRL's approx_kl)
    approx_kl = tf.reduce_mean(tf.stop_gradient((ratio - 1.0) - log_ratio))
    clip_fraction = tf.reduce_mean(tf.cast(tf.abs(tf.stop_gradient(ratio) - 1.0) > clip_ratio, tf.float32))
    return ClippedLossTerms(LossTerms(total, policy_loss, value_loss, entropy), approx_kl, clip_fraction)



def enemy_target_loss(enemy_logits: tf.Tensor, enemy_targets: tf.Tensor) -> tf.Tensor:
    """Sigmoid cross-entropy of the enemy-in-view head, logits and targets (0 or 1) [T, B]: summed over time and
    averaged over the games, as the actor-critic terms are."""
    batch = tf.cast(tf.shape(enemy_logits)[1], tf.float32)
    losses = tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.cast(enemy_targets, tf.float32), logits=enemy_logits)
    return tf.reduce_sum(losses) / batch
