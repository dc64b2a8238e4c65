"""One A3C worker: a local copy of the network driving E environments in one thread.

Each cycle: sync the local copy from `global`, play `rollout` steps in every environment with one
batched forward pass per step, compute returns and advantages, take the gradient of the local
loss, clip it, and apply it to the global variables through the shared optimizer.

`GameRunner` (games -> rollouts) and the learning functions (`learning_targets`, `loss_gradients`,
`apply_to_global`, `record_update`) are shared with the GA3C trainer (doom_a3c/ga3c.py), which acts
through a central predictor instead of a local copy. The Ray worker (doom_a3c/distributed.py) is this
`Worker` with one step replaced, `_push_gradients`: the gradient goes to a parameter-server process.
"""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from doom_a3c.config import TrainConfig
from doom_a3c.env_batch import EnvBatch, ProcessEnvBatch
from doom_a3c.envs import Environment
from doom_a3c.exploration import EpsilonSchedule, apply_epsilon
from doom_a3c.gradients import process_gradients
from doom_a3c.losses import a3c_loss
from doom_a3c.network import ActorCritic, LSTMState
from doom_a3c.returns import discounted_returns, generalized_advantages, n_step_targets, standardized
from doom_a3c.schedules import learning_rate_at


class Rollout(NamedTuple):
    observations: np.ndarray  # [T, B, *obs] uint8
    actions: np.ndarray  # [T, B] int32
    rewards: np.ndarray  # [T, B] float32, scaled for learning
    dones: np.ndarray  # [T, B] float32, 1 where the episode ended at this step
    starts: np.ndarray  # [T, B] float32, 1 where the episode began at this step (LSTM reset)
    values: np.ndarray  # [T, B] float32, V(s_t) from acting
    initial_state: LSTMState  # [B, L] each, before step 0
    bootstrap_values: np.ndarray  # [B], V(s_T)


class EpisodeResult(NamedTuple):
    worker: int
    reward: float  # the game's own score, unscaled
    length: int
    mean_value: float
    frames: list[np.ndarray] | None  # full-resolution RGB screens, when this episode was recorded


class TrainMetrics(NamedTuple):
    policy_loss: float
    value_loss: float
    entropy: float
    grad_norm: float
    var_norm: float
    applied: bool  # False when the gradient was not finite and was dropped
    policy_lag: float | None = None  # GA3C: mean global updates between acting and training (A3C: None)


@dataclass
class SharedState:
    """What every worker shares with the others and with the coordinator."""

    global_net: ActorCritic
    optimizer: object
    env_steps: int = 0
    updates: int = 0
    skipped_updates: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    episodes: "queue.Queue[EpisodeResult]" = field(default_factory=queue.Queue)
    latest_metrics: dict[int, TrainMetrics] = field(default_factory=dict)
    errors: list[BaseException] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Serialises optimizer updates: Keras optimizers keep unsynchronised slots and counters.
    apply_lock: threading.Lock = field(default_factory=threading.Lock)

    def add_steps(self, count: int) -> None:
        with self.lock:
            self.env_steps += count

    def fail(self, error: BaseException) -> None:
        with self.lock:
            self.errors.append(error)
        self.stop.set()


def learning_targets(config: TrainConfig, rollout: Rollout, clip_rewards: bool) -> tuple[np.ndarray, np.ndarray]:
    """(returns, advantages), both [T, B], as --advantage asks; rewards clipped first if asked."""
    rewards = np.clip(rollout.rewards, -1.0, 1.0) if clip_rewards else rollout.rewards  # [T, B]
    if config.advantage == "nstep":
        # The n-step target is both the critic's target and, minus V(s_t), the actor's advantage.
        returns = n_step_targets(rewards, rollout.values, rollout.dones, rollout.bootstrap_values, config.gamma,
                                 config.n_step, config.n_step_variant)
        advantages = returns - rollout.values
    else:
        returns = discounted_returns(rewards, rollout.dones, rollout.bootstrap_values, config.gamma)
        advantages = generalized_advantages(rewards, rollout.values, rollout.dones,
                                            rollout.bootstrap_values, config.gamma, config.gae_lambda)
    if config.normalize_advantages:
        advantages = standardized(advantages)
    return returns, advantages


def loss_gradients(net: ActorCritic, config: TrainConfig, observations, actions, starts, h, c, returns, advantages):
    """Graph code (call it inside a tf.function): the processed gradient of the A3C loss of `net` on a
    [T, B] rollout, the metrics (policy, value, entropy per step, grad norm, var norm) and whether it is finite."""
    variables = net.trainable_variables
    with tf.GradientTape() as tape:
        out = net.unroll(observations, LSTMState(h, c), starts)
        terms = a3c_loss(out.logits, out.values, actions, returns, advantages,
                         config.value_coef, config.policy_coef, config.entropy_coef)
    grads = tape.gradient(terms.total, variables)
    bound = config.clip_norm if config.gradient_mode == "clip" else config.normalize_norm
    clipped, grad_norm = process_gradients(grads, config.gradient_mode, bound)
    steps = tf.cast(tf.shape(actions)[0], tf.float32)
    metrics = (terms.policy / steps, terms.value / steps, terms.entropy / steps, grad_norm,
               tf.linalg.global_norm(variables))
    return clipped, metrics, tf.math.is_finite(grad_norm) & tf.math.is_finite(terms.total)


