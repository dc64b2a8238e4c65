"""A3C across processes and machines on Ray (`--distributed ray`, seed 000's parameter server and workers).

Three kinds of process, all built by doom_a3c/build.py's functions from the run's resolved config:

- one parameter-server actor (`ParameterServer`): the global network and shared optimizer (the learning
  core's `GlobalLearner`), the run's counters, the returns the workers report with their gradients (seed
  000's GLOBAL_EP and GLOBAL_RUNNING_R). It applies pushed gradients (never a non-finite one), serves fresh
  weights and writes the checkpoints, in the threaded modes' format, into --model-dir. It is pinned to the
  driver's node, so that folder is the driver's.
- `--workers` worker actors (`PushingWorker`): a worker's games and local copy, the same rollouts and
  gradient as a thread A3C worker; the gradient is pushed to the parameter server and the weights of its
  reply replace the local copy (`ray.get` on the push: the plain A3C sync).
- the driver (`RayBackend`, in the train.py process): the coordinator's backend. It asks each worker for
  one rollout at a time, queues the episodes that come back, replaces a worker whose process died, and has
  the parameter server save on the coordinator's schedule.

The plain classes run without Ray (the tests drive `ParameterServer` and `PushingWorker` directly); Ray
wraps them with `ray.remote` only here, at run time.
"""
from __future__ import annotations

import dataclasses
import json
import os
import socket
import sys
import time
from collections import deque
from typing import Any, Callable, NamedTuple

import numpy as np

from doom_a3c.build import (GlobalParts, build_global, build_network, worker_epsilon, worker_games, worker_records,
                            worker_seed)
from doom_a3c.config import ConfigError, TrainConfig, one_line
from doom_a3c.environment import EnvSpec
from doom_a3c.gradients import process_gradients
from doom_a3c.learning import all_finite
from doom_a3c.local_copy import LocalCopy
from doom_a3c.quiet_import import keras, tf
from doom_a3c.ray_session import RaySession
from doom_a3c.rollout import GameRunner, Rollout
from doom_a3c.run_files import LAST, CheckpointError
from doom_a3c.run_state import EpisodeResult, GameRestart, RunState, TrainMetrics

SEED_STRIDE = 100_000  # a replacement worker's games and sampling get seeds this far from its predecessor's
START_TIMEOUT_S = 300.0  # for the actors to start (a cluster without free CPUs would otherwise wait forever)
STOP_TIMEOUT_S = 60.0  # for the parameter server's final save
# For the rollouts under way when the run stops: a rollout takes well under a second, and one waiting on a stalled
# game (replaced only after --game-timeout) is dropped instead, with nothing of it counted: the run stops in seconds.
STOP_WAIT_S = 10.0
# A worker whose rollout has not come back within --game-timeout x 2 + this is lost, as one whose process died: its
# games' own watchdog should have answered long before (a rollout takes well under a second; the first one traces
# the network), so the actor itself is stuck. It is killed and replaced.
STEP_GRACE_S = 60.0
MAX_DEATHS_IN_A_ROW = 3  # a worker that dies this often without finishing a rollout stops the run


class PushReply(NamedTuple):
    """The parameter server's answer to a push or a pull."""

    weights: list[np.ndarray]  # the global network's trainable variables, in order
    env_steps: int  # global environment steps after this push
    updates: int
    skipped_updates: int
    applied: bool  # False: the pushed gradient was not finite (or was None) and was dropped
    learning_rate: float


class StepReport(NamedTuple):
    """What one worker actor's rollout sends back to the driver."""

    worker: int
    episodes: list[EpisodeResult]  # finished during the rollout, true (unscaled) scores; GIF frames if recorded
    metrics: TrainMetrics
    env_steps: int  # the parameter server's counters after this rollout's push
    updates: int
    skipped_updates: int
    learning_rate: float
    pid: int  # the worker's process
    node: str
    restarts: list[GameRestart]  # games that failed and were restarted during the rollout


class WorkerFailed(RuntimeError):
    """A worker actor raised (a game crashed, a bug): the run stops, as a failed worker thread stops it."""


def configure_actor_threads(inter_op: int = 2) -> None:
    """Each actor is its own process with (in the usual set-up) one CPU: one intra-op thread, so that the
    processes share the cores instead of each fanning every op out to all of them."""
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(inter_op)
    except RuntimeError:  # TensorFlow already initialised in this process (a reused Ray worker): keep it
        pass


