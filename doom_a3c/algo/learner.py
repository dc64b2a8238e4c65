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

import functools
import threading
import time
from typing import Callable, Iterator, NamedTuple, Sequence

import numpy as np

from doom_a3c.algo.entropy_target import entropy_weight, multiplier_step, uniform_entropy
from doom_a3c.algo.gradients import process_gradients
from doom_a3c.algo.losses import a3c_loss, clipped_surrogate_loss, enemy_target_loss
from doom_a3c.algo.model.actor_critic import ActorCritic, LSTMState
from doom_a3c.algo.model.layers import STATISTICS_CARRIER
from doom_a3c.algo.normalization import moments_update, return_scale, return_targets, variable_targets
from doom_a3c.algo.optimizers import build_optimizer
from doom_a3c.algo.returns import discounted_returns, generalized_advantages, n_step_targets, standardized
from doom_a3c.algo.rollout import Rollout
from doom_a3c.algo.schedules import RunClock, learning_rate_at
from doom_a3c.config import TrainConfig
from doom_a3c.envs.interface import enemy_targets, network_inputs
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
    approx_kl: float | None = None  # the clipped passes: KL(acting policy || this one) estimated on the minibatch
    clip_fraction: float | None = None  # the clipped passes: share of the minibatch's steps whose ratio was clipped
    enemy_loss: float | None = None  # --enemy-coef: the enemy-in-view head's cross-entropy per step

    def metrics(self, applied: bool, policy_lag: float | None = None) -> TrainMetrics:
        return TrainMetrics(self.policy_loss, self.value_loss, self.entropy, self.grad_norm, self.var_norm,
                            applied, policy_lag, self.entropy_weight, self.approx_kl, self.clip_fraction,
                            enemy_loss=self.enemy_loss)


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


class PreparedRollout(NamedTuple):
    """What every pass over a rollout shares, computed once from the rollout as it was played."""
    returns: np.ndarray  # [T, B]
    advantages: np.ndarray  # [T, B]
    statistics_updates: list  # the running statistics' steps, in the order of net.statistics (entropy's appended)
    scale: float  # the return scale (1 unless --normalize-returns)
    entropy_weight: float
    entropy_multiplier: float | None  # --entropy-target's multiplier before this rollout


def uses_clipped_passes(config: TrainConfig) -> bool:
    """One pass of one update is A3C's own loss, bit for bit; any more updates a rollout use the clipped surrogate."""
    return config.epochs * config.minibatches > 1


def minibatch_columns(games: int, minibatches: int, rng: np.random.Generator) -> list[np.ndarray]:
    """The rollout's games, shuffled and dealt into `minibatches` near-equal groups of whole sequences."""
    return [np.sort(part) for part in np.array_split(rng.permutation(games), min(minibatches, games))]


def rollout_columns(rollout: Rollout, columns: np.ndarray) -> Rollout:
    """The rollout's games `columns` (whole sequences from their first step, with their initial LSTM state)."""
    def pick(value):
        return None if value is None else value[:, columns]
    return rollout._replace(observations=rollout.observations[:, columns], actions=pick(rollout.actions),
                            rewards=pick(rollout.rewards), dones=pick(rollout.dones), starts=pick(rollout.starts),
                            values=pick(rollout.values), end_values=pick(rollout.end_values),
                            log_probs=pick(rollout.log_probs),
                            initial_state=LSTMState(rollout.initial_state.h[columns], rollout.initial_state.c[columns]),
                            bootstrap_values=rollout.bootstrap_values[columns])


