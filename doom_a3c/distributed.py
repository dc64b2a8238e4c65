"""A3C across processes and machines on Ray (`--distributed ray`, seed 000's parameter server and workers).

Three kinds of process:

- one parameter-server actor (`ParameterServer`): the global network, the shared optimizer, the global
  step and update counters, the episodes the workers reported with their gradients and the recent returns
  (seed 000's GLOBAL_EP and GLOBAL_RUNNING_R queue). It applies pushed gradients (never a non-finite one),
  serves fresh weights and writes the checkpoints, in exactly the threaded trainer's format, into
  --model-dir. It is pinned to the driver's node, so that folder is the driver's.
- `--workers` worker actors (`WorkerActor`), each one `PushingWorker`: the threaded A3C `Worker` (the same
  games, batched acting, returns, loss and gradient processing) whose "apply the gradient" step pushes it
  to the parameter server and takes the new weights back (`ray.get` on the push: the plain A3C sync).
- the driver (`RayTrainer`, in the train.py process): the threaded `Trainer`'s loop, logging, GIFs,
  stop conditions and signals, unchanged; only how the workers are started, pumped and stopped differs.
  It asks each worker for one rollout at a time, logs the episodes that come back, replaces a worker
  whose process died, and asks the parameter server to save on the threaded schedule.

The plain classes run without Ray (the tests drive `ParameterServer` and `PushingWorker` directly); Ray
wraps them with `ray.remote` only here, at run time, so `import doom_a3c` never imports Ray.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import sys
import time
from collections import deque
from typing import Any, Callable, NamedTuple

import keras
import numpy as np
import tensorflow as tf

from doom_a3c.checkpoint import LAST, Checkpointer, CheckpointError, RunCounters, restore
from doom_a3c.config import ConfigError, TrainConfig
from doom_a3c.envs import clips_rewards, make_environment, observation_shape_of, reward_scale_for, seconds_per_step
from doom_a3c.exploration import EpsilonSchedule, worker_epsilons
from doom_a3c.gradients import process_gradients
from doom_a3c.network import ActorCritic, build_actor_critic
from doom_a3c.schedules import learning_rate_at
from doom_a3c.summaries import RunLog
from doom_a3c.trainer import Trainer, build_optimizer
from doom_a3c.worker import EpisodeResult, Rollout, SharedState, TrainMetrics, Worker

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# AF_UNIX socket paths are limited to 107 bytes; Ray puts its sockets in
# <temp dir>/session_<date>_<time>_<microseconds>_<pid>/sockets/plasma_store (64 characters after the temp dir
# with a 7-digit pid). A temp dir longer than this is replaced by a short one in /tmp.
SOCKET_PATH_LIMIT = 107
SESSION_SOCKET_SUFFIX = len("/session_2026-01-01_00-00-00_000000_1234567/sockets/plasma_store")
SEED_STRIDE = 100_000  # a replacement worker's games and sampling get seeds this far from its predecessor's
START_TIMEOUT_S = 300.0  # for the actors to start (a cluster without free CPUs would otherwise wait forever)
STOP_TIMEOUT_S = 60.0  # for the rollouts under way when the run stops
MAX_DEATHS_IN_A_ROW = 3  # a worker that dies this often without finishing a rollout stops the run
SHIPPED_TO_CLUSTER = ("doom_a3c", "scenarios")  # the package and the scenario presets it reads


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


def one_line(error: BaseException) -> str:
    """The first line of an error's text (Ray's errors carry whole remote tracebacks)."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, BaseException) and cause is not error:
        return one_line(cause)
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0] if lines else ''}"[:300]