# ---- the parameter server ---------------------------------------------------------------------------------
class ParameterServer:
    """The global learner and the run's counters in one process; saves checkpoints in the threaded format."""

    def __init__(self, config_json: str, configure_threads: bool = True):
        if configure_threads:
            configure_actor_threads(inter_op=1)
        self.config = TrainConfig.from_dict(json.loads(config_json))
        self.parts: GlobalParts | None = None
        self.episodes = 0  # episodes the workers reported with their pushes (seed 000's GLOBAL_EP)
        self.recent_returns: deque[float] = deque(maxlen=100)  # seed 000's GLOBAL_RUNNING_R queue

    def build(self, spec: EnvSpec, resume_prefix: str | None = None) -> str | None:
        """Build (and restore) the global network once the games tell its shape. Returns None, or the reason
        the checkpoint cannot be restored (a user error, reported by the driver)."""
        cfg = self.config
        try:
            self.parts = build_global(cfg, EnvSpec(*spec), resume_prefix)
        except CheckpointError as error:
            return str(error)
        bound = cfg.clip_norm if cfg.gradient_mode == "clip" else cfg.normalize_norm
        # The workers' gradients are already processed; doing it again here is idempotent and keeps the
        # --clip-norm bound true whatever arrives over the network.
        self._process = tf.function(lambda grads: process_gradients(grads, cfg.gradient_mode, bound)[0])
        if resume_prefix:
            self.episodes = int(self.parts.saved.episodes.numpy())
        return None

    @property
    def counters(self):
        return self.parts.learner.counters

    def weights(self) -> list[np.ndarray]:
        return self.parts.learner.weights()

    def _reply(self, applied: bool) -> PushReply:
        counters = self.counters
        return PushReply(self.weights(), counters.env_steps, counters.updates, counters.skipped_updates, applied,
                         self.parts.learner.learning_rate)

    def start_clock(self) -> None:
        """The run's training starts now: the learning-rate schedule's time counts from here (--max-minutes)."""
        self.parts.learner.clock.start()

    def pull(self) -> PushReply:
        """Fresh weights and counters, without pushing anything."""
        return self._reply(False)

    def apply(self, worker: int, grads: list[np.ndarray] | None, steps: int,
              episode_returns: list[float] = ()) -> PushReply:
        """Count `steps` and the finished episodes' returns, apply `grads` unless missing or not finite (a
        NaN/Inf must never reach the global weights; it is counted as skipped), and return the new weights."""
        learner = self.parts.learner
        learner.counters.add_steps(int(steps))
        for episode_return in episode_returns:
            self.episodes += 1
            self.recent_returns.append(float(episode_return))
        finite = grads is not None and len(grads) == len(learner.net.trainable_variables) and all_finite(grads)
        if finite:
            grads = self._process([tf.convert_to_tensor(g, tf.float32) for g in grads])
        return self._reply(learner.apply(grads or [], finite))

    def status(self) -> dict[str, Any]:
        counters = self.counters
        return {"env_steps": counters.env_steps, "updates": counters.updates,
                "skipped_updates": counters.skipped_updates, "episodes": self.episodes,
                "recent_returns": list(self.recent_returns), "pid": os.getpid()}

    def save(self, episodes: int, wall_seconds: float) -> str:
        """`episodes` is what the driver has written to progress.csv (flushed before it asks)."""
        return self.parts.save(episodes, wall_seconds)


# ---- the workers --------------------------------------------------------------------------------------------
Push = Callable[[int, "list[np.ndarray] | None", int, list], PushReply]


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
        """Push the rollout's gradient with the returns of the episodes that ended in it; take the reply."""
        gradient = self.local.gradient(rollout)
        arrays = None
        if gradient.finite:
            arrays = [np.zeros(v.shape, np.float32) if g is None else g.numpy()
                      for g, v in zip(gradient.grads, self.local.net.trainable_variables)]
        reply = self.push(self.index, arrays, int(rollout.actions.size), [e.reward for e in episodes])
        self.accept(reply)
        return gradient.metrics(reply.applied)

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


# Ray rewrites the methods of the classes it wraps (tracing hooks): it gets subclasses of its own, importable by
# name in every worker process, and the plain classes above stay plain for the tests.
class ParameterServerActor(ParameterServer):
    """`ParameterServer` in its own process (wrapped by `ray.remote` at run time)."""


class WorkerActorProcess(WorkerActor):
    """`WorkerActor` in its own process (wrapped by `ray.remote` at run time)."""


