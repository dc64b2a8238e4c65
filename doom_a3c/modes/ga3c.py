"""GA3C-style training (`--trainer ga3c`, after Babaeizadeh et al., 2017): runners play, one
predictor acts for all of them, trainer threads learn from batches of rollouts.

Runner threads each step one EnvBatch of games and send every step's observations to ONE predictor
thread. The predictor takes all the requests waiting, runs one batched LSTM step of the global network
for them, and keeps each game's LSTM state (zeroed where an episode starts, as the A3C worker does).
Finished rollouts go to a bounded training queue; a trainer thread takes one rollout per runner,
concatenates them along the batch axis and applies the A3C gradient (the same targets, loss and
gradient processing as A3C, doom_a3c/algo/learner.py) to the global network through the shared optimizer.
There are no local copies: acting never waits for learning, so the weights that train a rollout may
be a few updates newer than those that chose its actions. That policy lag is measured per rollout
and reported as `Perf/Policy Lag`.
"""
from __future__ import annotations

import queue
from collections import deque
from typing import NamedTuple, Sequence

import numpy as np

from doom_a3c.algo.learner import GlobalLearner, GradientStep, learn_from_rollout
from doom_a3c.algo.model.actor_critic import ActorCritic, LSTMState
from doom_a3c.algo.rollout import GameRunner, Rollout, concatenate_rollouts
from doom_a3c.envs.interface import network_inputs
from doom_a3c.errors import Stopped
from doom_a3c.modes.build import ThreadRun, worker_epsilon, worker_records, worker_seed
from doom_a3c.quiet_import import tf
from doom_a3c.runtime.state import RunState, TrainMetrics

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


def wait_get(source: queue.Queue, run: RunState):
    while True:
        if run.stop.is_set():
            raise Stopped
        try:
            return source.get(timeout=WAIT_SECONDS)
        except queue.Empty:
            continue


def wait_put(target: queue.Queue, item, run: RunState) -> None:
    while True:
        if run.stop.is_set():
            raise Stopped
        try:
            return target.put(item, timeout=WAIT_SECONDS)
        except queue.Full:
            continue