def apply_to_global(shared: "SharedState", grads, learning_rate) -> None:
    """Graph code: one optimizer step on the global network."""
    # Set on every update: annealing moves it, and a resumed run's --learning-rate must beat the restored one.
    shared.optimizer.learning_rate.assign(learning_rate)
    shared.optimizer.apply_gradients(zip(grads, shared.global_net.trainable_variables))


def record_update(config: TrainConfig, shared: "SharedState", grads, finite: bool, apply) -> bool:
    """Apply `grads` through the compiled `apply(grads, learning_rate)` under the shared lock, unless they are
    not finite (a NaN/Inf gradient must never reach the global weights), and count the update either way."""
    if finite:
        learning_rate = learning_rate_at(config, shared.env_steps)
        with shared.apply_lock:
            apply(grads, tf.constant(learning_rate, tf.float32))
    with shared.lock:
        shared.updates += 1
        shared.skipped_updates += 0 if finite else 1
    return finite


class GameRunner:
    """Plays E games and turns them into rollouts: sampling (and epsilon), episode reports and GIFs.
    Where the logits come from is the subclass's business: `_policy`, `_bootstrap`, `_rollout_start_state`."""

    def __init__(self, index: int, config: TrainConfig, envs: list[Environment], shared: SharedState,
                 reward_scale: float, seed: int, record_every: int = 0, clip_rewards: bool = False,
                 epsilon: EpsilonSchedule | None = None):
        self.index = index
        self.config = config
        self.clip_rewards = clip_rewards  # learning rewards only: episodes report the true score
        self.epsilon = epsilon  # None: act on the policy alone
        self.shared = shared
        self.reward_scale = reward_scale
        self.record_every = record_every
        self.rng = np.random.default_rng(seed)
        # A ProcessEnvBatch (--env-processes) comes ready-made: its games were built in its child processes.
        self.envs = envs if isinstance(envs, ProcessEnvBatch) else EnvBatch(envs, threads=config.env_threads)
        batch = len(envs)
        self._observations = self.envs.reset()  # [B, *obs]
        self._starts = np.ones(batch, np.float32)
        self._episode_reward = np.zeros(batch)
        self._episode_length = np.zeros(batch, np.int64)
        self._episode_value_sum = np.zeros(batch)
        self._recorded_episodes = 0  # episodes of environment 0, for GIF selection
        self._frames: list[np.ndarray] | None = self._maybe_start_recording()

    # ---- the policy (subclasses) -----------------------------------------------------------------
    def _rollout_start_state(self) -> LSTMState:
        """The LSTM state [B, L] each (NumPy) that the next `_policy` call starts from."""
        raise NotImplementedError

    def _policy(self, observations: np.ndarray, starts: np.ndarray):
        """logits [B, A] and values [B] for this step; advances the LSTM state."""
        raise NotImplementedError

    def _bootstrap(self, observations: np.ndarray, starts: np.ndarray):
        """values [B] of the observations after the rollout; leaves the LSTM state alone."""
        raise NotImplementedError

    # ---- acting ----------------------------------------------------------------------------------
    def _maybe_start_recording(self) -> list[np.ndarray] | None:
        if self.record_every and self._recorded_episodes % self.record_every == 0:
            return [self.envs.screen(0).copy()]
        return None

    def _sample(self, logits: np.ndarray) -> np.ndarray:
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        cumulative = np.cumsum(probs, axis=1)
        draws = self.rng.random((len(logits), 1)) * cumulative[:, -1:]
        actions = np.minimum((cumulative < draws).sum(axis=1), logits.shape[1] - 1).astype(np.int32)
        if self.epsilon is not None:  # seed 003: epsilon-greedy on top of the sampled policy
            actions = apply_epsilon(actions, logits.shape[1], self.epsilon.at(self.shared.env_steps), self.rng)
        return actions

    def collect_rollout(self, steps: int) -> Rollout:
        batch = len(self.envs)
        observations = np.empty((steps, batch, *self._observations.shape[1:]), self._observations.dtype)
        actions = np.empty((steps, batch), np.int32)
        rewards = np.empty((steps, batch), np.float32)
        dones = np.empty((steps, batch), np.float32)
        starts = np.empty((steps, batch), np.float32)
        values = np.empty((steps, batch), np.float32)
        initial_state = self._rollout_start_state()
        for t in range(steps):
            logits, step_values = self._policy(self._observations, self._starts)
            chosen = self._sample(logits)
            observations[t], actions[t], starts[t], values[t] = self._observations, chosen, self._starts, step_values
            result = self.envs.step(chosen)
            rewards[t], dones[t] = result.rewards * self.reward_scale, result.dones
            self._track_episodes(result.rewards, values[t], result.game_overs)  # true scores: whole games
            if self._frames is not None and not result.game_overs[0]:
                self._frames.append(self.envs.screen(0).copy())
            self._observations = result.observations
            self._starts = dones[t].copy()
        self.shared.add_steps(steps * batch)
        bootstrap = self._bootstrap(self._observations, self._starts)
        return Rollout(observations, actions, rewards, dones, starts, values, initial_state, bootstrap)

    def _track_episodes(self, rewards: np.ndarray, values: np.ndarray, dones: np.ndarray) -> None:
        self._episode_reward += rewards
        self._episode_length += 1
        self._episode_value_sum += values
        for b in np.flatnonzero(dones):
            recorded = b == 0 and self._frames is not None
            self.shared.episodes.put(EpisodeResult(
                self.index, float(self._episode_reward[b]), int(self._episode_length[b]),
                float(self._episode_value_sum[b] / self._episode_length[b]), self._frames if recorded else None))
            self._episode_reward[b] = self._episode_length[b] = self._episode_value_sum[b] = 0
            if b == 0:
                self._recorded_episodes += 1
                # The game has already been reset: the new episode's first screen is on display.
                self._frames = self._maybe_start_recording()

    def close(self) -> None:
        self.envs.close()


