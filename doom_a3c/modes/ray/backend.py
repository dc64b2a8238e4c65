"""The driver of --distributed ray (`RayBackend`, in the train.py process): the coordinator's backend. It starts
the parameter server and the workers as Ray actors, asks each worker for one rollout at a time, queues the
episodes that come back, replaces a worker whose process died, and has the parameter server save on the
coordinator's schedule.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import time
from typing import Any

from doom_a3c.config import TrainConfig
from doom_a3c.envs.interface import EnvSpec
from doom_a3c.errors import CheckpointError, ConfigError, one_line
from doom_a3c.modes.ray.messages import StepReport, WorkerFailed
from doom_a3c.modes.ray.parameter_server import ParameterServer
from doom_a3c.modes.ray.session import RaySession
from doom_a3c.modes.ray.worker import WorkerActor
from doom_a3c.runtime.files import LAST
from doom_a3c.runtime.state import RunState

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
