"""GA3C-style training (`--trainer ga3c`, seed 003 after Babaeizadeh et al., 2017): runners play, one
predictor acts for all of them, trainer threads learn from batches of rollouts.

Runner threads each step one EnvBatch of games and send every step's observations to ONE predictor
thread. The predictor takes all the requests waiting, runs one batched LSTM step of the global network
for them, and keeps each game's LSTM state (zeroed where an episode starts, as the A3C worker does).
Finished rollouts go to a bounded training queue; a trainer thread takes one rollout per runner,
concatenates them along the batch axis and applies the A3C gradient (the same targets, loss and
gradient processing as doom_a3c/worker.py) to the global network through the shared optimizer.
There are no local copies: acting never waits for learning, so the weights that train a rollout may
be a few updates newer than those that chose its actions. That policy lag is measured per rollout
and reported as `Perf/Policy Lag`.
"""
from __future__ import annotations

import queue
from collections import deque
from typing import NamedTuple, Sequence

import numpy as np
import tensorflow as tf

from doom_a3c.config import TrainConfig
from doom_a3c.envs import Environment
from doom_a3c.exploration import EpsilonSchedule
from doom_a3c.network import LSTMState
from doom_a3c.worker import (GameRunner, Rollout, SharedState, TrainMetrics, apply_to_global, learning_targets,
                             loss_gradients, record_update)

WAIT_SECONDS = 0.1  # how often a waiting thread looks at the stop flag


class Prediction(NamedTuple):
    logits: np.ndarray  # [E, A]
    values: np.ndarray  # [E]
    update: int  # global updates counted when the predictor read the weights


class PredictionRequest(NamedTuple):
    runner: int
    observations: np.ndarray  # [E, *obs]
    starts: np.ndarray  # [E] float32, 1 where an episode begins (LSTM reset)
    advance: bool  # keep the new LSTM state; False for a rollout's bootstrap value
    reply: "queue.Queue[Prediction]"


class TrainingItem(NamedTuple):
    rollout: Rollout
    policy_update: float  # mean global update count of the weights that chose the rollout's actions


class Stopped(Exception):
    """The run stopped while this thread was waiting on a queue."""


def wait_get(source: queue.Queue, shared: SharedState):
    while True:
        if shared.stop.is_set():
            raise Stopped
        try:
            return source.get(timeout=WAIT_SECONDS)
        except queue.Empty:
            continue


def wait_put(target: queue.Queue, item, shared: SharedState) -> None:
    while True:
        if shared.stop.is_set():
            raise Stopped
        try:
            return target.put(item, timeout=WAIT_SECONDS)
        except queue.Full:
            continue


def concatenate_rollouts(rollouts: Sequence[Rollout]) -> Rollout:
    """[T, B_i] rollouts -> one [T, sum B_i] rollout (games side by side)."""
    if len(rollouts) == 1:
        return rollouts[0]
    per_step = [np.concatenate(parts, axis=1) for parts in zip(*(r[:6] for r in rollouts))]
    state = LSTMState(np.concatenate([r.initial_state.h for r in rollouts]),
                      np.concatenate([r.initial_state.c for r in rollouts]))
    return Rollout(*per_step, state, np.concatenate([r.bootstrap_values for r in rollouts]))


class Predictor:
    """Batched acting for every runner's games with the global network; owns their LSTM states."""

    def __init__(self, shared: SharedState, games_per_runner: Sequence[int], index: int = 0):
        self.index = index
        self.shared = shared
        self.net = shared.global_net
        self._offsets = np.concatenate([[0], np.cumsum(games_per_runner)]).astype(int)
        games = int(self._offsets[-1])
        self._h = np.zeros((games, self.net.state_size), np.float32)  # [G, L]
        self._c = np.zeros((games, self.net.state_size), np.float32)
        self.requests: "queue.Queue[PredictionRequest]" = queue.Queue()
        self.batch_sizes: deque[int] = deque(maxlen=500)  # games per batched step, the latest (tests, profiling)
        self._step = tf.function(self._step_graph, reduce_retracing=True)  # batch sizes vary

    def _step_graph(self, observations, h, c, starts):
        out = self.net.step(observations, LSTMState(h, c), starts)
        return out.logits, out.values, out.state.h, out.state.c

    def _games(self, runner: int) -> slice:
        return slice(int(self._offsets[runner]), int(self._offsets[runner + 1]))

    # ---- called from runner threads -----------------------------------------------------------------
    def predict(self, runner: int, observations: np.ndarray, starts: np.ndarray, advance: bool = True) -> Prediction:
        reply: "queue.Queue[Prediction]" = queue.Queue(maxsize=1)
        self.requests.put(PredictionRequest(runner, observations, starts, advance, reply))
        return wait_get(reply, self.shared)

    def state_of(self, runner: int) -> LSTMState:
        """A copy of the runner's games' LSTM states [E, L]. Only that runner's own requests change them, so
        between its replies they hold still."""
        games = self._games(runner)
        return LSTMState(self._h[games].copy(), self._c[games].copy())

    # ---- the predictor thread -----------------------------------------------------------------------
    def serve(self, timeout: float = WAIT_SECONDS) -> int:
        """Answer every request waiting (after waiting up to `timeout` for the first) with one batched step.
        Returns the number of requests answered."""
        try:
            batch = [self.requests.get(timeout=timeout)]
        except queue.Empty:
            return 0
        while True:
            try:
                batch.append(self.requests.get_nowait())
            except queue.Empty:
                break
        games = np.concatenate([np.arange(self._games(r.runner).start, self._games(r.runner).stop) for r in batch])
        update = self.shared.updates  # read before the weights: the lag is never under-counted
        logits, values, h, c = self._step(np.concatenate([r.observations for r in batch]), self._h[games],
                                          self._c[games], np.concatenate([r.starts for r in batch]).astype(np.float32))
        logits, values, h, c = logits.numpy(), values.numpy(), h.numpy(), c.numpy()
        self.batch_sizes.append(len(games))
        position = 0
        for request in batch:
            part = slice(position, position + len(request.starts))
            position = part.stop
            if request.advance:
                self._h[self._games(request.runner)] = h[part]
                self._c[self._games(request.runner)] = c[part]
            request.reply.put(Prediction(logits[part], values[part], update))
        return len(batch)

    def run(self) -> None:
        try:
            while not self.shared.stop.is_set():
                self.serve()
        except BaseException as error:  # noqa: BLE001 - reported by the coordinator
            self.shared.fail(error)

    def close(self) -> None:
        pass


