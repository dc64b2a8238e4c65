"""Self-play's opponents (--self-play): a pool of frozen snapshots of the global network, and the policy that acts
for one game slot's opponents with a snapshot drawn from it at each match's start.

As Sample Factory's self-play (arXiv 2006.11751, sec. 4.3) plays a policy against copies of itself and of its past:
a snapshot of the global weights joins the pool every --self-play-snapshot-minutes (the first at the first match),
the pool keeps the latest and up to POOL_SIZE - 1 older ones, and a match's opponents all play the latest with
probability LATEST_SHARE, else one older snapshot drawn uniformly. The latest keeps the opponents about as strong as
the learner; the older ones keep it from forgetting how to beat what it beat before (a policy that only ever meets
its newest self can cycle). Opponents act without gradients, sampling from their policy as the learner does, with
their own LSTM states. Only the learner's experience trains.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable, NamedTuple

import numpy as np

from doom_a3c.algo.model.actor_critic import ActorCritic, LSTMState
from doom_a3c.algo.rollout import sample_actions
from doom_a3c.envs.interface import network_inputs
from doom_a3c.quiet_import import tf

POOL_SIZE = 5  # the latest snapshot and up to 4 older ones
LATEST_SHARE = 0.5  # a match's opponents play the latest snapshot with this probability


class Snapshot(NamedTuple):
    version: int  # 0 for the first snapshot of the run, then 1, 2, ...
    weights: list[np.ndarray]  # the global network's trainable variables, in order


class OpponentPool:
    """The snapshots a run's matches draw their opponents from, shared by every worker (thread-safe). `source`
    copies the global weights; it is set once the global network exists (doom_a3c/modes/build.py)."""

    def __init__(self, every_seconds: float, seed: int = 0, size: int = POOL_SIZE, latest_share: float = LATEST_SHARE,
                 clock: Callable[[], float] = time.monotonic):
        self.source: Callable[[], list[np.ndarray]] | None = None
        self.every_seconds = every_seconds
        self.latest_share = latest_share
        self._snapshots: deque[Snapshot] = deque(maxlen=size)
        self._taken_at = 0.0
        self._versions = 0
        self._clock = clock
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()

    @property
    def versions(self) -> list[int]:
        """The versions in the pool, oldest first."""
        with self._lock:
            return [snapshot.version for snapshot in self._snapshots]

    def draw(self) -> Snapshot:
        """A match's opponents: a fresh snapshot is taken first when the latest is older than `every_seconds` (or
        there is none); then the latest with probability `latest_share`, else an older one, uniformly."""
        with self._lock:
            now = self._clock()
            if not self._snapshots or now - self._taken_at >= self.every_seconds:
                assert self.source is not None, "the pool needs the global weights' source before the first draw"
                self._snapshots.append(Snapshot(self._versions, [np.array(w) for w in self.source()]))
                self._versions += 1
                self._taken_at = now
            older = len(self._snapshots) - 1
            if older == 0 or self._rng.random() < self.latest_share:
                return self._snapshots[-1]
            return self._snapshots[int(self._rng.integers(older))]


class FrozenOpponents:
    """One game slot's opponents (doom_a3c/envs/doom/self_play.py's `OpponentPolicy`): at a match's first step
    a snapshot drawn from the pool is loaded into this slot's own network; then each opponent's step is an LSTM
    step with its own state (several opponents may be stepped in one batch), and an action sampled for each. The
    network is built in the main thread (Keras) and attached before the workers start."""

    def __init__(self, pool: OpponentPool, seed: int):
        self.pool = pool
        self.net: ActorCritic | None = None
        self.version: int | None = None  # the snapshot this match's opponents play
        self._rng = np.random.default_rng(seed)
        self._h = self._c = np.zeros((0, 0), np.float32)  # [K, L]: each opponent's LSTM state
        self._starts = np.zeros(0, np.float32)  # [K]: 1 until an opponent's first step of the match
        self._draw_due = False
        self._act = tf.function(self._act_graph)
        self._traces: dict = {}
        self._lock = threading.Lock()  # a match's opponents act from threads of their own

    def attach(self, net: ActorCritic) -> None:
        self.net = net

    def _act_graph(self, observations, h, c, starts):
        out = self.net.step(observations, LSTMState(h, c), starts)
        return out.logits, out.state.h, out.state.c

    def new_match(self, opponents: int) -> None:
        """The next act() starts a match of `opponents` players: a snapshot drawn, LSTM states started afresh."""
        size = self.net.state_size if self.net is not None else 0
        self._h, self._c = np.zeros((opponents, size), np.float32), np.zeros((opponents, size), np.float32)
        self._starts = np.ones(opponents, np.float32)
        self._draw_due = True

    def _load(self, snapshot: Snapshot) -> None:
        for variable, value in zip(self.net.trainable_variables, snapshot.weights):
            variable.assign(value)
        self.version = snapshot.version

    def act(self, observations: np.ndarray, players: np.ndarray) -> np.ndarray:
        """The next actions of opponents `players` (indexes into the match's K), in one batched step: observations
        [N, *obs] -> actions [N] int32. Each opponent's LSTM state is its own; opponents may act from threads of
        their own, each for itself (doom_a3c/envs/doom/self_play.py)."""
        assert self.net is not None, "attach() the opponents' network first"
        inputs = tf.nest.map_structure(tf.constant, network_inputs(observations))
        shapes = tuple(tuple(x.shape) for x in tf.nest.flatten(inputs))
        with self._lock:
            if self._draw_due:
                if self._h.shape[1] != self.net.state_size:  # new_match() came before attach()
                    self.new_match(len(self._starts))
                self._load(self.pool.draw())
                self._draw_due = False
            trace = self._traces.get(shapes)
            h, c, starts = (tf.constant(x[players]) for x in (self._h, self._c, self._starts))
            if trace is None:  # called straight, as LocalCopy's: no argument matching against the traces each step
                trace = self._traces[shapes] = self._act.get_concrete_function(inputs, h, c, starts)
        logits, h, c = trace(inputs, h, c, starts)
        self._h[players], self._c[players], self._starts[players] = h.numpy(), c.numpy(), 0.0
        return sample_actions(logits.numpy(), self._rng)
