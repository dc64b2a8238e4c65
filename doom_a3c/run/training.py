"""Training from start to end: resolve the config, prepare the run folder, build the mode's backend, run
the coordinator. The three modes are siblings chosen here; none imports another."""
from __future__ import annotations

import os
import shutil
import sys
import time
from typing import TYPE_CHECKING, Any, NamedTuple

from doom_a3c.config import TrainConfig
from doom_a3c.errors import CheckpointError, ConfigError
from doom_a3c.run.resolve import given_fields, resolve_new_run
from doom_a3c.run.saved_config import resolve_resumed_run, upgrade_saved_config
from doom_a3c.runtime.files import BEST, BEST_DIR, CONFIG_FILE, EVAL_CSV, LAST, ensure_writable_dir

if TYPE_CHECKING:
    from doom_a3c.run.coordinator import Backend, Coordinator
    from doom_a3c.runtime.checkpoint import SavedRun

# TensorFlow (checkpoint, coordinator, the backends) is imported only once the flags are known to be good: a bad
# flag is one line on stderr within a second, not after TF's import.

RUN_FILES = ("checkpoint", CONFIG_FILE, "progress.csv", "learning_curve.png", "tensorboard", EVAL_CSV, BEST_DIR)


def archive_previous_run(model_dir: str) -> str | None:
    """A fresh run never overwrites an old one: move its files into models/archive/<time>/."""
    names = [n for n in os.listdir(model_dir) if n in RUN_FILES or n.startswith(("ckpt-", LAST, BEST))]
    if not names:
        return None
    target = os.path.join(model_dir, "archive", time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(target, exist_ok=True)
    for name in names:
        shutil.move(os.path.join(model_dir, name), os.path.join(target, name))
    return target


def build_backend(config: TrainConfig, resume_prefix: str | None) -> Backend:
    if config.distributed == "ray":
        from doom_a3c.modes.ray.backend import RayBackend

        return RayBackend(config, resume_prefix)
    from doom_a3c.modes.build import build_thread_run
    from doom_a3c.modes.threads import ThreadBackend

    parts = build_thread_run(config, resume_prefix)
    if config.trainer == "a3c":
        from doom_a3c.modes.a3c import a3c_workers

        return ThreadBackend(parts, a3c_workers(parts), "a3c")
    if config.trainer == "ga3c":
        from doom_a3c.modes.ga3c import ga3c_threads

        return ThreadBackend(parts, ga3c_threads(parts), "ga3c")
    raise ValueError(f"no trainer {config.trainer!r}: TrainConfig.validate lets none but a3c and ga3c through")


def resolve_run(given: dict[str, Any]) -> tuple[TrainConfig, SavedRun | None]:
    """The run's complete config from the flags given, and the checkpoint it resumes (None for a fresh run)."""
    if given.get("resume", False):
        from doom_a3c.runtime.checkpoint import read_checkpoint, resolve_prefix

        model_dir = given.get("model_dir", TrainConfig.model_dir)
        saved = read_checkpoint(resolve_prefix(model_dir))
        config = upgrade_saved_config(saved.config, saved.prefix)
        if saved.num_actions != len(config.actions):
            raise CheckpointError(f"{saved.prefix} has {saved.num_actions} actions but its config lists "
                                  f"{len(config.actions)}")
        return resolve_resumed_run(config, given, saved.prefix), saved
    return resolve_new_run(given), None


class TrainSummary(NamedTuple):
    """What `train` returns: the run's totals when it stopped."""

    env_steps: int
    episodes: int
    mean_reward_100: float  # mean unscaled reward of the last 100 episodes (NaN before the first)
    checkpoint: str  # the last checkpoint's prefix: load_agent(summary.checkpoint)
    exit_code: int  # 0; 1 when a worker failed (its error on stderr, a final checkpoint saved all the same)


def start_run(given: dict[str, Any]) -> Coordinator:
    """A run ready to go from the flags given, by field name; ConfigError/CheckpointError for bad input."""
    TrainConfig(**given).validate()  # the user's own values first, before anything is looked up
    config, saved = resolve_run(given)
    config.validate()  # and the run's complete config, the preset's and the saved values among it
    ensure_writable_dir(config.model_dir, "--model-dir")
    ensure_writable_dir(config.frames_dir, "--frames-dir")
    if saved is None:
        archived = archive_previous_run(config.model_dir)
        if archived:
            print(f"note: the previous run in {config.model_dir} was moved to {archived}", file=sys.stderr)
    from doom_a3c.run.coordinator import Coordinator

    backend = build_backend(config, saved.prefix if saved else None)
    counters = saved.counters if saved else {}
    return Coordinator(config, backend, episodes=int(counters.get("episodes", 0)),
                       wall_offset=float(counters.get("wall_seconds", 0.0)), resumed=saved is not None)


def train_from_flags(given: dict[str, Any]) -> int:
    """train.py: the flags given on the command line, by field name. Returns the exit code."""
    try:
        coordinator = start_run(given)
    except (ConfigError, CheckpointError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return coordinator.run_until_done()


def train(config: TrainConfig) -> TrainSummary:
    """Train from a TrainConfig made in Python, exactly as train.py would with the same flags: its flag fields
    that differ from the defaults count as given, the scenario's preset fills in the rest, and the fields that
    are no flags (env_kind, actions, game_variables, ...) always come from the scenario. Bad input raises
    ConfigError or CheckpointError (the one line train.py would print)."""
    coordinator = start_run(given_fields(config))
    exit_code = coordinator.run_until_done()
    return TrainSummary(int(coordinator.run.counters.env_steps), coordinator.episodes, coordinator.log.mean_reward(),
                        os.path.join(coordinator.config.model_dir, LAST), exit_code)