class Runner(GameRunner):
    """Steps one EnvBatch of games with actions from the predictor; queues each finished rollout."""

    def __init__(self, index: int, config: TrainConfig, envs: list[Environment], shared: SharedState,
                 predictor: Predictor, training_queue: "queue.Queue[TrainingItem]", reward_scale: float, seed: int,
                 record_every: int = 0, clip_rewards: bool = False, epsilon: EpsilonSchedule | None = None):
        super().__init__(index, config, envs, shared, reward_scale, seed, record_every, clip_rewards, epsilon)
        self.predictor = predictor
        self.training_queue = training_queue
        self._updates_seen: list[int] = []

    def _rollout_start_state(self) -> LSTMState:
        return self.predictor.state_of(self.index)

    def _policy(self, observations: np.ndarray, starts: np.ndarray):
        prediction = self.predictor.predict(self.index, observations, starts)
        self._updates_seen.append(prediction.update)
        return prediction.logits, prediction.values

    def _bootstrap(self, observations: np.ndarray, starts: np.ndarray) -> np.ndarray:
        return self.predictor.predict(self.index, observations, starts, advance=False).values

    def next_item(self) -> TrainingItem:
        self._updates_seen = []
        rollout = self.collect_rollout(self.config.rollout)
        return TrainingItem(rollout, float(np.mean(self._updates_seen)))

    def run(self) -> None:
        try:
            while not self.shared.stop.is_set():
                wait_put(self.training_queue, self.next_item(), self.shared)
        except Stopped:
            pass
        except BaseException as error:  # noqa: BLE001 - reported by the coordinator
            self.shared.fail(error)


class RolloutTrainer:
    """Trains the global network on `rollouts_per_batch` queued rollouts at a time."""

    def __init__(self, index: int, config: TrainConfig, shared: SharedState,
                 training_queue: "queue.Queue[TrainingItem]", rollouts_per_batch: int, clip_rewards: bool = False):
        self.index = index
        self.config = config
        self.shared = shared
        self.training_queue = training_queue
        self.rollouts_per_batch = rollouts_per_batch
        self.clip_rewards = clip_rewards
        self._gradients = tf.function(self._gradients_graph)
        self._apply = tf.function(self._apply_graph)

    def _gradients_graph(self, observations, actions, starts, h, c, returns, advantages):
        return loss_gradients(self.shared.global_net, self.config, observations, actions, starts, h, c, returns,
                              advantages)

    def _apply_graph(self, grads, learning_rate):
        apply_to_global(self.shared, grads, learning_rate)

    def train(self, items: Sequence[TrainingItem]) -> TrainMetrics:
        """One update of the global network from these rollouts, side by side in one batch."""
        rollout = concatenate_rollouts([item.rollout for item in items])
        returns, advantages = learning_targets(self.config, rollout, self.clip_rewards)
        # Policy lag: updates since each rollout's actions were chosen, counted as its gradient is taken.
        lag = self.shared.updates - float(np.mean([item.policy_update for item in items]))
        grads, metrics, finite = self._gradients(rollout.observations, rollout.actions, rollout.starts,
                                                 rollout.initial_state.h, rollout.initial_state.c, returns, advantages)
        applied = record_update(self.config, self.shared, grads, bool(finite), self._apply)
        return TrainMetrics(*(float(m) for m in metrics), applied=applied, policy_lag=lag)

    def run(self) -> None:
        try:
            while not self.shared.stop.is_set():
                items = [wait_get(self.training_queue, self.shared) for _ in range(self.rollouts_per_batch)]
                self.shared.latest_metrics[self.index] = self.train(items)
        except Stopped:
            pass
        except BaseException as error:  # noqa: BLE001 - reported by the coordinator
            self.shared.fail(error)

    def close(self) -> None:
        pass


def build_ga3c(config: TrainConfig, env_groups: Sequence[list[Environment]], shared: SharedState,
               reward_scale: float, clip_rewards: bool, epsilons: Sequence[EpsilonSchedule | None],
               trainers: int = 1) -> list:
    """The GA3C threads' bodies: one runner per env group (`--workers`), the predictor, `trainers` trainers.
    Each has `run()` (the thread body) and `close()`."""
    predictor = Predictor(shared, [len(group) for group in env_groups])
    # Bounded: when learning falls behind, runners wait instead of piling up ever staler rollouts.
    training_queue: "queue.Queue[TrainingItem]" = queue.Queue(maxsize=2 * len(env_groups))
    runners = [Runner(r, config, group, shared, predictor, training_queue, reward_scale, seed=config.seed + r,
                      record_every=config.gif_every if r == 0 else 0, clip_rewards=clip_rewards, epsilon=epsilons[r])
               for r, group in enumerate(env_groups)]
    learners = [RolloutTrainer(t, config, shared, training_queue, len(env_groups), clip_rewards)
                for t in range(trainers)]
    return [*runners, predictor, *learners]
