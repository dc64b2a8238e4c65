"""Builds a run's parts from its resolved config, one way for every mode: seeds, each worker's games,
epsilon schedule and network, the global learner and its checkpoint.

The threaded modes (A3C and GA3C) take them all at once from `build_thread_run`; the Ray parameter
server and worker processes call the same pieces in their own processes.
"""
from __future__ import annotations

import os
import threading
from typing import NamedTuple

from doom_a3c.algo.curriculum import starting_level
from doom_a3c.algo.exploration import EpsilonSchedule, worker_epsilons
from doom_a3c.algo.learner import GlobalLearner
from doom_a3c.algo.model.actor_critic import ActorCritic, build_actor_critic
from doom_a3c.algo.opponents import FrozenOpponents, OpponentPool
from doom_a3c.config import TrainConfig
from doom_a3c.envs.batch import GameBatch
from doom_a3c.envs.engine import quiet_engines
from doom_a3c.envs.factory import make_env_batch
from doom_a3c.envs.interface import EnvSpec
from doom_a3c.errors import CheckpointError
from doom_a3c.quiet_import import keras, tf
from doom_a3c.runtime.checkpoint import Checkpointer, RunCounters, restore
from doom_a3c.runtime.state import Counters, RunState

GAME_SEED_STRIDE = 1000  # worker w's game e gets seed + 1000 w + e
OPPONENT_SEED_OFFSET = 500  # worker w's game e's opponents sample with seed + 1000 w + 500 + e


