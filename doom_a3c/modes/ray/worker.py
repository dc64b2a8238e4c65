"""A Ray worker: its games and local copy, the A3C rollout and gradient of a thread worker, pushed to the
parameter server, whose reply's weights replace the local copy.
"""
from __future__ import annotations

import json
import os
import socket
from typing import Any

import numpy as np

from doom_a3c.algo.learner import Gradient
from doom_a3c.algo.local_copy import LocalCopy
from doom_a3c.algo.rollout import GameRunner, Rollout
from doom_a3c.config import TrainConfig
from doom_a3c.modes.build import (
    build_network,
    worker_epsilon,
    worker_games,
    worker_records,
    worker_seed,
)
from doom_a3c.modes.ray.messages import Push, PushReply, StepReport
from doom_a3c.modes.ray.parameter_server import configure_actor_threads
from doom_a3c.quiet_import import keras
from doom_a3c.runtime.state import EpisodeResult, RunState, TrainMetrics


class PushingWorker:
    """A worker's games and local copy, built from the config in this process; each rollout's gradient goes
    to `push` (the parameter server's `apply`, through Ray or called directly) and the weights it returns
    replace the local copy."""

    def __init__(self, index: int, config: TrainConfig, push: Push, seed_offset: int = 0):
        keras.utils.set_random_seed(worker_seed(config, index, seed_offset))
        self.index, self.config, self.push = index, config, push
        self.games = worker_games(config, index, seed_offset)
        self.spec = self.games.spec
        # This process's own counters: its steps (the epsilon schedule reads the global count, refreshed from
        # every reply) and its finished episodes, for the driver.
        self.run = RunState()
        self.local = LocalCopy(build_network(config, self.spec, f"worker_{index}"), config, len(self.games))
        self.runner = GameRunner(index, config, self.games, self.local, self.run,
                                 seed=worker_seed(config, index, seed_offset),
                                 record_every=worker_records(config, index), epsilon=worker_epsilon(config, index))
        self.last_reply: PushReply | None = None

    def accept(self, reply: PushReply) -> None:
        """Take the parameter server's weights and counters."""
        self.local.load(reply.weights)
        self.run.counters.env_steps = reply.env_steps
        self.last_reply = reply

    def learn(self, rollout: Rollout, episodes: list[EpisodeResult]) -> TrainMetrics:
        """Push each of the rollout's updates (the first with its steps and the returns of the episodes that ended
        in it); each reply's weights replace the local copy before the next is taken."""
        def push(gradient: Gradient, first: bool) -> bool:
            arrays = None
            if gradient.finite:
                arrays = [np.zeros(v.shape, np.float32) if g is None else g.numpy()
                          for g, v in zip(gradient.grads, self.local.net.trainable_variables)]
            reply = self.push(self.index, arrays, int(rollout.actions.size) if first else 0,
                              [e.reward for e in episodes] if first else [])
            self.accept(reply)
            return reply.applied
        return self.local.learn(rollout, push)

    def play_and_learn(self) -> tuple[list[EpisodeResult], TrainMetrics]:
        rollout = self.runner.collect(self.config.rollout)
        episodes = self.run.finished_episodes()
        return episodes, self.learn(rollout, episodes)

    def close(self) -> None:
        self.runner.close()


class WorkerActor:
    """One worker process (wrapped by `ray.remote`): a PushingWorker pushing to the parameter server."""

    def __init__(self, index: int, config_json: str, seed_offset: int = 0):
        configure_actor_threads(inter_op=2)
        self.index = index
        self.ps = None
        self.worker = PushingWorker(index, TrainConfig.from_dict(json.loads(config_json)), self._push, seed_offset)
        self.info = {"spec": tuple(self.worker.spec), "pid": os.getpid(), "node": socket.gethostname()}

    def describe(self) -> dict[str, Any]:
        return self.info

    def connect(self, parameter_server) -> None:
        """Remember the parameter server's handle and take its current weights."""
        import ray

        self.ps = parameter_server
        self.worker.accept(ray.get(parameter_server.pull.remote()))

    def _push(self, index: int, grads, steps: int, episode_returns: list[float]) -> PushReply:
        import ray

        return ray.get(self.ps.apply.remote(index, grads, steps, episode_returns))

    def step(self) -> StepReport:
        episodes, metrics = self.worker.play_and_learn()
        reply = self.worker.last_reply
        return StepReport(self.index, episodes, metrics, reply.env_steps, reply.updates, reply.skipped_updates,
                          reply.learning_rate, self.info["pid"], self.info["node"], self.worker.run.game_restarts())

    def close(self) -> None:
        self.worker.close()
