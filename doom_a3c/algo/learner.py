"""The learning step every mode shares: targets, the loss gradient, and applying it to the global network.

- `learning_targets`: returns and advantages of a rollout (NumPy), as --advantage asks.
- `GradientStep`: the compiled, processed (clipped) gradient of the A3C loss of one network on a rollout.
- `GlobalLearner`: the global network and the shared optimizer; applies a finite gradient under one
  lock and counts the update (a NaN/Inf gradient is counted as skipped and never applied).

With --normalize-returns or --normalize-variables the network keeps running statistics
(doom_a3c/algo/normalization.py). Each rollout's update of them travels in the gradient list, in the slots of their
weights (network.STATISTICS_CARRIER), and `GlobalLearner.apply` adds it to the global network's: so the
statistics are shared by every worker, in every mode, and saved in the checkpoint with the weights.

Thread A3C takes the gradient on a worker's local copy, GA3C on the global network itself, Ray on a
worker process's local copy and applies it in the parameter server's GlobalLearner: the same code.
"""
from __future__ import annotations

import threading
from typing import NamedTuple, Sequence

import numpy as np

from doom_a3c.algo.entropy_target import entropy_weight, multiplier_step, uniform_entropy
from doom_a3c.algo.gradients import process_gradients
from doom_a3c.algo.losses import a3c_loss
from doom_a3c.algo.model.actor_critic import ActorCritic, LSTMState
from doom_a3c.algo.model.layers import STATISTICS_CARRIER
from doom_a3c.algo.normalization import moments_update, return_scale, return_targets, variable_targets
from doom_a3c.algo.optimizers import build_optimizer
from doom_a3c.algo.returns import discounted_returns, generalized_advantages, n_step_targets, standardized
from doom_a3c.algo.rollout import Rollout
from doom_a3c.algo.schedules import RunClock, learning_rate_at
from doom_a3c.config import TrainConfig
from doom_a3c.envs.interface import network_inputs
from doom_a3c.quiet_import import tf
from doom_a3c.runtime.state import Counters, TrainMetrics


class Gradient(NamedTuple):
    grads: list  # processed (clipped or normalised), one per trainable variable
    finite: bool  # False: the loss or the gradient had a NaN/Inf and must not be applied
    policy_loss: float  # per step
    value_loss: float
    entropy: float
    grad_norm: float  # before processing
    var_norm: float
    entropy_weight: float  # the entropy bonus's weight in this loss (--entropy-coef unless --entropy-target)

    def metrics(self, applied: bool, policy_lag: float | None = None) -> TrainMetrics:
        return TrainMetrics(self.policy_loss, self.value_loss, self.entropy, self.grad_norm, self.var_norm,
                            applied, policy_lag, self.entropy_weight)


def learning_targets(config: TrainConfig, rollout: Rollout) -> tuple[np.ndarray, np.ndarray]:
    """(returns, advantages), both [T, B], as --advantage asks; rewards clipped first if --clip-rewards."""
    rewards = np.clip(rollout.rewards, -1.0, 1.0) if config.clip_rewards else rollout.rewards  # [T, B]
    if config.advantage == "nstep":
        # The n-step target is both the critic's target and, minus V(s_t), the actor's advantage.
        returns = n_step_targets(rewards, rollout.values, rollout.dones, rollout.bootstrap_values, config.gamma,
                                 config.n_step, config.n_step_variant, rollout.end_values)
        advantages = returns - rollout.values
    else:
        returns = discounted_returns(rewards, rollout.dones, rollout.bootstrap_values, config.gamma,
                                     rollout.end_values)
        advantages = generalized_advantages(rewards, rollout.values, rollout.dones, rollout.bootstrap_values,
                                            config.gamma, config.gae_lambda, rollout.end_values)
    if config.normalize_advantages:
        advantages = standardized(advantages)
    return returns, advantages


