"""The loop that owns everything but learning, for every mode: counting, logging, GIFs, checkpoints, restarted
games, stop conditions and signals. How the workers run (threads here, Ray actors elsewhere) is the backend's
business."""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections import deque
from typing import Iterator, Protocol

import numpy as np

from doom_a3c.algo.curriculum import BotCurriculum
from doom_a3c.config import TrainConfig
from doom_a3c.envs.doom.bot_levels import FULL_STRENGTH
from doom_a3c.envs.interface import EnvSpec
from doom_a3c.errors import ConfigError, one_line
from doom_a3c.run.periodic_evaluation import Evaluator, improves
from doom_a3c.run.recording import write_video
from doom_a3c.run.summaries import RunLog, append_evaluation, trim_evaluations
from doom_a3c.runtime.checkpoint import BestCheckpoint, best_evaluation_mean
from doom_a3c.runtime.files import BEST, EVAL_CSV, LAST
from doom_a3c.runtime.state import RunState

POLL_SECONDS = 0.2
FINAL_EVALUATION_SECONDS = 600.0  # bound on the evaluation at the end of a run (its games' watchdog acts first)
PLOT_EVERY_SECONDS = 30.0
RESTART_WINDOW_SECONDS = 60.0  # --max-game-restarts counts the restarts within this long


class TooManyRestarts(RuntimeError):
    """Games keep failing: a broken install or scenario, not a stray crash. The run stops."""


class Backend(Protocol):
    run: RunState  # counters, stop flag, episode queue, metrics, errors
    spec: EnvSpec
    description: str  # the mode, for the start line

    def start(self) -> None: ...

    def wait(self, timeout: float) -> bool:
        """Let the workers run up to `timeout` seconds; True once the run should stop."""

    def stop(self) -> None:
        """The stop flag is set: let the workers finish what they are doing (episodes included)."""

    def save(self, episodes: int, wall_seconds: float) -> str: ...

    def learning_rate(self) -> float: ...

    def global_weights(self) -> list[np.ndarray]:
        """A copy of the global network's trainable variables (the threaded modes: what evaluation plays)."""

    def close(self) -> None: ...