class Predictor:
    """Batched acting for every runner's games with the global network; owns their LSTM states."""

    def __init__(self, net: ActorCritic, run: RunState, games_per_runner: Sequence[int], index: int = 0,
                 jit_compile: bool = False):
        self.index = index
        self.run = run
        self.net = net
        self._offsets = np.concatenate([[0], np.cumsum(games_per_runner)]).astype(int)
        games = int(self._offsets[-1])
        self._h = np.zeros((games, self.net.state_size), np.float32)  # [G, L]
        self._c = np.zeros((games, self.net.state_size), np.float32)
        self.requests: "queue.Queue[PredictionRequest]" = queue.Queue()
        self.batch_sizes: deque[int] = deque(maxlen=500)  # games per batched step, the latest (tests, profiling)
        # Batch sizes vary; with --jit-compile, XLA compiles the step once for each batch size it meets.
        self._step = tf.function(self._step_graph, reduce_retracing=True, jit_compile=jit_compile or None)
    def _step_graph(self, observations, h, c, starts):
        out = self.net.step(observations, LSTMState(h, c), starts)
        return out.logits, out.values, out.state.h, out.state.c

    def _games(self, runner: int) -> slice:
        return slice(int(self._offsets[runner]), int(self._offsets[runner + 1]))

    # ---- called from runner threads -----------------------------------------------------------------
    def predict(self, runner: int, observations: np.ndarray, starts: np.ndarray, advance: bool = True) -> Prediction:
        reply: "queue.Queue[Prediction]" = queue.Queue(maxsize=1)
        self.requests.put(PredictionRequest(runner, observations, starts, advance, reply))
        return wait_get(reply, self.run)

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
        update = self.run.counters.updates  # read before the weights: the lag is never under-counted
        observations = network_inputs(np.concatenate([r.observations for r in batch]))
        logits, values, h, c = self._step(observations, self._h[games],
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

    def run_thread(self) -> None:
        try:
            while not self.run.stop.is_set():
                self.serve()
        except BaseException as error:  # noqa: BLE001 - reported by the coordinator
            self.run.fail(error)

    def close(self) -> None:
        pass


class PredictorPolicy:
    """One runner's view of the predictor: the `Policy` its GameRunner acts with."""

    def __init__(self, predictor: Predictor, runner: int):
        self.predictor = predictor
        self.runner = runner
        self.updates_seen: list[int] = []

    def start_state(self) -> LSTMState:
        return self.predictor.state_of(self.runner)

    def act(self, observations: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        prediction = self.predictor.predict(self.runner, observations, starts)
        self.updates_seen.append(prediction.update)
        return prediction.logits, prediction.values

    def value(self, observations: np.ndarray, starts: np.ndarray) -> np.ndarray:
        return self.predictor.predict(self.runner, observations, starts, advance=False).values


class Runner:
    """Steps one batch of games with actions from the predictor; queues each finished rollout."""

    def __init__(self, index: int, game_runner: GameRunner, policy: PredictorPolicy, rollout_length: int,
                 training_queue: "queue.Queue[TrainingItem]"):
        self.index = index
        self.game_runner = game_runner
        self.policy = policy
        self.rollout_length = rollout_length
        self.training_queue = training_queue
        self.run = game_runner.run

    def next_item(self) -> TrainingItem:
        self.policy.updates_seen = []
        rollout = self.game_runner.collect(self.rollout_length)
        return TrainingItem(rollout, float(np.mean(self.policy.updates_seen)))

    def run_thread(self) -> None:
        try:
            while not self.run.stop.is_set():
                wait_put(self.training_queue, self.next_item(), self.run)
        except Stopped:
            pass
        except BaseException as error:  # noqa: BLE001 - reported by the coordinator
            self.run.fail(error)

    def close(self) -> None:
        self.game_runner.close()


class RolloutTrainer:
    """Trains the global network on `rollouts_per_batch` queued rollouts at a time."""

    def __init__(self, index: int, learner: GlobalLearner, gradient: GradientStep, run: RunState,
                 training_queue: "queue.Queue[TrainingItem]", rollouts_per_batch: int):
        self.index = index
        self.learner = learner
        self.gradient = gradient
        self.run = run
        self.training_queue = training_queue
        self.rollouts_per_batch = rollouts_per_batch

    def train(self, items: Sequence[TrainingItem]) -> TrainMetrics:
        """One update of the global network from these rollouts, side by side in one batch."""
        rollout = concatenate_rollouts([item.rollout for item in items])
        # Policy lag: updates since each rollout's actions were chosen, counted as its gradient is taken.
        lag = self.learner.counters.updates - float(np.mean([item.policy_update for item in items]))
        # The gradient is taken on the global network itself: each update sees the ones before it, nothing to sync.
        return learn_from_rollout(self.gradient, rollout, lambda g, first: self.learner.apply(g.grads, g.finite),
                                  policy_lag=lag)

    def run_thread(self) -> None:
        try:
            while not self.run.stop.is_set():
                items = [wait_get(self.training_queue, self.run) for _ in range(self.rollouts_per_batch)]
                self.run.latest_metrics[self.index] = self.train(items)
        except Stopped:
            pass
        except BaseException as error:  # noqa: BLE001 - reported by the coordinator
            self.run.fail(error)

    def close(self) -> None:
        pass


def ga3c_threads(run_parts: ThreadRun, trainers: int = 1) -> list:
    """The GA3C threads' bodies: one runner per game batch (`--workers`), the predictor, `trainers` trainers.
    Each has `run_thread()` and `close()`."""
    config, run, learner = run_parts.config, run_parts.run, run_parts.learner
    predictor = Predictor(learner.net, run, [len(games) for games in run_parts.games], jit_compile=config.jit_compile)
    # Bounded: when learning falls behind, runners wait instead of piling up ever staler rollouts.
    training_queue: "queue.Queue[TrainingItem]" = queue.Queue(maxsize=2 * len(run_parts.games))
    runners = []
    for r, games in enumerate(run_parts.games):
        policy = PredictorPolicy(predictor, r)
        game_runner = GameRunner(r, config, games, policy, run, seed=worker_seed(config, r),
                                 record_every=worker_records(config, r), epsilon=worker_epsilon(config, r))
        runners.append(Runner(r, game_runner, policy, config.rollout, training_queue))
    gradient = GradientStep(learner.net, config)
    learners = [RolloutTrainer(t, learner, gradient, run, training_queue, len(run_parts.games))
                for t in range(trainers)]
    return [*runners, predictor, *learners]
