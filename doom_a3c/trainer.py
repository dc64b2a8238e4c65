"""The coordinator: builds the global network and the workers, runs them in threads, and owns
everything that is not learning: counting, logging, GIFs, checkpoints, stop conditions and signals.

`--distributed ray` runs the same loop (`Trainer.run`) with the workers and the global network in Ray
actors: doom_a3c/distributed.py subclasses `Trainer` and overrides only the hooks that start, pump and
stop the workers and save (`_build`, `_start_workers`, `_wait`, `_stop_workers`, `_close_workers`, `save`,
`_learning_rate`). Ray is imported only then.
"""
from __future__ import annotations

import dataclasses
import math
import os
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass

import keras
import tensorflow as tf

from doom_a3c.checkpoint import (CONFIG_FILE, LAST, Checkpointer, CheckpointError, RunCounters, ensure_writable_dir,
                                 read_checkpoint_identity, resolve_prefix, restore)
from doom_a3c.config import ConfigError, TrainConfig
from doom_a3c.env_batch import ProcessEnvBatch, make_env_group
from doom_a3c.envs import check_environment, clips_rewards, observation_shape_of, reward_scale_for, seconds_per_step
from doom_a3c.exploration import EpsilonSchedule, worker_epsilons
from doom_a3c.ga3c import build_ga3c
from doom_a3c.network import build_actor_critic
from doom_a3c.recording import write_gif
from doom_a3c.scenarios import environment_kind, scenario_name, with_preset_defaults
from doom_a3c.summaries import RunLog
from doom_a3c.worker import SharedState, Worker

KIND_NAMES = {"doom": "a ViZDoom scenario", "atari": "an Atari game", "vector": "a vector-observation env"}
RUN_FILES = ("checkpoint", CONFIG_FILE, "progress.csv", "learning_curve.png", "tensorboard")


