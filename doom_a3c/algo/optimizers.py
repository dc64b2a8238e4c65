"""RMSProp as TensorFlow 1's RMSPropOptimizer ran it: the A3C paper's shared RMSProp and OpenAI baselines' A2C.

Both that optimizer and Keras 3's RMSprop add epsilon inside the square root (lr * g / sqrt(ms + eps)); what
differs is where the running mean square `ms` starts. TensorFlow 1 started it at 1, Keras starts it at 0. From 0,
the first update of a weight is lr * g / sqrt((1 - decay) g^2 + eps): with decay 0.99 and epsilon 1e-5, about
10 lr * sign(g) for any gradient above 0.03, whatever step it deserves, shrinking only as `ms` fills up over some
hundred updates (the old --optimizer rmsprop had epsilon 0.1). From 1 the first updates are about lr * g, plain
SGD, and the per-weight scaling takes over as `ms` forgets its start. Stable-Baselines3's `RMSpropTFLike`
(sb2_compat/rmsprop_tf_like.py) does the same for PyTorch, whose RMSprop also starts at 0 and adds epsilon outside
the root.

`build_optimizer` makes the one optimizer of a run's GlobalLearner (doom_a3c/algo/learner.py): every worker's gradient
goes through it, so its statistics are shared, as in the paper. Its slots are saved in the checkpoint with the
weights (doom_a3c/modes/build.py), one per weight either way, in the same place: a run resumed with the other
--rmsprop-style keeps its statistics.
"""
from __future__ import annotations

from doom_a3c.config import TrainConfig
from doom_a3c.quiet_import import keras

ops = keras.ops


class TFLikeRMSprop(keras.optimizers.Optimizer):
    """ms = decay * ms + (1 - decay) * g^2, with ms starting at 1; w -= lr * g / sqrt(ms + epsilon). No momentum,
    not centred: TensorFlow 1's RMSPropOptimizer(decay, momentum=0, epsilon) as the A3C paper and A2C used it."""

    def __init__(self, learning_rate: float = 7e-4, decay: float = 0.99, epsilon: float = 1e-5,
                 name: str = "tf_like_rmsprop", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.decay = decay
        self.epsilon = epsilon

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        # One mean square per weight, created in the order of var_list (the checkpoint's order too).
        self._mean_squares = [self.add_variable_from_reference(variable, "mean_square", initializer="ones")
                              for variable in var_list]

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        mean_square = self._mean_squares[self._get_variable_index(variable)]
        self.assign(mean_square, ops.add(ops.multiply(self.decay, mean_square),
                                         ops.multiply(1.0 - self.decay, ops.square(gradient))))
        self.assign_sub(variable, ops.divide(ops.multiply(lr, gradient), ops.sqrt(ops.add(mean_square, self.epsilon))))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"decay": self.decay, "epsilon": self.epsilon})
        return config


def build_optimizer(config: TrainConfig) -> keras.optimizers.Optimizer:
    """The run's one shared optimizer, as --optimizer and its --rmsprop-* flags ask."""
    if config.optimizer == "rmsprop":
        if config.rmsprop_style == "keras":
            return keras.optimizers.RMSprop(learning_rate=config.learning_rate, rho=config.rmsprop_decay,
                                            epsilon=config.rmsprop_epsilon)
        return TFLikeRMSprop(learning_rate=config.learning_rate, decay=config.rmsprop_decay,
                             epsilon=config.rmsprop_epsilon)
    return keras.optimizers.Adam(learning_rate=config.learning_rate)