class Worker(GameRunner):
    """A3C: acts with its own local copy (synced after each update) and applies its own gradients."""

    def __init__(self, index: int, config: TrainConfig, envs: list[Environment], local_net: ActorCritic,
                 shared: SharedState, reward_scale: float, seed: int, record_every: int = 0,
                 clip_rewards: bool = False, epsilon: EpsilonSchedule | None = None):
        super().__init__(index, config, envs, shared, reward_scale, seed, record_every, clip_rewards, epsilon)
        self.local_net = local_net
        self._state = local_net.initial_state(len(envs))
        self._act = tf.function(self._act_graph)
        self._gradients = tf.function(self._gradients_graph)
        self._apply = tf.function(self._apply_graph)
        self._sync = tf.function(self._sync_graph)

    # ---- compiled pieces -------------------------------------------------------------------------
    def _act_graph(self, observations, h, c, starts):
        out = self.local_net.step(observations, LSTMState(h, c), starts)
        return out.logits, out.values, out.state.h, out.state.c

    def _gradients_graph(self, observations, actions, starts, h, c, returns, advantages):
        return loss_gradients(self.local_net, self.config, observations, actions, starts, h, c, returns, advantages)

    def _apply_graph(self, grads, learning_rate):
        apply_to_global(self.shared, grads, learning_rate)

    def _sync_graph(self):
        for local, source in zip(self.local_net.trainable_variables, self.shared.global_net.trainable_variables):
            local.assign(source)

    # ---- acting ----------------------------------------------------------------------------------
    def sync(self) -> None:
        self._sync()

    def _rollout_start_state(self) -> LSTMState:
        return LSTMState(self._state.h.numpy(), self._state.c.numpy())

    def _policy(self, observations: np.ndarray, starts: np.ndarray):
        logits, values, h, c = self._act(observations, self._state.h, self._state.c, starts)
        self._state = LSTMState(h, c)
        return logits.numpy(), values.numpy()

    def _bootstrap(self, observations: np.ndarray, starts: np.ndarray) -> np.ndarray:
        _, bootstrap, _, _ = self._act(observations, self._state.h, self._state.c, starts)
        return bootstrap.numpy()

    # ---- learning --------------------------------------------------------------------------------
    def learn(self, rollout: Rollout) -> TrainMetrics:
        returns, advantages = learning_targets(self.config, rollout, self.clip_rewards)
        grads, metrics, finite = self._gradients(rollout.observations, rollout.actions, rollout.starts,
                                                 rollout.initial_state.h, rollout.initial_state.c, returns, advantages)
        applied = self._push_gradients(rollout, grads, bool(finite))
        return TrainMetrics(*(float(m) for m in metrics), applied=applied)

    def _push_gradients(self, rollout: Rollout, grads, finite: bool) -> bool:
        """Hand the processed gradient to the global network and refresh the local copy; returns whether it
        was applied. Here: the in-process global network; the Ray worker (doom_a3c/distributed.py) pushes it
        to the parameter server instead."""
        applied = record_update(self.config, self.shared, grads, finite, self._apply)
        self._sync()
        return applied

    def run(self) -> None:
        """Thread body: play and learn until told to stop; any error stops the whole run."""
        try:
            self.sync()
            while not self.shared.stop.is_set():
                rollout = self.collect_rollout(self.config.rollout)
                self.shared.latest_metrics[self.index] = self.learn(rollout)
        except BaseException as error:  # noqa: BLE001 - reported by the coordinator
            self.shared.fail(error)
