"""The network's own Keras pieces: an initializer with normalised columns, and running moments kept as
non-trainable weights (checkpointed with the network) with the tensor maths that reads them.
"""
from __future__ import annotations

import numpy as np

from doom_a3c.algo.normalization import VARIABLE_CLIP, VARIABLE_EPSILON
from doom_a3c.quiet_import import keras, tf


@keras.saving.register_keras_serializable(package="doom_a3c")
class NormalizedColumns(keras.initializers.Initializer):
    """Gaussian weights whose columns are rescaled to norm `std` (the policy and value heads' init)."""

    def __init__(self, std: float = 1.0, seed: int | None = None):
        self.std = std
        self.seed = seed

    def __call__(self, shape, dtype=None):
        rng = np.random.default_rng(self.seed)
        out = rng.standard_normal(shape).astype(np.float32)
        out *= self.std / np.sqrt(np.square(out).sum(axis=0, keepdims=True))
        return tf.constant(out, dtype=dtype or tf.float32)

    def get_config(self):
        return {"std": self.std, "seed": self.seed}


class RunningMoments(keras.layers.Layer):
    """Running statistics the network reads but no loss moves (doom_a3c/algo/normalization.py): one flat vector.

    Kept as a trainable weight on purpose, so that it travels wherever the weights go (a local copy's sync, a
    Ray reply, the checkpoint, --export) without a second channel. The loss never reaches it (stop_gradient):
    `GradientStep` puts the statistics' update in its gradient slot instead, scaled by STATISTICS_CARRIER, and
    `GlobalLearner.apply` adds it (unscaled) rather than handing it to the optimizer."""

    def __init__(self, size: int, name: str):
        super().__init__(name=name)
        self.moments = self.add_weight(shape=(size,), initializer="zeros", trainable=True, name="moments")
        self.built = True


# A statistics update rides in the gradient list times 2^-40: exact in floating point (a power of two, far above
# float32's smallest normal number for any update that matters), and so small beside the bound of --clip-norm or
# --normalize-norm that processing the list again (a Ray parameter server processes what it receives) leaves
# both the update and the real gradients as they are.
STATISTICS_CARRIER = 2.0 ** -40


def return_scale_tensor(moments: tf.Tensor, floor: float = 1.0) -> tf.Tensor:
    """normalization.return_scale in TensorFlow: max(floor, debiased high - low), 1 before any update."""
    weight = moments[0]
    spread = (moments[2] - moments[1]) / tf.maximum(weight, 1e-12)
    return tf.where(weight > 0, tf.maximum(spread, floor), 1.0)


def normalized_variables_tensor(variables: tf.Tensor, moments: tf.Tensor) -> tf.Tensor:
    """normalization.normalized_variables in TensorFlow: variables [N, V] standardised and clipped."""
    count = (moments.shape[0] - 1) // 2
    weight = moments[0]
    started = weight > 0
    safe_weight = tf.maximum(weight, 1e-12)
    mean = tf.where(started, moments[1:1 + count] / safe_weight, 0.0)
    variance = tf.where(started, tf.maximum(moments[1 + count:] / safe_weight - tf.square(mean), 0.0), 1.0)
    standardized = (variables - mean) / tf.sqrt(variance + VARIABLE_EPSILON)
    return tf.clip_by_value(standardized, -VARIABLE_CLIP, VARIABLE_CLIP)