class GradientStep:
    """The processed gradient of the loss of `net` on a rollout (compiled once per network): A3C's one update, or
    with --epochs / --minibatches the clipped passes (`passes`)."""

    def __init__(self, net: ActorCritic, config: TrainConfig):
        self.net = net
        self.config = config
        self._statistics_slots = net.statistics_slots()  # in the order of net.statistics
        heads = net.factorised_heads
        self._uniform_entropy = uniform_entropy(net.num_actions, heads.sizes if heads else None,
                                                heads.option_matrix if heads else None)
        # --jit-compile: XLA (None, not False, when off: tf.function's own default, as before the flag)
        jit = config.jit_compile or None
        self._compiled = tf.function(functools.partial(self._graph, clipped=False), jit_compile=jit)
        self._clipped = tf.function(functools.partial(self._graph, clipped=True), jit_compile=jit)
        self._rng = np.random.default_rng(config.seed)  # the minibatches' shuffle
        self._enemy = net.enemy_head is not None
        self.last_finished: float | None = None  # when this step's caller last finished a rollout's updates

    def _graph(self, observations, actions, acting_log_probs, starts, h, c, returns, advantages, scale, entropy_coef,
               enemy_targets, clipped: bool):
        # observations [T, B, *obs]; actions, acting_log_probs, starts, returns, advantages, enemy_targets [T, B];
        # h, c [B, L]; scale, entropy_coef [] (tensors, so that their changes do not retrace the graph). `clipped`:
        # PPO's clipped surrogate (a later pass), else A3C's loss (acting_log_probs unread).
        config, variables = self.config, self.net.trainable_variables
        with tf.GradientTape() as tape:
            out = self.net.unroll(observations, LSTMState(h, c), starts)
            # Everything in units of the return scale (1 unless --normalize-returns): doom_a3c/algo/normalization.py
            # says why.
            if clipped:
                surrogate = clipped_surrogate_loss(out.logits, out.values / scale, actions, acting_log_probs,
                                                   returns / scale, advantages / scale, config.clip_ratio,
                                                   config.value_coef, config.policy_coef, entropy_coef)
                terms, diagnostics = surrogate.terms, [surrogate.approx_kl, surrogate.clip_fraction]
            else:
                terms = a3c_loss(out.logits, out.values / scale, actions, returns / scale, advantages / scale,
                                 config.value_coef, config.policy_coef, entropy_coef)
                diagnostics = []
            total, enemy = terms.total, tf.constant(0.0)
            if out.enemy_logits is not None:  # --enemy-coef's learning-only target
                enemy = enemy_target_loss(out.enemy_logits, enemy_targets)
                total = total + config.enemy_coef * enemy
        grads = tape.gradient(total, variables)  # None for the running statistics: no loss reaches them
        bound = config.clip_norm if config.gradient_mode == "clip" else config.normalize_norm
        processed, grad_norm = process_gradients(grads, config.gradient_mode, bound)
        steps = tf.cast(tf.shape(actions)[0], tf.float32)
        finite = tf.math.is_finite(grad_norm) & tf.math.is_finite(total)
        return (processed, finite, enemy / steps, terms.policy / steps, terms.value / steps, terms.entropy / steps,
                grad_norm, tf.linalg.global_norm(self.net.learned_variables), *diagnostics)

    def statistics_updates(self, rollout: Rollout, returns: np.ndarray) -> list[np.ndarray]:
        """This rollout's step for each of the network's running statistics (algo/normalization.py), in order."""
        updates = []
        if self.net.variable_moments is not None:
            variables = rollout.observations["variables"]  # [T, B, V] as the games report them
            updates.append(moments_update(self.net.variable_moments.moments.numpy(), variable_targets(variables)))
        if self.net.return_moments is not None:
            updates.append(moments_update(self.net.return_moments.moments.numpy(), return_targets(returns)))
        return updates

    def _enemy_targets(self, rollout: Rollout) -> np.ndarray:
        """[T, B] whether an enemy was in view at each step (--enemy-coef), zeros when the network has no head."""
        targets = enemy_targets(rollout.observations) if self._enemy else None
        if self._enemy and targets is None:
            raise ValueError("--enemy-coef needs observations that carry the enemy target (a ViZDoom game's)")
        return targets if targets is not None else np.zeros(rollout.actions.shape, np.float32)

    def prepare(self, rollout: Rollout) -> PreparedRollout:
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
        return PreparedRollout(returns, advantages, updates, scale, weight, multiplier)

    def _finish(self, outputs, prepared: PreparedRollout, carries_statistics: bool) -> Gradient:
        """The compiled graph's outputs as a Gradient; the running statistics' steps ride in the slots of their
        weights on the rollout's first update only, so that each rollout moves them once."""
        grads, finite, enemy_loss, *scalars = outputs
        updates = list(prepared.statistics_updates) if carries_statistics else []
        if carries_statistics and prepared.entropy_multiplier is not None:
            # this rollout's entropy (per step, scalars[2]) moves the weight of the next
            updates.append(np.array([multiplier_step(prepared.entropy_multiplier, float(scalars[2]),
                                                     self._uniform_entropy, self.config.entropy_target)]))
        grads = list(grads)
        if not carries_statistics:  # the later updates of a rollout leave the statistics where the first moved them
            for slot in self._statistics_slots:
                grads[slot] = tf.zeros_like(self.net.trainable_variables[slot])
        for slot, update in zip(self._statistics_slots, updates):
            grads[slot] = tf.constant(update * STATISTICS_CARRIER, tf.float32)
        finite = bool(finite) and all(bool(np.all(np.isfinite(update))) for update in updates)
        return Gradient(grads, finite, *(float(s) for s in scalars[:5]), prepared.entropy_weight,
                        *(float(s) for s in scalars[5:]), enemy_loss=float(enemy_loss) if self._enemy else None)

    def __call__(self, rollout: Rollout) -> Gradient:
        """A3C's one update on the whole rollout."""
        prepared = self.prepare(rollout)
        unread = np.zeros(rollout.actions.shape, np.float32)  # A3C's loss needs no acting probabilities
        outputs = self._compiled(network_inputs(rollout.observations), rollout.actions, unread, rollout.starts,
                                 rollout.initial_state.h, rollout.initial_state.c, prepared.returns, prepared.advantages, tf.constant(prepared.scale, tf.float32),
                                 tf.constant(prepared.entropy_weight, tf.float32), self._enemy_targets(rollout))
        return self._finish(outputs, prepared, carries_statistics=True)

    def passes(self, rollout: Rollout) -> Iterator[Gradient]:
        """Every update of one rollout, one at a time: --epochs passes, each of --minibatches updates on a shuffled
        share of its games. The caller applies each gradient (and refreshes the network it is taken on) before
        asking for the next, so that each pass sees the policy the previous ones made; the targets and the
        acting probabilities stay those of the rollout as played. One update in all is `__call__`'s."""
        if not uses_clipped_passes(self.config):
            yield self(rollout)
            return
        if rollout.log_probs is None:
            raise ValueError("the clipped passes need the rollout's acting log-probabilities (Rollout.log_probs)")
        prepared = self.prepare(rollout)
        scale = tf.constant(prepared.scale, tf.float32)
        weight = tf.constant(prepared.entropy_weight, tf.float32)
        first = True
        for _ in range(self.config.epochs):
            for columns in minibatch_columns(rollout.actions.shape[1], self.config.minibatches, self._rng):
                part = rollout_columns(rollout, columns)
                outputs = self._clipped(network_inputs(part.observations), part.actions, part.log_probs, part.starts,
                                        part.initial_state.h, part.initial_state.c, prepared.returns[:, columns],
                                        prepared.advantages[:, columns], scale, weight, self._enemy_targets(part))
                yield self._finish(outputs, prepared, carries_statistics=first)
                first = False