# ---- the driver -------------------------------------------------------------------------------------------------
class RayBackend:
    """The coordinator's backend with Ray actors as workers and global network."""

    def __init__(self, config: TrainConfig, resume_prefix: str | None = None):
        # The parameter server writes into --model-dir from its own process: give it the absolute path.
        self.config = dataclasses.replace(config, model_dir=os.path.abspath(config.model_dir))
        self.config_json = self.config.to_json()
        self.run = RunState()
        self.session: RaySession | None = RaySession(config)
        self.ps = None
        self.actors: dict[int, Any] = {}
        self.pending: dict[Any, int] = {}  # ObjectRef of a step() under way -> worker index
        self.submitted: dict[Any, float] = {}  # ObjectRef of a step() under way -> when (time.time())
        self.deaths_in_a_row = {w: 0 for w in range(config.workers)}
        self.restarts = 0
        self.worker_pids: dict[int, int] = {}
        self.current_learning_rate = config.learning_rate
        self.description = f"a3c, distributed on {self.session.where}"
        try:
            self._start_actors(resume_prefix)
        except BaseException:
            self._shutdown()
            raise

    def _start_actors(self, resume_prefix: str | None) -> None:
        cfg = self.config
        ray = self.ray = self.session.ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.ParameterServerActor = ray.remote(num_cpus=0)(ParameterServerActor)
        self.WorkerActorClass = ray.remote(num_cpus=1)(WorkerActorProcess)
        for w in range(cfg.workers):
            self.actors[w] = self._new_worker_actor(w, seed_offset=0)
        # Started now, built once the games tell their shape: the processes start side by side. Pinned to this
        # node: the checkpoints it writes land in --model-dir on the driver's disk.
        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
        self.ps = self.ParameterServerActor.options(scheduling_strategy=here).remote(self.config_json)
        infos = self._get_or_explain([self.actors[w].describe.remote() for w in range(cfg.workers)],
                                     f"{cfg.workers} worker actors (1 CPU each)")
        self.spec = EnvSpec(*infos[0]["spec"])
        for w, worker_info in enumerate(infos):
            self.worker_pids[w] = worker_info["pid"]
            print(f"ray: worker {w} started (pid {worker_info['pid']} on {worker_info['node']})", flush=True)
        prefix = os.path.abspath(resume_prefix) if resume_prefix else None
        problem = self._get_or_explain(self.ps.build.remote(tuple(self.spec), prefix), "the parameter server")
        if problem:
            raise CheckpointError(problem)
        status = self._get_or_explain(self.ps.status.remote(), "the parameter server")
        print(f"ray: parameter server started (pid {status['pid']}, on the driver's node)", flush=True)
        for actor in self.actors.values():
            actor.connect.remote(self.ps)
        self.run.counters.raise_to(status["env_steps"], status["updates"], status["skipped_updates"])

    def _new_worker_actor(self, index: int, seed_offset: int):
        return self.WorkerActorClass.options(scheduling_strategy="SPREAD", name=None).remote(
            index, self.config_json, seed_offset)

    def _get_or_explain(self, refs, what: str):
        """ray.get for start-up calls: a timeout or an actor that cannot start becomes one clear line."""
        ray = self.ray
        try:
            return ray.get(refs, timeout=START_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            resources = ray.cluster_resources()
            raise ConfigError(f"{what} did not start within {START_TIMEOUT_S:g} s on {self.session.where} "
                              f"(it has {resources.get('CPU', 0):g} CPUs); free CPUs or use fewer --workers") from None
        except ray.exceptions.RayError as error:
            raise ConfigError(f"{what} could not start on {self.session.where}: {one_line(error)}") from None

    # ---- the coordinator's backend -----------------------------------------------------------------------
    def start(self) -> None:
        # Not waited for: it reaches the parameter server long before the first rollout's push.
        self.ps.start_clock.remote()
        for index in self.actors:
            self._submit(index)

    def _submit(self, index: int) -> None:
        ref = self.actors[index].step.remote()
        self.pending[ref], self.submitted[ref] = index, time.time()

    def wait(self, timeout: float) -> bool:
        deadline = time.time() + timeout
        while not self.run.stop.is_set():
            remaining = deadline - time.time()
            if remaining <= 0:
                break
            if not self.pending:
                time.sleep(remaining)
                break
            ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=remaining)
            for ref in ready:
                self._collect(ref, resubmit=True)
            self._replace_stuck_workers()
        return self.run.stop.is_set()

    def _replace_stuck_workers(self) -> None:
        bound = self.config.game_timeout * 2 + STEP_GRACE_S
        for ref, submitted in list(self.submitted.items()):
            if ref in self.pending and time.time() - submitted > bound and not self.run.stop.is_set():
                index = self.pending.pop(ref)
                del self.submitted[ref]
                self._worker_died(index, TimeoutError(f"no rollout within {bound:g} s"), replace=True)

    def _collect(self, ref, resubmit: bool) -> None:
        """Take one finished step(): queue its episodes and metrics for the shared loop, and start the next."""
        ray = self.ray
        index = self.pending.pop(ref)
        self.submitted.pop(ref, None)
        try:
            report: StepReport = ray.get(ref)
        except ray.exceptions.RayTaskError as error:  # raised inside the worker (its game, or the PS, failed)
            self.run.fail(WorkerFailed(f"worker {index}: {one_line(error)}"))
            return
        except ray.exceptions.RayActorError as error:  # the worker's process is gone
            self._worker_died(index, error, replace=resubmit and not self.run.stop.is_set())
            return
        self.deaths_in_a_row[index] = 0
        if self.worker_pids.get(index) != report.pid:  # a replacement's first rollout
            self.worker_pids[index] = report.pid
            print(f"ray: worker {index} restarted (pid {report.pid} on {report.node}) and training", flush=True)
        for episode in report.episodes:
            self.run.episodes.put(episode)
        for restart in report.restarts:
            self.run.restarts.put(restart)
        self.run.latest_metrics[index] = report.metrics
        self.run.counters.raise_to(report.env_steps, report.updates, report.skipped_updates)
        self.current_learning_rate = report.learning_rate
        if resubmit and not self.run.stop.is_set():
            self._submit(index)

    def _worker_died(self, index: int, error: BaseException, replace: bool) -> None:
        self.deaths_in_a_row[index] += 1
        reason = one_line(error)
        if not replace:
            print(f"warning: worker {index} died while the run was stopping ({reason})", file=sys.stderr, flush=True)
            return
        if self.deaths_in_a_row[index] >= MAX_DEATHS_IN_A_ROW:
            self.run.fail(WorkerFailed(f"worker {index} died {MAX_DEATHS_IN_A_ROW} times in a row without "
                                          f"finishing a rollout; last: {reason}"))
            return
        self.restarts += 1
        offset = self.restarts * SEED_STRIDE
        print(f"warning: worker {index} (pid {self.worker_pids.get(index, '?')}) died ({reason}); replaced by a new "
              f"actor with seed offset {offset}, training goes on", file=sys.stderr, flush=True)
        self.ray.kill(self.actors[index], no_restart=True)
        self.actors[index] = self._new_worker_actor(index, offset)
        self.actors[index].connect.remote(self.ps)
        self.worker_pids[index] = -1  # learnt from its first report (not waited for: the others keep going)
        self._submit(index)

    def stop(self) -> None:
        """Let the rollouts under way finish (their gradients are applied and their episodes must be logged), for
        up to STOP_WAIT_S; the rest are dropped."""
        deadline = time.time() + STOP_WAIT_S
        while self.pending and time.time() < deadline:
            ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=max(0.0, deadline - time.time()))
            for ref in ready:
                self._collect(ref, resubmit=False)

    def learning_rate(self) -> float:
        return self.current_learning_rate

    def save(self, episodes: int, wall_seconds: float) -> str:
        if self.ps is None:
            return ""
        try:
            return self.ray.get(self.ps.save.remote(episodes, wall_seconds), timeout=STOP_TIMEOUT_S)
        except (self.ray.exceptions.RayError, self.ray.exceptions.GetTimeoutError) as error:
            self.run.fail(WorkerFailed(f"the parameter server could not save ({one_line(error)}); the last "
                                       f"checkpoint in {self.config.model_dir}/{LAST} stands"))
            return ""

    def close(self) -> None:
        self._shutdown()

    def _shutdown(self) -> None:
        """Close the games, end the actors, and leave Ray as it was found (idempotent)."""
        if self.session is None:
            return
        ray = self.session.ray
        if ray.is_initialized():
            actors = list(self.actors.values())
            closing = [actor.close.remote() for actor in actors]
            if closing:
                ray.wait(closing, num_returns=len(closing), timeout=10)
            for actor in actors + ([self.ps] if self.ps is not None else []):
                ray.kill(actor, no_restart=True)
        self.actors, self.ps = {}, None
        self.session.close()
        self.session = None
