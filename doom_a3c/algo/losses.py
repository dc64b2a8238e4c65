"""The A3C loss as small named pieces: policy gradient, value regression, entropy bonus."""
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

    As in the seed, each term is summed over the rollout's time steps; it is averaged over the B
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