class Coordinator:
    def __init__(self, config: TrainConfig, backend: Backend, episodes: int = 0, wall_offset: float = 0.0,
                 resumed: bool = False):
        self.config = config
        self.backend = backend
        self.run = backend.run
        self.episodes = episodes
        self.wall_offset = wall_offset
        self.start_time = time.time()
        self.stop_reason = ""
        self.game_restarts = 0
        self._silent_workers: set[int] = set()  # warned about: their games have not answered a step for --game-timeout
        self._recent_restarts: deque[float] = deque()  # when, within the last RESTART_WINDOW_SECONDS
        self.interrupted = False  # by Ctrl-C or SIGTERM: no evaluation at the end
        self.evaluator: Evaluator | None = None
        self.best: BestCheckpoint | None = None
        # A resumed run keeps the best evaluation best.ckpt holds: only a better one replaces it.
        self.best_mean = best_evaluation_mean(config.model_dir) if resumed else None
        if resumed:
            trim_evaluations(os.path.join(config.model_dir, EVAL_CSV), self.run.counters.env_steps)
        if config.evaluate:
            try:  # here, in the main thread: Keras builds the evaluator's network
                self.evaluator = Evaluator(config, backend.spec, self.run.counters)
                self.best = BestCheckpoint(config.model_dir, self.evaluator.net, config, backend.spec.num_actions)
            except BaseException:
                backend.close()
                raise
        self.log = RunLog(config.model_dir, config, resumed_episodes=episodes if resumed else None)
        level = self.run.counters.bot_level  # where the backend started the games (build_global)
        self.curriculum = None if level is None else BotCurriculum(config.curriculum_matches,
                                                                   config.curriculum_frags, level)

    def wall_seconds(self) -> float:
        return self.wall_offset + time.time() - self.start_time

    def run_until_done(self) -> int:
        """Train until a stop condition, a signal or a worker's error; save at the end whatever happened."""
        cfg, counters = self.config, self.run.counters
        with self._signals_stop_the_run():
            self._train()
        if self.run.errors:
            error = self.run.errors[0]
            what = str(error) if isinstance(error, (TooManyRestarts, ConfigError)) else \
                f"worker failed: {type(error).__name__}: {error}"
            print(f"error: {what} (final checkpoint saved in {cfg.model_dir}/{LAST})", file=sys.stderr)
            return 2 if isinstance(error, ConfigError) else 1
        print(f"stopped: {self.stop_reason or 'done'}; {counters.env_steps} steps, {self.episodes} episodes, "
              f"mean-100 reward {self.log.mean_reward():.1f}; checkpoint {cfg.model_dir}/{LAST}", flush=True)
        return 0

    def _train(self) -> None:
        """The loop: workers started, logged, evaluated, saved and stopped; the final checkpoint whatever ended it."""
        cfg, counters = self.config, self.run.counters
        self.start_time = time.time()
        last_save = last_log = last_plot = self.start_time
        last_log_steps = counters.env_steps
        episodes_at_save = self.episodes
        print(f"training {cfg.scenario} ({self.backend.description}): {cfg.workers} workers x {cfg.envs_per_worker} "
              f"envs, {self.backend.spec.num_actions} actions, outputs in {cfg.model_dir}/ and {cfg.frames_dir}/",
              flush=True)
        if self.curriculum is not None:
            print(f"bot curriculum: level {self.curriculum.level} of {FULL_STRENGTH}; up a level when the last "
                  f"{cfg.curriculum_matches} matches at one average {cfg.curriculum_frags:g} frags", flush=True)
        try:
            self.backend.start()
            if self.evaluator is not None:
                self.evaluator.start(self.backend.global_weights, self.wall_seconds)
            while not self.backend.wait(POLL_SECONDS):
                now = time.time()
                self._log_episodes()
                self._handle_evaluations()
                self._log_restarts(now)
                self._check_heartbeats()
                if now - last_log >= cfg.log_every_seconds:
                    self._report((counters.env_steps - last_log_steps) / (now - last_log))
                    last_log, last_log_steps = now, counters.env_steps
                if now - last_plot >= PLOT_EVERY_SECONDS:
                    self.log.plot_curve()
                    last_plot = now
                due_by_episodes = (cfg.save_every_episodes
                                   and self.episodes - episodes_at_save >= cfg.save_every_episodes)
                if now - last_save >= cfg.save_every_minutes * 60 or due_by_episodes:
                    self.save()
                    last_save, episodes_at_save = now, self.episodes
                self._check_stop(now)
        finally:
            self.run.stop.set()
            self.backend.stop()
            self._log_episodes()
            self._log_restarts(time.time())
            self.save()
            self._finish_evaluation()
            self.log.plot_curve()
            self.log.close()
            self.backend.close()

    def save(self) -> str:
        # The CSV must hold every episode the checkpoint counts, or a crash right after would leave a gap.
        self.log.flush()
        return self.backend.save(self.episodes, self.wall_seconds())

    def _handle_evaluations(self) -> None:
        """Each finished evaluation: a row of eval.csv, Eval/* scalars, best.ckpt when it beats the best so far
        (saved from the evaluator's network, which holds the evaluated weights until `handled`)."""
        if self.evaluator is None:
            return
        for result in self.evaluator.results():
            if isinstance(result, BaseException):
                print(f"warning: evaluation during training stopped ({one_line(result)}); training goes on",
                      file=sys.stderr, flush=True)
                continue
            row = result.row()
            append_evaluation(os.path.join(self.config.model_dir, EVAL_CSV), row)
            better = improves(row["mean"], self.best_mean)
            if better:
                self.best.save(row["mean"], result.env_steps, result.updates, self.episodes, result.wall_seconds)
                self.best_mean = row["mean"]
            self.evaluator.handled()
            self.log.scalars(result.env_steps, {"Eval/Mean Reward": row["mean"], "Eval/Std Reward": row["std"],
                                                "Eval/Min Reward": row["min"], "Eval/Max Reward": row["max"],
                                                "Eval/Best Mean Reward": self.best_mean})
            if result.restarts:
                print(f"warning: {len(result.restarts)} evaluation game(s) failed and were restarted, their episodes "
                      f"played again (the last: {result.restarts[-1]})", file=sys.stderr, flush=True)
            print(f"[{result.wall_seconds / 60:6.1f} min] evaluation at {result.env_steps:,} steps: mean "
                  f"{row['mean']:.1f} +- {row['std']:.1f} over {row['episodes']} episodes"
                  + (f"; best so far, saved as {self.config.model_dir}/{BEST}" if better else ""), flush=True)

    def _finish_evaluation(self) -> None:
        """A run that ended on its budget or target: the evaluation under way, then one of the final weights
        (after Ctrl-C, SIGTERM or an error: none). Then the evaluator's games close."""
        if self.evaluator is None:
            return
        if self.run.errors or self.interrupted:
            self.evaluator.stop_now()
        else:
            self.evaluator.finish()
        deadline = time.monotonic() + FINAL_EVALUATION_SECONDS
        while self.evaluator.running() and time.monotonic() < deadline:
            self._handle_evaluations()
            time.sleep(POLL_SECONDS)
        if self.evaluator.running():
            print(f"warning: the final evaluation did not end within {FINAL_EVALUATION_SECONDS:g} s; abandoned",
                  file=sys.stderr, flush=True)
        self.evaluator.close()
        self._handle_evaluations()

    def _check_stop(self, now: float) -> None:
        cfg, log = self.config, self.log
        reason = ""
        if cfg.max_steps and self.run.counters.env_steps >= cfg.max_steps:
            reason = f"reached --max-steps {cfg.max_steps}"
        elif cfg.max_minutes and now - self.start_time >= cfg.max_minutes * 60:
            reason = f"reached --max-minutes {cfg.max_minutes:g}"
        elif cfg.target_reward is not None and len(log.recent_rewards) >= 100 and log.mean_reward() >= cfg.target_reward:
            reason = f"mean-100 reward {log.mean_reward():.1f} reached --target-reward {cfg.target_reward:g}"
        if reason:
            self.stop_reason = reason
            self.run.stop.set()

    def _log_episodes(self) -> None:
        # Only what is queued now: CartPole's workers can end episodes faster than they are logged, and an
        # open-ended drain then never returned to the stop checks.
        steps = self.run.counters.env_steps
        for result in self.run.finished_episodes():
            self.episodes += 1
            self.log.episode(self.wall_seconds(), steps, self.episodes, result.worker, result.reward, result.length,
                             result.mean_value, result.match)
            if self.curriculum is not None and result.match is not None:
                self._follow_curriculum(result.match)
            if result.frames:
                stem = os.path.join(self.config.frames_dir, f"episode_{self.episodes:06d}")
                write_video(stem, result.frames, result.seconds_per_frame or self.backend.spec.seconds_per_step,
                            self.config.video)
        self.log.summarise_episodes(steps)

    def _follow_curriculum(self, match: dict[str, float]) -> None:
        """A finished match's frags for --bot-curriculum: a move up reaches the workers through the run's counters
        (their games play it from their next match) and is a line of the log."""
        level_up = self.curriculum.record(match["frags"], match.get("bot_level"))
        if level_up is None:
            return
        self.run.counters.bot_level = level_up.level
        print(f"bot curriculum: level {level_up.level} of {FULL_STRENGTH} (mean {level_up.mean_frags:.1f} frags a "
              f"match over the last {level_up.matches})", flush=True)

    def _log_restarts(self, now: float) -> None:
        """One warning line per fault (a game, or a game process with all its games); more than
        --max-game-restarts of them within a minute stop the run."""
        restarts = self.run.game_restarts()
        for restart in restarts:
            self.game_restarts += 1
            self._recent_restarts.append(now)
            what = ("closed and restarted with a fresh seed, its unfinished episode dropped" if restart.count == 1
                    else "closed and restarted with fresh seeds, their unfinished episodes dropped")
            print(f"warning: {restart.games()} of worker {restart.worker} failed ({restart.reason}); {what}",
                  file=sys.stderr, flush=True)
        if restarts:  # counted at once: a restart in the run's last seconds must show too
            self.log.scalars(self.run.counters.env_steps, {"Perf/Game Restarts": self.game_restarts})
        while self._recent_restarts and now - self._recent_restarts[0] > RESTART_WINDOW_SECONDS:
            self._recent_restarts.popleft()
        limit = self.config.max_game_restarts
        if restarts and len(self._recent_restarts) > limit:
            self.run.fail(TooManyRestarts(
                f"{len(self._recent_restarts)} game failures within {RESTART_WINDOW_SECONDS:g} s, more than "
                f"--max-game-restarts {limit}; the last failed with {restarts[-1].reason}"))

    def _check_heartbeats(self, now: float | None = None) -> None:
        """One warning line for a worker whose games have not answered a step for --game-timeout: the clock runs
        from the step's sending to its answer only, so a worker that acts, learns (a first gradient's tracing takes
        half a minute on a busy machine) or writes a GIF meanwhile is no silence. Games in child processes are
        replaced by then (ProcessEnvBatch's watchdog); games in this process cannot be."""
        if self.config.env_processes:
            return
        now = time.monotonic() if now is None else now
        waiting = dict(self.run.steps_sent)  # a copy: the workers add and remove their steps meanwhile
        silent = {worker: now - sent for worker, sent in waiting.items()
                  if now - sent > self.config.game_timeout + 5}  # the watchdog's replacement comes first
        for worker, seconds in sorted(silent.items()):
            if worker not in self._silent_workers:
                remedy = ("" if self.config.ale_vector else
                          ": stop the run and --resume it with --env-processes 2")
                print(f"warning: the games of worker {worker} have not answered for {seconds:.0f} s (a stalled "
                      f"engine?); in this process they cannot be replaced{remedy}", file=sys.stderr, flush=True)
        self._silent_workers = set(silent)

    def _report(self, steps_per_second: float) -> None:
        metrics = list(self.run.latest_metrics.values())
        values = {"Perf/Steps per second": steps_per_second}
        if metrics:
            mean = lambda name: sum(getattr(m, name) for m in metrics) / len(metrics)  # noqa: E731
            values.update({"Losses/Value Loss": mean("value_loss"), "Losses/Policy Loss": mean("policy_loss"),
                           "Losses/Entropy": mean("entropy"), "Losses/Grad Norm": mean("grad_norm"),
                           "Losses/Var Norm": mean("var_norm")})
        weights = [m.entropy_weight for m in metrics if m.entropy_weight is not None]
        if weights:
            values["Losses/Entropy Weight"] = sum(weights) / len(weights)
        for name, tag in (("approx_kl", "Losses/Approx KL"), ("clip_fraction", "Losses/Clip Fraction"),
                          ("update_share", "Perf/Update Share"), ("enemy_loss", "Losses/Enemy Loss")):
            reported = [getattr(m, name) for m in metrics if getattr(m, name) is not None]
            if reported:  # the KL and clip fraction: --epochs or --minibatches > 1 only
                values[tag] = sum(reported) / len(reported)
        lags = [m.policy_lag for m in metrics if m.policy_lag is not None]
        if lags:  # GA3C only: A3C's local copies train on their own fresh weights
            values["Perf/Policy Lag"] = sum(lags) / len(lags)
        values["Losses/Skipped non-finite updates"] = self.run.counters.skipped_updates
        values["Perf/Game Restarts"] = self.game_restarts
        values["Perf/Learning Rate"] = self.backend.learning_rate()
        steps = self.run.counters.env_steps
        self.log.scalars(steps, values)
        self.log.flush()
        frags_per_minute = self.log.mean_frags_per_minute()  # a deathmatch's matches: None for other games
        matches = "" if frags_per_minute is None else f"  mean-100 frags/min {frags_per_minute:5.2f}"
        print(f"[{self.wall_seconds() / 60:6.1f} min] steps {steps:>9,}  {steps_per_second:7.0f} steps/s  "
              f"episodes {self.episodes:>6}  mean-100 reward {self.log.mean_reward():7.1f}{matches}", flush=True)

    @contextlib.contextmanager
    def _signals_stop_the_run(self) -> Iterator[None]:
        """Ctrl-C and SIGTERM stop the run (saved, engines reaped) instead of the process until the block ends, however
        it ends; then the handlers they replaced are back (a notebook's Ctrl-C interrupts again after `train()`).
        Only the main thread may set handlers: elsewhere nothing changes."""
        def stop(signum, _frame):
            self.stop_reason = f"stopped by {signal.Signals(signum).name}"
            self.interrupted = True
            if self.evaluator is not None:
                self.evaluator.stop_now()  # an evaluation under way ends too: the run stops within seconds
            self.run.stop.set()

        if threading.current_thread() is not threading.main_thread():
            yield
            return
        replaced = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for signum, handler in replaced.items():
                # None: a handler set outside Python, which cannot be put back; the default action is the nearest.
                signal.signal(signum, signal.SIG_DFL if handler is None else handler)