# ---- the parameter server ---------------------------------------------------------------------------------
class ParameterServer:
    """The global network, the shared optimizer and the run's counters, in one process; saves checkpoints
    in the threaded trainer's format (tf.train.Checkpoint(model, optimizer, run) through Checkpointer)."""

    def __init__(self, config_json: str, model_dir: str, num_actions: int | None = None,
                 observation_shape: tuple[int, ...] | None = None, configure_threads: bool = True):
        """Builds the network now if the action count and observation shape are given, else at `build`
        (the driver starts this process while the workers' games tell it those)."""
        if configure_threads:
            configure_actor_threads(inter_op=1)
        self.config = TrainConfig.from_dict(json.loads(config_json))
        self.model_dir = model_dir
        self.net = None
        if num_actions is not None:
            self.build(num_actions, observation_shape)

    def build(self, num_actions: int, observation_shape: tuple[int, ...]) -> None:
        cfg = self.config
        self.net = build_actor_critic(cfg, num_actions, tuple(observation_shape), name="global")
        self.optimizer = build_optimizer(cfg)
        self.optimizer.build(self.net.trainable_variables)
        self.counters = RunCounters(cfg, num_actions)
        self.checkpoint = tf.train.Checkpoint(model=self.net, optimizer=self.optimizer, run=self.counters)
        self.checkpointer = Checkpointer(self.model_dir, self.checkpoint, self.counters, cfg.keep_checkpoints)
        self.env_steps = 0
        self.updates = 0
        self.skipped_updates = 0
        self.episodes = 0  # episodes the workers reported with their pushes (seed 000's GLOBAL_EP)
        self.recent_returns: deque[float] = deque(maxlen=100)  # seed 000's GLOBAL_RUNNING_R queue
        self.learning_rate = cfg.learning_rate

        def apply_graph(grads, learning_rate):
            # The workers' gradients are already processed (loss_gradients); doing it again here is
            # idempotent and keeps the --clip-norm bound true whatever a worker sent.
            bound = cfg.clip_norm if cfg.gradient_mode == "clip" else cfg.normalize_norm
            processed, _ = process_gradients(grads, cfg.gradient_mode, bound)
            self.optimizer.learning_rate.assign(learning_rate)
            self.optimizer.apply_gradients(zip(processed, self.net.trainable_variables))

        # A closure, not a method: Ray rewrites an actor class's methods (tracing hooks), and tf.function
        # would then see Ray's extra keyword argument.
        self._apply = tf.function(apply_graph)

    def load(self, prefix: str) -> str | None:
        """Restore a checkpoint (threaded or distributed) into the network, optimizer and counters.
        Returns None, or the reason it cannot be restored (a user error, reported by the driver)."""
        try:
            restore(self.checkpoint, prefix)
        except CheckpointError as error:
            return str(error)
        self.counters.config_json.assign(self.config.to_json())  # the resumed run's flags, as threaded
        self.env_steps = int(self.counters.env_steps.numpy())
        self.updates = int(self.counters.updates.numpy())
        self.episodes = int(self.counters.episodes.numpy())
        return None

    def weights(self) -> list[np.ndarray]:
        return [variable.numpy() for variable in self.net.trainable_variables]

    def _reply(self, applied: bool) -> PushReply:
        return PushReply(self.weights(), self.env_steps, self.updates, self.skipped_updates, applied,
                         self.learning_rate)

    def pull(self) -> PushReply:
        """Fresh weights and counters, without pushing anything."""
        return self._reply(False)

    def apply(self, worker: int, grads: list[np.ndarray] | None, steps: int,
              episode_returns: list[float] = ()) -> PushReply:
        """Count `steps` and the finished episodes' returns, apply `grads` unless missing or not finite (a
        NaN/Inf must never reach the global weights; it is counted as skipped), and return the new weights."""
        self.env_steps += int(steps)
        for episode_return in episode_returns:
            self.episodes += 1
            self.recent_returns.append(float(episode_return))
        variables = self.net.trainable_variables
        finite = (grads is not None and len(grads) == len(variables)
                  and all(np.all(np.isfinite(g)) for g in grads))
        if finite:
            self.learning_rate = learning_rate_at(self.config, self.env_steps)
            self._apply([np.asarray(g, np.float32) for g in grads], tf.constant(self.learning_rate, tf.float32))
        self.updates += 1
        self.skipped_updates += 0 if finite else 1
        return self._reply(finite)

    def status(self) -> dict[str, Any]:
        return {"env_steps": self.env_steps, "updates": self.updates, "skipped_updates": self.skipped_updates,
                "episodes": self.episodes, "recent_returns": list(self.recent_returns), "pid": os.getpid()}

    def save(self, episodes: int, wall_seconds: float) -> str:
        """Write a checkpoint into --model-dir. `episodes` is what the driver has written to progress.csv
        (flushed before it asks), so the checkpoint never counts an episode the CSV lacks."""
        self.counters.env_steps.assign(self.env_steps)
        self.counters.episodes.assign(int(episodes))
        self.counters.updates.assign(self.updates)
        self.counters.wall_seconds.assign(float(wall_seconds))
        return self.checkpointer.save()