def configure_threads(workers: int) -> None:
    """One intra-op thread per op (workers already run in parallel) and one inter-op thread per worker:
    the cores are shared out instead of every op fanning out to all of them."""
    cores = os.cpu_count() or 1
    tf.config.threading.set_intra_op_parallelism_threads(1 if workers >= cores else max(1, cores // workers))
    tf.config.threading.set_inter_op_parallelism_threads(max(2, min(workers, cores)))


def build_optimizer(config: TrainConfig) -> keras.optimizers.Optimizer:
    if config.optimizer == "rmsprop":
        return keras.optimizers.RMSprop(learning_rate=config.learning_rate, rho=0.99, epsilon=0.1)
    return keras.optimizers.Adam(learning_rate=config.learning_rate)


def archive_previous_run(model_dir: str) -> str | None:
    """A fresh run never overwrites an old one: move its files into models/archive/<time>/."""
    names = [n for n in os.listdir(model_dir) if n in RUN_FILES or n.startswith(("ckpt-", LAST))]
    if not names:
        return None
    target = os.path.join(model_dir, "archive", time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(target, exist_ok=True)
    for name in names:
        shutil.move(os.path.join(model_dir, name), os.path.join(target, name))
    return target


@dataclass
class StopReason:
    text: str = ""


class Trainer:
    def __init__(self, config: TrainConfig, explicit: set[str] | None = None):
        self.config = config
        self.explicit = explicit or set()
        self.stop_reason = StopReason()

    # ---- set-up ----------------------------------------------------------------------------------
    def _prepare(self) -> None:
        cfg = self.config
        ensure_writable_dir(cfg.model_dir, "--model-dir")
        ensure_writable_dir(cfg.frames_dir, "--frames-dir")
        self.resume_prefix = None
        if cfg.resume:
            self.resume_prefix = resolve_prefix(cfg.model_dir)
            saved, saved_actions, self.saved_counters = read_checkpoint_identity(self.resume_prefix)
            if "scenario" in self.explicit and scenario_name(cfg.scenario) != scenario_name(saved.scenario):
                saved_kind, kind = environment_kind(saved.scenario), environment_kind(cfg.scenario)
                kinds = f" ({KIND_NAMES[saved_kind]} vs {KIND_NAMES[kind]})" if saved_kind != kind else ""
                raise CheckpointError(f"{self.resume_prefix} was trained on {saved.scenario}, not {cfg.scenario}"
                                      f"{kinds}; use another --model-dir for a new scenario")
            self.saved_actions = saved_actions
        else:
            # A typo must not move the previous run away: check what can be checked first.
            check_environment(cfg)
            archived = archive_previous_run(cfg.model_dir)
            if archived:
                print(f"note: the previous run in {cfg.model_dir} was moved to {archived}", file=sys.stderr)

    def _build(self) -> None:
        cfg = self.config
        self.workers_count = cfg.workers
        configure_threads(self.workers_count)
        keras.utils.set_random_seed(cfg.seed)
        # Environments first: they validate the scenario and tell the action count.
        # (With --env-processes, the game processes fork here, before TensorFlow starts any thread.)
        env_groups = [make_env_group(cfg, [cfg.seed + 1000 * w + e for e in range(cfg.envs_per_worker)])
                      for w in range(self.workers_count)]
        first = env_groups[0] if isinstance(env_groups[0], ProcessEnvBatch) else env_groups[0][0]
        num_actions = first.num_actions
        observation_shape = observation_shape_of(first)
        if self.resume_prefix and num_actions != self.saved_actions:
            raise CheckpointError(f"{self.resume_prefix} has {self.saved_actions} actions but {cfg.scenario} "
                                  f"has {num_actions}; it was made for another scenario or action set")
        self.global_net = build_actor_critic(cfg, num_actions, observation_shape, name="global")
        self.optimizer = build_optimizer(cfg)
        # Keras builds optimizer slots lazily; threads racing into that build corrupt it.
        self.optimizer.build(self.global_net.trainable_variables)
        self.num_actions = num_actions
        self.counters = RunCounters(cfg, num_actions)
        checkpoint = tf.train.Checkpoint(model=self.global_net, optimizer=self.optimizer, run=self.counters)
        if self.resume_prefix:
            restore(checkpoint, self.resume_prefix)
            self.counters.config_json.assign(cfg.to_json())
        self.checkpointer = Checkpointer(cfg.model_dir, checkpoint, self.counters, cfg.keep_checkpoints)
        self.shared = SharedState(self.global_net, self.optimizer,
                                  env_steps=int(self.counters.env_steps.numpy()),
                                  updates=int(self.counters.updates.numpy()))
        self.episodes = int(self.counters.episodes.numpy())
        self.wall_offset = float(self.counters.wall_seconds.numpy())
        scale = reward_scale_for(cfg)
        exploring = cfg.epsilon_start > 0 or cfg.epsilon_end > 0
        finals = worker_epsilons(self.workers_count, cfg.epsilon_start, cfg.epsilon_end, cfg.epsilon_spread)
        epsilons = [EpsilonSchedule(cfg.epsilon_start, float(final), cfg.epsilon_decay_steps) if exploring else None
                    for final in finals]
        # The thread bodies: A3C workers, or GA3C's runners, predictor and trainer.
        if cfg.trainer == "ga3c":
            self.workers = build_ga3c(cfg, env_groups, self.shared, scale, clips_rewards(cfg), epsilons)
        else:
            self.workers = []
            for w, group in enumerate(env_groups):
                # Local copies are built here, in the main thread: Keras keeps some per-thread global state.
                local = build_actor_critic(cfg, num_actions, observation_shape, name=f"worker_{w}")
                self.workers.append(Worker(w, cfg, group, local, self.shared, scale, seed=cfg.seed + w,
                                           record_every=cfg.gif_every if w == 0 else 0,
                                           clip_rewards=clips_rewards(cfg), epsilon=epsilons[w]))
        self.log = RunLog(cfg.model_dir, cfg, resumed_episodes=self.episodes if self.resume_prefix else None)
        self.seconds_per_frame = seconds_per_step(cfg, first)

    # ---- the loop --------------------------------------------------------------------------------
    def run(self) -> int:
        self._prepare()
        self._build()
        cfg = self.config
        self._install_signal_handlers()
        self.start_time = time.time()
        last_save = last_log = last_plot = self.start_time
        last_log_steps = self.shared.env_steps
        episodes_at_save = self.episodes
        target = cfg.target_reward
        print(f"training {cfg.scenario} ({self._mode_name()}): {self.workers_count} workers x {cfg.envs_per_worker} "
              f"envs, {self.num_actions} actions, outputs in {cfg.model_dir}/ and {cfg.frames_dir}/", flush=True)
        try:
            self._start_workers()
            while not self._wait(0.2):
                now = time.time()
                self._drain_episodes()
                if now - last_log >= cfg.log_every_seconds:
                    rate = (self.shared.env_steps - last_log_steps) / (now - last_log)
                    self._report(rate)
                    last_log, last_log_steps = now, self.shared.env_steps
                if now - last_plot >= 30:
                    self.log.plot_curve()
                    last_plot = now
                due_by_episodes = cfg.save_every_episodes and self.episodes - episodes_at_save >= cfg.save_every_episodes
                if now - last_save >= cfg.save_every_minutes * 60 or due_by_episodes:
                    self.save()
                    last_save, episodes_at_save = now, self.episodes
                self._check_stop(now, target)
        finally:
            self.shared.stop.set()
            self._stop_workers()
            self._drain_episodes()
            self.save()
            self.log.plot_curve()
            self.log.close()
            self._close_workers()
        if self.shared.errors:
            error = self.shared.errors[0]
            print(f"error: worker failed: {type(error).__name__}: {error} (final checkpoint saved in "
                  f"{cfg.model_dir}/{LAST})", file=sys.stderr)
            return 1
        print(f"stopped: {self.stop_reason.text or 'done'}; {self.shared.env_steps} steps, {self.episodes} episodes, "
              f"mean-100 reward {self.log.mean_reward():.1f}; checkpoint {cfg.model_dir}/{LAST}", flush=True)
        return 0

    # ---- how the workers run: threads here, Ray actors in doom_a3c/distributed.py ----------------------
    def _mode_name(self) -> str:
        return self.config.trainer

    def _start_workers(self) -> None:
        self.threads = [threading.Thread(target=w.run, name=f"{type(w).__name__}_{w.index}", daemon=True)
                        for w in self.workers]
        for thread in self.threads:
            thread.start()

    def _wait(self, timeout: float) -> bool:
        """Let the workers run for up to `timeout` seconds; True once the run should stop."""
        return self.shared.stop.wait(timeout)

    def _stop_workers(self) -> None:
        """`shared.stop` is set: let every worker finish (and queue its episodes) before the final save."""
        for thread in getattr(self, "threads", []):
            thread.join(timeout=60)

    def _close_workers(self) -> None:
        for worker in self.workers:
            worker.close()

    def _learning_rate(self) -> float:
        return float(self.optimizer.learning_rate.numpy())

    def _check_stop(self, now: float, target: float) -> None:
        cfg = self.config
        reason = ""
        if cfg.max_steps and self.shared.env_steps >= cfg.max_steps:
            reason = f"reached --max-steps {cfg.max_steps}"
        elif cfg.max_minutes and now - self.start_time >= cfg.max_minutes * 60:
            reason = f"reached --max-minutes {cfg.max_minutes:g}"
        elif not math.isnan(target) and len(self.log.recent_rewards) >= 100 and self.log.mean_reward() >= target:
            reason = f"mean-100 reward {self.log.mean_reward():.1f} reached --target-reward {target:g}"
        if reason:
            self.stop_reason.text = reason
            self.shared.stop.set()

    def wall_seconds(self) -> float:
        return self.wall_offset + time.time() - self.start_time

    def _drain_episodes(self) -> None:
        # Only what is queued now: CartPole's workers can end episodes faster than they are logged, and an
        # open-ended drain then never returned to the stop checks.
        for _ in range(self.shared.episodes.qsize()):
            result = self.shared.episodes.get_nowait()
            self.episodes += 1
            self.log.episode(self.wall_seconds(), self.shared.env_steps, self.episodes, result.worker,
                             result.reward, result.length, result.mean_value)
            if result.frames:
                path = os.path.join(self.config.frames_dir, f"episode_{self.episodes:06d}.gif")
                write_gif(path, result.frames, self.seconds_per_frame)
        self.log.summarise_episodes(self.shared.env_steps)

    def _report(self, steps_per_second: float) -> None:
        metrics = list(self.shared.latest_metrics.values())
        values = {"Perf/Steps per second": steps_per_second}
        if metrics:
            mean = lambda name: sum(getattr(m, name) for m in metrics) / len(metrics)  # noqa: E731
            values.update({"Losses/Value Loss": mean("value_loss"), "Losses/Policy Loss": mean("policy_loss"),
                           "Losses/Entropy": mean("entropy"), "Losses/Grad Norm": mean("grad_norm"),
                           "Losses/Var Norm": mean("var_norm")})
        lags = [m.policy_lag for m in metrics if m.policy_lag is not None]
        if lags:  # GA3C only: A3C's local copies train on their own fresh weights
            values["Perf/Policy Lag"] = sum(lags) / len(lags)
        values["Losses/Skipped non-finite updates"] = self.shared.skipped_updates
        values["Perf/Learning Rate"] = self._learning_rate()
        self.log.scalars(self.shared.env_steps, values)
        self.log.flush()
        elapsed = self.wall_seconds()
        print(f"[{elapsed / 60:6.1f} min] steps {self.shared.env_steps:>9,}  {steps_per_second:7.0f} steps/s  "
              f"episodes {self.episodes:>6}  mean-100 reward {self.log.mean_reward():7.1f}", flush=True)

    def save(self) -> str:
        # The CSV must hold every episode the checkpoint counts, or a crash right after would leave a gap.
        self.log.flush()
        self.counters.env_steps.assign(self.shared.env_steps)
        self.counters.episodes.assign(self.episodes)
        self.counters.updates.assign(self.shared.updates)
        self.counters.wall_seconds.assign(self.wall_seconds() if hasattr(self, "start_time") else self.wall_offset)
        return self.checkpointer.save()

    def _install_signal_handlers(self) -> None:
        def stop(signum, _frame):
            self.stop_reason.text = f"stopped by {signal.Signals(signum).name}"
            self.shared.stop.set()

        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, stop)
            signal.signal(signal.SIGTERM, stop)


def train(config: TrainConfig, explicit: set[str] | None = None) -> int:
    """`explicit`: the flags given on the command line (None: every field that differs from its default).
    A fresh run takes the scenario preset's tuned defaults for all the others."""
    if explicit is None:
        explicit = {f.name for f in dataclasses.fields(TrainConfig) if getattr(config, f.name) != f.default}
    try:
        if not config.resume:
            preset = with_preset_defaults(config, explicit)
            changed = {k: v for k, v in dataclasses.asdict(preset).items() if repr(getattr(config, k)) != repr(v)}
            if changed:
                print(f"preset for {config.scenario}: " + ", ".join(f"{k}={v}" for k, v in changed.items()), flush=True)
            config = preset
        config.validate()
        if config.distributed == "ray":
            from doom_a3c.distributed import RayTrainer  # Ray is imported only for --distributed ray

            return RayTrainer(config, explicit).run()
        return Trainer(config, explicit).run()
    except (ConfigError, CheckpointError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