def configure_threads(workers: int) -> None:
    """One intra-op thread per op (workers already run in parallel) and one inter-op thread per worker:
    the cores are shared out instead of every op fanning out to all of them."""
    cores = os.cpu_count() or 1
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1 if workers >= cores else max(1, cores // workers))
        tf.config.threading.set_inter_op_parallelism_threads(max(2, min(workers, cores)))
    except RuntimeError:  # TensorFlow already ran in this process (a second run from Python): it keeps its threads
        pass


def worker_seed(config: TrainConfig, index: int, offset: int = 0) -> int:
    """Worker i samples its actions with seed + i (a replacement Ray worker: + an offset)."""
    return config.seed + index + offset


def worker_games(config: TrainConfig, index: int, offset: int = 0, stop: threading.Event | None = None,
                 opponents: list[FrozenOpponents] | None = None) -> GameBatch:
    """Worker i's --envs-per-worker games, seeded apart from every other worker's; `stop` ends any wait for them.
    With --self-play, `opponents` (one per game) act for each game's opponents."""
    seeds = [config.seed + GAME_SEED_STRIDE * index + e + offset for e in range(config.envs_per_worker)]
    return make_env_batch(config, seeds, stop, recorded=worker_records(config, index) > 0, opponents=opponents)


def self_play_opponents(config: TrainConfig) -> tuple[OpponentPool, list[list[FrozenOpponents]]]:
    """--self-play: the run's snapshot pool and, per worker, one `FrozenOpponents` per game (their networks are
    attached once the games exist, `attach_opponent_networks`). Matches' engines are quiet: a network game's
    engines report every step of their handshake."""
    quiet_engines()
    pool = OpponentPool(config.self_play_snapshot_minutes * 60.0, seed=config.seed)
    return pool, [[FrozenOpponents(pool, config.seed + GAME_SEED_STRIDE * w + OPPONENT_SEED_OFFSET + e)
                   for e in range(config.envs_per_worker)] for w in range(config.workers)]


def attach_opponent_networks(config: TrainConfig, spec: EnvSpec, opponents: list[list[FrozenOpponents]]) -> None:
    """A network for every game's opponents, built here in the main thread (Keras); each loads its match's
    snapshot itself."""
    for w, games in enumerate(opponents):
        for e, slot in enumerate(games):
            slot.attach(build_network(config, spec, f"opponents_{w}_{e}"))


def worker_epsilon(config: TrainConfig, index: int) -> EpsilonSchedule | None:
    """Worker i's epsilon-greedy schedule, None when exploration is off."""
    if not (config.epsilon_start > 0 or config.epsilon_end > 0):
        return None
    final = worker_epsilons(config.workers, config.epsilon_start, config.epsilon_end, config.epsilon_spread)[index]
    return EpsilonSchedule(config.epsilon_start, float(final), config.epsilon_decay_steps)


def worker_records(config: TrainConfig, index: int) -> int:
    """GIFs come from worker 0's first game only."""
    return config.gif_every if index == 0 else 0


def build_network(config: TrainConfig, spec: EnvSpec, name: str, precision: str | None = None) -> ActorCritic:
    """Call in the main thread of its process: Keras keeps some per-thread global state. `precision`: the
    config's --precision unless given."""
    return build_actor_critic(config, spec.num_actions, tuple(spec.observation_shape), name=name, precision=precision)


def check_action_count(config: TrainConfig, spec: EnvSpec) -> None:
    if spec.num_actions != len(config.actions):
        raise CheckpointError(f"the games of {config.scenario} have {spec.num_actions} actions but the config "
                              f"lists {len(config.actions)}")


class GlobalParts(NamedTuple):
    learner: GlobalLearner
    saved: RunCounters  # what the checkpoint holds besides the weights and optimizer
    checkpointer: Checkpointer

    def save(self, episodes: int, wall_seconds: float) -> str:
        """A checkpoint of the global network, optimizer and counters. `episodes` is what progress.csv holds
        (flushed first by the caller), so a checkpoint never counts an episode the CSV lacks."""
        counters = self.learner.counters
        self.saved.env_steps.assign(counters.env_steps)
        self.saved.updates.assign(counters.updates)
        self.saved.episodes.assign(int(episodes))
        self.saved.wall_seconds.assign(float(wall_seconds))
        self.saved.keep_bot_level(counters.bot_level)
        return self.checkpointer.save()


def build_global(config: TrainConfig, spec: EnvSpec, resume_prefix: str | None = None,
                 counters: Counters | None = None) -> GlobalParts:
    """The global network, the shared optimizer and the checkpoint that holds them, restored from
    `resume_prefix` if given (its counters then seed `counters`)."""
    check_action_count(config, spec)
    learner = GlobalLearner(config, build_network(config, spec, "global"), counters)
    saved = RunCounters(config, spec.num_actions)
    checkpoint = tf.train.Checkpoint(model=learner.net, optimizer=learner.optimizer, run=saved)
    if resume_prefix:
        restore(checkpoint, resume_prefix)
        saved.config_json.assign(config.to_json())  # the resumed run's config from now on
        learner.counters.env_steps = int(saved.env_steps.numpy())
        learner.counters.updates = int(saved.updates.numpy())
        # The learning-rate schedule goes on over the run's whole training time, earlier legs included.
        learner.clock.earlier_seconds = float(saved.wall_seconds.numpy())
        learner.learning_rate = learner.scheduled_learning_rate()
    # Set before any game starts: the runners' first matches are played at it too.
    learner.counters.bot_level = starting_level(config.bot_curriculum, saved.restored_bot_level())
    return GlobalParts(learner, saved, Checkpointer(config.model_dir, checkpoint, saved, config.keep_checkpoints))


class ThreadRun(NamedTuple):
    """Everything a threaded run (A3C or GA3C) starts with."""

    config: TrainConfig
    games: list[GameBatch]  # one batch per worker (GA3C: per runner)
    spec: EnvSpec
    global_parts: GlobalParts
    run: RunState

    @property
    def learner(self) -> GlobalLearner:
        return self.global_parts.learner


def build_thread_run(config: TrainConfig, resume_prefix: str | None = None) -> ThreadRun:
    configure_threads(config.workers)
    keras.utils.set_random_seed(config.seed)
    # Games first: with --env-processes their processes fork here, before TensorFlow starts any thread.
    games: list[GameBatch] = []
    run = RunState(max_steps=config.max_steps)
    pool, opponents = self_play_opponents(config) if config.self_play else (None, None)
    try:
        for w in range(config.workers):
            games.append(worker_games(config, w, stop=run.stop, opponents=opponents[w] if opponents else None))
        spec = games[0].spec
        parts = build_global(config, spec, resume_prefix, run.counters)
        if pool is not None:
            attach_opponent_networks(config, spec, opponents)
            pool.source = parts.learner.weights  # the first match's first step takes the first snapshot
    except BaseException:
        for batch in games:
            batch.close()
        raise
    return ThreadRun(config, games, spec, parts, run)