# ---- the workers --------------------------------------------------------------------------------------------
Push = Callable[[int, "list[np.ndarray] | None", int, list], PushReply]


class PushingWorker(Worker):
    """The threaded A3C worker with a remote global network: the gradient goes to `push` (the parameter
    server's `apply`, through Ray or called directly) and the weights it returns replace the local copy."""

    def __init__(self, index: int, config: TrainConfig, envs: list, local_net: ActorCritic, push: Push,
                 reward_scale: float, seed: int, record_every: int = 0, clip_rewards: bool = False,
                 epsilon: EpsilonSchedule | None = None):
        # The local SharedState only counts this worker's steps (the epsilon schedule reads the global count,
        # refreshed from every reply) and queues its finished episodes for the driver.
        shared = SharedState(local_net, optimizer=None)
        super().__init__(index, config, envs, local_net, shared, reward_scale, seed, record_every, clip_rewards,
                         epsilon)
        self.push = push
        self.last_reply: PushReply | None = None
        self._episode_returns: list[float] = []

    def accept(self, reply: PushReply) -> None:
        """Take the parameter server's weights and counters."""
        for variable, value in zip(self.local_net.trainable_variables, reply.weights):
            variable.assign(value)
        self.shared.env_steps = reply.env_steps
        self.last_reply = reply

    def finished_episodes(self) -> list[EpisodeResult]:
        return [self.shared.episodes.get_nowait() for _ in range(self.shared.episodes.qsize())]

    def play_and_learn(self) -> tuple[list[EpisodeResult], TrainMetrics]:
        """One rollout, its gradient pushed (with the returns of the episodes that ended in it)."""
        rollout = self.collect_rollout(self.config.rollout)
        episodes = self.finished_episodes()
        self._episode_returns = [episode.reward for episode in episodes]
        return episodes, self.learn(rollout)

    def _push_gradients(self, rollout: Rollout, grads, finite: bool) -> bool:
        variables = self.local_net.trainable_variables
        arrays = None
        if finite:
            arrays = [np.zeros(v.shape, np.float32) if g is None else g.numpy() for g, v in zip(grads, variables)]
        reply = self.push(self.index, arrays, int(rollout.actions.size), self._episode_returns)
        self._episode_returns = []
        self.accept(reply)
        return reply.applied


class WorkerActor:
    """One worker process (wrapped by `ray.remote`): builds its games and local network from the config,
    then plays and learns one rollout per `step` call."""

    def __init__(self, index: int, config_json: str, seed_offset: int = 0):
        configure_actor_threads(inter_op=2)
        cfg = TrainConfig.from_dict(json.loads(config_json))
        self.index, self.config, self.ps = index, cfg, None
        keras.utils.set_random_seed(cfg.seed + index + seed_offset)
        envs = [make_environment(cfg, seed=cfg.seed + 1000 * index + e + seed_offset)
                for e in range(cfg.envs_per_worker)]
        self.info = {"num_actions": envs[0].num_actions, "observation_shape": observation_shape_of(envs[0]),
                     "seconds_per_step": seconds_per_step(cfg, envs[0]), "pid": os.getpid(),
                     "node": socket.gethostname()}
        local = build_actor_critic(cfg, envs[0].num_actions, observation_shape_of(envs[0]), name=f"worker_{index}")
        epsilon = None
        if cfg.epsilon_start > 0 or cfg.epsilon_end > 0:
            final = worker_epsilons(cfg.workers, cfg.epsilon_start, cfg.epsilon_end, cfg.epsilon_spread)[index]
            epsilon = EpsilonSchedule(cfg.epsilon_start, float(final), cfg.epsilon_decay_steps)
        self.worker = PushingWorker(index, cfg, envs, local, self._push, reward_scale_for(cfg),
                                    seed=cfg.seed + index + seed_offset,
                                    record_every=cfg.gif_every if index == 0 else 0,
                                    clip_rewards=clips_rewards(cfg), epsilon=epsilon)

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
                          reply.learning_rate, self.info["pid"], self.info["node"])

    def close(self) -> None:
        self.worker.close()


