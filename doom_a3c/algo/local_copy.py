"""A worker's own copy of the network (A3C, threads or Ray): it acts for the worker's games, takes the
gradient of their rollouts, and is refreshed from the global weights after each update."""
from __future__ import annotations

import numpy as np

from typing import Callable

from doom_a3c.algo.learner import Gradient, GradientStep, learn_from_rollout
from doom_a3c.algo.model.actor_critic import ActorCritic, LSTMState
from doom_a3c.algo.rollout import Rollout
from doom_a3c.config import TrainConfig
from doom_a3c.envs.interface import network_inputs
from doom_a3c.quiet_import import tf
from doom_a3c.runtime.state import TrainMetrics


class LocalCopy:
    """A `Policy` for a GameRunner, with its own LSTM state for the batch's games."""

    def __init__(self, net: ActorCritic, config: TrainConfig, batch_size: int):
        self.net = net
        self._state = net.initial_state(batch_size)
        self._gradient = GradientStep(net, config)
        self._act = tf.function(self._act_graph, jit_compile=config.jit_compile or None)  # --jit-compile: XLA
        self._act_traces: dict = {}  # input shapes -> the act graph's concrete function
        self._copy = tf.function(self._copy_graph)
        self._synced_from: list = []  # the global variables `_sync_from_them` reads
        self._sync_from_them = None

    def _act_graph(self, observations, h, c, starts):
        out = self.net.step(observations, LSTMState(h, c), starts)
        return out.logits, out.values, out.state.h, out.state.c

    def _copy_graph(self, sources):
        for local, source in zip(self.net.trainable_variables, sources):
            local.assign(source)

    # ---- Policy ------------------------------------------------------------------------------------
    def start_state(self) -> LSTMState:
        return LSTMState(self._state.h.numpy(), self._state.c.numpy())

    def _step(self, observations: np.ndarray, starts: np.ndarray):
        """The act graph on this batch. Its concrete function is called straight, with tensors: a tf.function
        call first matches its arguments against its traces, about 0.5 ms of Python on this machine (the GIL
        held) for each of a rollout's 11 calls (docs/measuring/speed-and-memory.md)."""
        inputs = tf.nest.map_structure(tf.constant, network_inputs(observations))
        starts = tf.constant(starts, tf.float32)
        shapes = tuple(tuple(x.shape) for x in tf.nest.flatten(inputs))
        trace = self._act_traces.get(shapes)
        if trace is None:
            trace = self._act_traces[shapes] = self._act.get_concrete_function(inputs, self._state.h,
                                                                              self._state.c, starts)
        return trace(inputs, self._state.h, self._state.c, starts)

    def act(self, observations: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        logits, values, h, c = self._step(observations, starts)
        self._state = LSTMState(h, c)
        return logits.numpy(), values.numpy()

    def value(self, observations: np.ndarray, starts: np.ndarray) -> np.ndarray:
        _, values, _, _ = self._step(observations, starts)
        return values.numpy()

    # ---- learning ----------------------------------------------------------------------------------
    def gradient(self, rollout: Rollout) -> Gradient:
        """A3C's one update on the rollout, on this copy."""
        return self._gradient(rollout)

    def learn(self, rollout: Rollout, apply: Callable[[Gradient, bool], bool]) -> TrainMetrics:
        """Every update of the rollout (--epochs, --minibatches) taken on this copy; `apply` must refresh it."""
        return learn_from_rollout(self._gradient, rollout, apply)

    def sync(self, global_variables) -> None:
        """Take the global network's weights (threads: the global network is in this process). The copy is
        compiled with the variables bound in, not passed: a list of variables passed to a tf.function costs
        several ms of Python a call to match against the trace, bound a tenth of that
        (docs/measuring/speed-and-memory.md), and that Python holds the GIL the other worker needs."""
        sources = list(global_variables)
        if [id(v) for v in sources] != [id(v) for v in self._synced_from]:
            self._synced_from = sources
            self._sync_from_them = tf.function(lambda: self._copy_graph(sources))
        self._sync_from_them()

    def load(self, weights: list[np.ndarray]) -> None:
        """Take the global weights as arrays (a Ray worker: from the parameter server's reply)."""
        self._copy([tf.convert_to_tensor(w) for w in weights])
