"""A factorised policy: one categorical head per button group, joined into the log-probabilities of the
combined actions.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from doom_a3c.quiet_import import tf


class FactorisedHeads(NamedTuple):
    """A policy of several categorical heads over one action list (doom_a3c/envs/doom/action_sets.py builds both)."""
    sizes: list[int]  # options of each head
    option_matrix: np.ndarray  # [sum(sizes), A] 0/1: the options whose log-probabilities add up to action a's


def joint_log_probs(head_logits: tf.Tensor, heads: FactorisedHeads) -> tf.Tensor:
    """head_logits [..., sum(sizes)] -> the actions' joint log-probabilities [..., A]. Being normalised, they
    serve as logits unchanged: their softmax is the joint distribution, their log_softmax themselves."""
    log_probs = tf.concat([tf.nn.log_softmax(part) for part in tf.split(head_logits, heads.sizes, axis=-1)], -1)
    return tf.tensordot(log_probs, tf.constant(heads.option_matrix, tf.float32), axes=1)