class GradientStep:
    """The processed gradient of the A3C loss of `net` on a rollout (compiled once per network)."""

    def __init__(self, net: ActorCritic, config: TrainConfig):
        self.net = net
        self.config = config
        self._statistics_slots = net.statistics_slots()  # in the order of net.statistics
        heads = net.factorised_heads
        self._uniform_entropy = uniform_entropy(net.num_actions, heads.sizes if heads else None,
                                                heads.option_matrix if heads else None)
        # --jit-compile: XLA (None, not False, when off: tf.function's own default, as before the flag)
        self._compiled = tf.function(self._graph, jit_compile=config.jit_compile or None)

    def _graph(self, observations, actions, starts, h, c, returns, advantages, scale, entropy_coef):
        # observations [T, B, *obs]; actions, starts, returns, advantages [T, B]; h, c [B, L]; scale,
        # entropy_coef [] (tensors, so that their changes do not retrace the graph)
        config, variables = self.config, self.net.trainable_variables
        with tf.GradientTape() as tape:
            out = self.net.unroll(observations, LSTMState(h, c), starts)
            # Everything in units of the return scale (1 unless --normalize-returns): doom_a3c/algo/normalization.py
            # says why.
            terms = a3c_loss(out.logits, out.values / scale, actions, returns / scale, advantages / scale,
                             config.value_coef, config.policy_coef, entropy_coef)
        grads = tape.gradient(terms.total, variables)  # None for the running statistics: no loss reaches them
        bound = config.clip_norm if config.gradient_mode == "clip" else config.normalize_norm
        processed, grad_norm = process_gradients(grads, config.gradient_mode, bound)
        steps = tf.cast(tf.shape(actions)[0], tf.float32)
        finite = tf.math.is_finite(grad_norm) & tf.math.is_finite(terms.total)
        return (processed, finite, terms.policy / steps, terms.value / steps, terms.entropy / steps, grad_norm,
                tf.linalg.global_norm(self.net.learned_variables))

    def statistics_updates(self, rollout: Rollout, returns: np.ndarray) -> list[np.ndarray]:
        """This rollout's step for each of the network's running statistics (algo/normalization.py), in order."""
        updates = []
        if self.net.variable_moments is not None:
            variables = rollout.observations["variables"]  # [T, B, V] as the games report them
            updates.append(moments_update(self.net.variable_moments.moments.numpy(), variable_targets(variables)))
        if self.net.return_moments is not None:
            updates.append(moments_update(self.net.return_moments.moments.numpy(), return_targets(returns)))
        return updates

    def __call__(self, rollout: Rollout) -> Gradient:
        returns, advantages = learning_targets(self.config, rollout)
        updates = self.statistics_updates(rollout, returns)
        scale = 1.0
        if self.net.return_moments is not None:
            # DreamerV3's order: the statistics take this rollout's returns in first, then scale them.
            scale = return_scale(self.net.return_moments.moments.numpy() + updates[-1], self.config.return_scale_floor)
        weight, multiplier = self.config.entropy_coef, None
        if self.net.entropy_multiplier is not None:
            multiplier = float(self.net.entropy_multiplier.moments.numpy()[0])
            weight = entropy_weight(self.config.entropy_coef, multiplier)
        grads, finite, *scalars = self._compiled(network_inputs(rollout.observations), rollout.actions,
                                                 rollout.starts, rollout.initial_state.h, rollout.initial_state.c,
                                                 returns, advantages, tf.constant(scale, tf.float32),
                                                 tf.constant(weight, tf.float32))
        if multiplier is not None:  # this rollout's entropy (per step, scalars[2]) moves the weight of the next
            updates.append(np.array([multiplier_step(multiplier, float(scalars[2]), self._uniform_entropy,
                                                     self.config.entropy_target)]))
        grads = list(grads)
        for slot, update in zip(self._statistics_slots, updates):
            grads[slot] = tf.constant(update * STATISTICS_CARRIER, tf.float32)
        finite = bool(finite) and all(bool(np.all(np.isfinite(update))) for update in updates)
        return Gradient(grads, finite, *(float(s) for s in scalars), weight)


def all_finite(grads: Sequence) -> bool:
    return all(g is not None and bool(np.all(np.isfinite(g))) for g in grads)


class GlobalLearner:
    """The global network and the one shared optimizer, fed by every worker: one set of optimizer statistics
    (Adam's moments, RMSProp's mean squares) for all of them, as the A3C paper's shared RMSProp. `clock` is the run's
    training time, which --lr-schedule linear anneals over with --max-minutes (restored and started by the run)."""

    def __init__(self, config: TrainConfig, net: ActorCritic, counters: Counters | None = None,
                 clock: RunClock | None = None):
        self.config = config
        self.net = net
        self.counters = counters or Counters()
        self.clock = clock or RunClock()
        self.optimizer = build_optimizer(config)
        # Gradient slots of the running statistics carry their updates, added, not optimised (GradientStep).
        self._statistics_slots = net.statistics_slots()
        self._learned_slots = [i for i in range(len(net.trainable_variables)) if i not in self._statistics_slots]
        # Keras builds optimizer slots lazily; threads racing into that build corrupt it.
        self.optimizer.build(net.learned_variables)
        self.learning_rate = self.scheduled_learning_rate()
        # Keras optimizers keep unsynchronised slots and counters: one update at a time.
        self._lock = threading.Lock()
        self._apply = tf.function(self._apply_graph)

    def _apply_graph(self, grads, learning_rate):
        # Set on every update: annealing moves it, and a resumed run's --learning-rate must beat the restored one.
        self.optimizer.learning_rate.assign(learning_rate)
        variables = self.net.trainable_variables
        self.optimizer.apply_gradients([(grads[i], variables[i]) for i in self._learned_slots])
        for i in self._statistics_slots:
            variables[i].assign_add(grads[i] / STATISTICS_CARRIER)

    def apply(self, grads: Sequence, finite: bool | None = None) -> bool:
        """Apply processed gradients unless they are not finite (None: check them here), count the update
        either way, and return whether it was applied."""
        variables = self.net.trainable_variables
        if finite is None:
            finite = len(grads) == len(variables) and all_finite(grads)
        if finite:
            self.learning_rate = self.scheduled_learning_rate()
            grads = [None if g is None else tf.convert_to_tensor(g, tf.float32) for g in grads]
            with self._lock:
                self._apply(grads, tf.constant(self.learning_rate, tf.float32))
        self.counters.count_update(finite)
        return finite

    def scheduled_learning_rate(self) -> float:
        """--learning-rate as --lr-schedule asks for it now (the run's steps and training time so far)."""
        return learning_rate_at(self.config, self.counters.env_steps, self.clock.elapsed(), self.clock.earlier_seconds)

    def weights(self) -> list[np.ndarray]:
        return [variable.numpy() for variable in self.net.trainable_variables]