# Ray rewrites the methods of the classes it wraps (tracing hooks): it gets subclasses of its own, importable by
# name in every worker process, and the plain classes above stay plain for the tests.
class ParameterServerActor(ParameterServer):
    """`ParameterServer` in its own process (wrapped by `ray.remote` at run time)."""


class WorkerActorProcess(WorkerActor):
    """`WorkerActor` in its own process (wrapped by `ray.remote` at run time)."""


# ---- the Ray session -------------------------------------------------------------------------------------------
def import_ray():
    try:
        import ray
    except ImportError as error:
        raise ConfigError(f"--distributed ray needs Ray, which is not installed ({error}): "
                          f"pip install -r requirements.txt (or pip install ray)") from None
    return ray


def local_temp_dir(model_dir: str, pid: int | None = None) -> tuple[str, bool]:
    """Where a local Ray instance keeps its session files: `<model_dir>/ray`, or `/tmp/doom_a3c_ray_<pid>`
    when the run folder's path is too long for Ray's AF_UNIX sockets. Returns (folder, fell back)."""
    preferred = os.path.join(os.path.abspath(model_dir), "ray")
    if len(preferred) + SESSION_SOCKET_SUFFIX < SOCKET_PATH_LIMIT:
        return preferred, False
    return f"/tmp/doom_a3c_ray_{os.getpid() if pid is None else pid}", True


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """A HOST:PORT that nothing answers on fails here in seconds; Ray itself would retry for minutes."""
    if address == "auto" or address.startswith(("ray://", "local")):
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"--ray-address {address!r} must be 'auto' or HOST:PORT (the head node's GCS port, "
                          f"6379 by default)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as error:
        raise ConfigError(f"cannot reach the Ray cluster at --ray-address {address}: "
                          f"{error.strerror or error} (is `ray start --head` running there?)") from None


class RaySession:
    """Connects this process to Ray: a local instance started for this run, the user's cluster
    (--ray-address), or a session this process already has (tests); `close` undoes only what it did."""

    def __init__(self, config: TrainConfig):
        self.ray = import_ray()
        self.owned = False
        self.temp_dir: str | None = None
        self.removable_temp_dir = False
        ray = self.ray
        if ray.is_initialized():
            self.where = "the Ray session already open in this process"
            return
        address = config.ray_address.strip()
        options = dict(logging_level=logging.ERROR, log_to_driver=False)
        if address:
            check_reachable(address)
            # The nodes get the package and the presets from here (nothing else: not models/, frames/, .git);
            # their Python must have requirements.txt installed.
            excludes = [f"/{name}" for name in os.listdir(REPO_ROOT) if name not in SHIPPED_TO_CLUSTER]
            runtime_env = {"working_dir": REPO_ROOT, "excludes": excludes + ["__pycache__"]}
            try:
                ray.init(address=address, runtime_env=runtime_env, **options)
            except (ConnectionError, RuntimeError, ValueError, TimeoutError) as error:
                hint = ""
                if address != "auto" and "RAY_AUTH_MODE" not in os.environ:
                    hint = (" (a cluster with token authentication also needs RAY_AUTH_MODE=token here, and its "
                            "token in ~/.ray/auth_token or RAY_AUTH_TOKEN)")
                raise ConfigError(f"cannot connect to the Ray cluster at --ray-address {address}: "
                                  f"{one_line(error)}{hint}") from None
            self.where = f"the Ray cluster at {address}"
        else:
            self.temp_dir, self.removable_temp_dir = local_temp_dir(config.model_dir)
            if self.removable_temp_dir:
                print(f"note: --model-dir's path is too long for Ray's sockets; this run's Ray files are in "
                      f"{self.temp_dir} (removed at the end)", flush=True)
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a local instance phones nobody
            # Ray (>= 2.59) guards the local instance with a token, which it keeps in ~/.ray/auth_token (made
            # on first use): the only file of a local run outside the run's folder.
            try:
                ray.init(num_cpus=max(os.cpu_count() or 1, config.workers), include_dashboard=False,
                         _temp_dir=self.temp_dir, runtime_env={"env_vars": {"PYTHONPATH": REPO_ROOT}}, **options)
            except (ConnectionError, RuntimeError, ValueError, OSError) as error:
                raise ConfigError(f"cannot start a local Ray instance in {self.temp_dir}: {one_line(error)}") from None
            self.where = f"a local Ray instance (logs in {self.temp_dir})"
        self.owned = True

    def close(self) -> None:
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()
        self.owned = False
        if self.removable_temp_dir and self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            self.removable_temp_dir = False