def learn_from_rollout(step: GradientStep, rollout: Rollout, apply: Callable[[Gradient, bool], bool],
                       policy_lag: float | None = None) -> TrainMetrics:
    """Every update of one rollout (`GradientStep.passes`), each handed to `apply(gradient, first)` (which applies
    it to the global network, refreshes the network the next one is taken on, and returns whether it was applied;
    `first` is the rollout's first update); the metrics of them all, averaged, with the share of this thread's time
    since its previous rollout that the updates took."""
    started = time.perf_counter()
    gradients, applied = [], []
    for gradient in step.passes(rollout):
        applied.append(apply(gradient, not gradients))
        gradients.append(gradient)
    finished = time.perf_counter()
    metrics = [g.metrics(a, policy_lag) for g, a in zip(gradients, applied)]
    previous = step.last_finished if step.last_finished is not None else started
    step.last_finished = finished
    return average_metrics(metrics)._replace(update_share=(finished - started) / max(finished - previous, 1e-9))


def average_metrics(metrics: Sequence[TrainMetrics]) -> TrainMetrics:
    """One rollout's updates as one line of metrics: each number averaged, applied if any was."""
    if len(metrics) == 1:
        return metrics[0]

    def mean(name: str):
        values = [getattr(m, name) for m in metrics if getattr(m, name) is not None]
        return float(np.mean(values)) if values else None
    return TrainMetrics(*(mean(name) if name != "applied" else any(m.applied for m in metrics)
                          for name in TrainMetrics._fields))


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