# ---- the driver -------------------------------------------------------------------------------------------------
class RayTrainer(Trainer):
    """The threaded Trainer's loop with Ray actors as workers and global network."""

    session: RaySession | None = None
    ps = None  # the parameter server actor, once started

    def run(self) -> int:
        try:
            return super().run()
        finally:
            self._shutdown()

    def _mode_name(self) -> str:
        return f"a3c, distributed on {self.session.where}"

    # ---- set-up ----------------------------------------------------------------------------------------
    def _build(self) -> None:
        cfg = self.config
        self.session = RaySession(cfg)
        ray = self.ray = self.session.ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.workers_count = cfg.workers
        self.config_json = cfg.to_json()
        self.ParameterServerActor = ray.remote(num_cpus=0)(ParameterServerActor)
        self.WorkerActorClass = ray.remote(num_cpus=1)(WorkerActorProcess)
        self.actors: dict[int, Any] = {}
        self.pending: dict[Any, int] = {}  # ObjectRef of a step() under way -> worker index
        self.deaths_in_a_row = {w: 0 for w in range(cfg.workers)}
        self.restarts = 0
        self.worker_pids: dict[int, int] = {}
        self.ps = None
        for w in range(cfg.workers):
            self.actors[w] = self._new_worker_actor(w, seed_offset=0)
        # Started now, built once the games tell the action count: the processes start side by side. Pinned
        # to this node: the checkpoints it writes land in --model-dir on the driver's disk.
        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
        self.ps = self.ParameterServerActor.options(scheduling_strategy=here).remote(
            self.config_json, os.path.abspath(cfg.model_dir))
        infos = self._get_or_explain([self.actors[w].describe.remote() for w in range(cfg.workers)],
                                     f"{cfg.workers} worker actors (1 CPU each)")
        info = infos[0]
        self.num_actions = info["num_actions"]
        if self.resume_prefix and self.num_actions != self.saved_actions:
            raise CheckpointError(f"{self.resume_prefix} has {self.saved_actions} actions but {cfg.scenario} "
                                  f"has {self.num_actions}; it was made for another scenario or action set")
        for w, worker_info in enumerate(infos):
            self.worker_pids[w] = worker_info["pid"]
            print(f"ray: worker {w} started (pid {worker_info['pid']} on {worker_info['node']})", flush=True)
        self._get_or_explain(self.ps.build.remote(self.num_actions, tuple(info["observation_shape"])),
                             "the parameter server")
        if self.resume_prefix:
            problem = self._get_or_explain(self.ps.load.remote(os.path.abspath(self.resume_prefix)),
                                           "the parameter server")
            if problem:
                raise CheckpointError(problem)
        status = self._get_or_explain(self.ps.status.remote(), "the parameter server")
        print(f"ray: parameter server started (pid {status['pid']}, on the driver's node)", flush=True)
        for actor in self.actors.values():
            actor.connect.remote(self.ps)
        counters = self.saved_counters if self.resume_prefix else {}
        self.shared = SharedState(None, None, env_steps=status["env_steps"], updates=status["updates"])
        self.episodes = int(counters.get("episodes", 0))
        self.wall_offset = float(counters.get("wall_seconds", 0.0))
        self.current_learning_rate = cfg.learning_rate
        self.log = RunLog(cfg.model_dir, cfg, resumed_episodes=self.episodes if self.resume_prefix else None)
        self.seconds_per_frame = info["seconds_per_step"]
        self.workers = []

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

    # ---- the loop's hooks -------------------------------------------------------------------------------
    def _start_workers(self) -> None:
        for index in self.actors:
            self._submit(index)

    def _submit(self, index: int) -> None:
        self.pending[self.actors[index].step.remote()] = index

    def _wait(self, timeout: float) -> bool:
        deadline = time.time() + timeout
        while not self.shared.stop.is_set():
            remaining = deadline - time.time()
            if remaining <= 0:
                break
            if not self.pending:
                time.sleep(remaining)
                break
            ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=remaining)
            for ref in ready:
                self._collect(ref, resubmit=True)
        return self.shared.stop.is_set()

    def _collect(self, ref, resubmit: bool) -> None:
        """Take one finished step(): queue its episodes and metrics for the shared loop, and start the next."""
        ray = self.ray
        index = self.pending.pop(ref)
        try:
            report: StepReport = ray.get(ref)
        except ray.exceptions.RayTaskError as error:  # raised inside the worker (its game, or the PS, failed)
            self.shared.fail(WorkerFailed(f"worker {index}: {one_line(error)}"))
            return
        except ray.exceptions.RayActorError as error:  # the worker's process is gone
            self._worker_died(index, error, replace=resubmit and not self.shared.stop.is_set())
            return
        self.deaths_in_a_row[index] = 0
        if self.worker_pids.get(index) != report.pid:  # a replacement's first rollout
            self.worker_pids[index] = report.pid
            print(f"ray: worker {index} restarted (pid {report.pid} on {report.node}) and training", flush=True)
        for episode in report.episodes:
            self.shared.episodes.put(episode)
        self.shared.latest_metrics[index] = report.metrics
        with self.shared.lock:  # replies can arrive out of order: the counters only grow
            self.shared.env_steps = max(self.shared.env_steps, report.env_steps)
            self.shared.updates = max(self.shared.updates, report.updates)
            self.shared.skipped_updates = max(self.shared.skipped_updates, report.skipped_updates)
        self.current_learning_rate = report.learning_rate
        if resubmit and not self.shared.stop.is_set():
            self._submit(index)

    def _worker_died(self, index: int, error: BaseException, replace: bool) -> None:
        self.deaths_in_a_row[index] += 1
        reason = one_line(error)
        if not replace:
            print(f"warning: worker {index} died while the run was stopping ({reason})", file=sys.stderr, flush=True)
            return
        if self.deaths_in_a_row[index] >= MAX_DEATHS_IN_A_ROW:
            self.shared.fail(WorkerFailed(f"worker {index} died {MAX_DEATHS_IN_A_ROW} times in a row without "
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

    def _stop_workers(self) -> None:
        """Let the rollouts under way finish (their gradients are applied and their episodes must be logged)."""
        deadline = time.time() + STOP_TIMEOUT_S
        while self.pending and time.time() < deadline:
            ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=max(0.0, deadline - time.time()))
            for ref in ready:
                self._collect(ref, resubmit=False)

    def _learning_rate(self) -> float:
        return self.current_learning_rate

    def save(self) -> str:
        if self.ps is None:
            return ""
        # The CSV must hold every episode the checkpoint counts, as in the threaded trainer.
        self.log.flush()
        wall = self.wall_seconds() if hasattr(self, "start_time") else self.wall_offset
        try:
            return self.ray.get(self.ps.save.remote(self.episodes, wall), timeout=STOP_TIMEOUT_S)
        except (self.ray.exceptions.RayError, self.ray.exceptions.GetTimeoutError) as error:
            self.shared.fail(WorkerFailed(f"the parameter server could not save ({one_line(error)}); the last "
                                          f"checkpoint in {self.config.model_dir}/{LAST} stands"))
            return ""

    def _close_workers(self) -> None:
        self._shutdown()

    def _shutdown(self) -> None:
        """Close the games, end the actors, and leave Ray as it was found (idempotent)."""
        if self.session is None:
            return
        ray = self.session.ray
        if ray.is_initialized():
            actors = list(getattr(self, "actors", {}).values())
            closing = [actor.close.remote() for actor in actors]
            if closing:
                ray.wait(closing, num_returns=len(closing), timeout=10)
            for actor in actors + ([self.ps] if self.ps is not None else []):
                ray.kill(actor, no_restart=True)
        self.actors, self.ps = {}, None
        self.session.close()
        self.session = None
