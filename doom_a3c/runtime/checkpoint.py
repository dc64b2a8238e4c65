"""Checkpoints that hold everything a run needs, and never leave a half-written file behind.

A checkpoint holds the global network, the optimizer's slots, the step/episode/wall-time counters,
the environment's action count and the run's config as JSON, so `play.py` and `--resume` need
nothing else. TensorFlow writes each numbered checkpoint (`ckpt-N`) through temporary files and
then records it in the `checkpoint` state file; `last.ckpt` is then re-pointed at it by
hard-linking each file under a temporary name and renaming it into place.
"""
from __future__ import annotations

import json
import os
import shutil
from typing import Any, NamedTuple

from doom_a3c.config import TrainConfig
from doom_a3c.errors import CheckpointError
from doom_a3c.quiet_import import tf
from doom_a3c.runtime.files import BEST, BEST_DIR, CONFIG_FILE, LAST, atomic_write_text


class SavedRun(NamedTuple):
    """What a checkpoint says about its run, read without building anything."""

    prefix: str
    config: dict[str, Any]  # as saved (an older doom_a3c's may lack values: resolve.upgrade_saved_config)
    num_actions: int
    counters: dict[str, float]  # env_steps, episodes, updates, wall_seconds; bot_level where it holds one


class RunCounters(tf.Module):
    """Counters and identity saved with the weights (plain tf.Variables: updated only by the coordinator)."""

    def __init__(self, config: TrainConfig, num_actions: int):
        super().__init__(name="run")
        self.env_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.episodes = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.updates = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.wall_seconds = tf.Variable(0.0, dtype=tf.float64, trainable=False)
        self.num_actions = tf.Variable(num_actions, dtype=tf.int64, trainable=False)
        self.config_json = tf.Variable(config.to_json(), dtype=tf.string, trainable=False)

    def restored_bot_level(self) -> int | None:
        """The --bot-curriculum level of the checkpoint just restored; None when it holds none (trained without the
        curriculum, or older than it). Call after any restore: `bot_level` is made here, and TensorFlow fills it in
        from a checkpoint that holds it as it is made, while restoring one that lacks it into counters that held it
        would fail to match."""
        if not hasattr(self, "bot_level"):
            self.bot_level = tf.Variable(NO_BOT_LEVEL, dtype=tf.int64, trainable=False)
        level = int(self.bot_level.numpy())
        return None if level == NO_BOT_LEVEL else level

    def keep_bot_level(self, level: int | None) -> None:
        """Save `level` (None: no curriculum) with the next checkpoint."""
        self.restored_bot_level()  # made if it is not yet
        self.bot_level.assign(NO_BOT_LEVEL if level is None else level)


NO_BOT_LEVEL = -1  # what a checkpoint of a run without --bot-curriculum holds
BOT_LEVEL_KEY = "run/bot_level/.ATTRIBUTES/VARIABLE_VALUE"


def _checkpoint_files(prefix: str) -> list[str]:
    directory, base = os.path.split(prefix)
    names = [n for n in os.listdir(directory or ".") if n.startswith(base + ".data-") or n == base + ".index"]
    return sorted(names, key=lambda n: n.endswith(".index"))  # data first, the index last


def publish_alias(prefix: str, alias_prefix: str) -> None:
    """Make `alias_prefix` a second name for checkpoint `prefix`, one atomic rename per file."""
    directory = os.path.dirname(prefix) or "."
    base = os.path.basename(prefix)
    alias_base = os.path.basename(alias_prefix)
    for name in _checkpoint_files(prefix):
        src = os.path.join(directory, name)
        dst = os.path.join(os.path.dirname(alias_prefix) or ".", alias_base + name[len(base):])
        if os.path.exists(dst) and os.path.samefile(src, dst):
            continue  # already the alias (the same checkpoint saved twice); rename() would leave tmp behind
        tmp = f"{dst}.tmp-{os.getpid()}"
        if os.path.lexists(tmp):
            os.remove(tmp)  # left by a crashed save
        try:
            os.link(src, tmp)
        except OSError:
            shutil.copyfile(src, tmp)
        os.replace(tmp, dst)


class Checkpointer:
    """Numbered checkpoints `ckpt-<env steps>` in `numbered_dir` (model_dir by default), the newest published as
    `model_dir/alias`. The run's last.ckpt also refreshes config.json."""

    def __init__(self, model_dir: str, checkpoint: tf.train.Checkpoint, counters: RunCounters, keep: int = 3,
                 alias: str = LAST, numbered_dir: str | None = None):
        self.model_dir = model_dir
        self.checkpoint = checkpoint
        self.counters = counters
        self.alias = alias
        self.manager = tf.train.CheckpointManager(checkpoint, numbered_dir or model_dir, max_to_keep=max(1, keep),
                                                  checkpoint_name="ckpt")

    def save(self) -> str:
        path = self.manager.save(checkpoint_number=int(self.counters.env_steps.numpy()))
        publish_alias(path, os.path.join(self.model_dir, self.alias))
        if self.alias == LAST:
            atomic_write_text(os.path.join(self.model_dir, CONFIG_FILE),
                              self.counters.config_json.numpy().decode() + "\n")
        return path

    def latest(self) -> str | None:
        return self.manager.latest_checkpoint


class EvaluationScore(tf.Module):
    """What best.ckpt holds besides a run's checkpoint: the mean score of the evaluation that made it."""

    def __init__(self):
        super().__init__(name="evaluation")
        self.mean = tf.Variable(float("-inf"), dtype=tf.float64, trainable=False)


EVALUATION_MEAN_KEY = "evaluation/mean/.ATTRIBUTES/VARIABLE_VALUE"


class BestCheckpoint:
    """`best.ckpt`: the network of the best evaluation so far, with the run's counters and config when it was
    evaluated, written as last.ckpt is (numbered checkpoints in `best/`, published under one name, never
    half-written). load_agent, play.py and --export take it as they take last.ckpt; it holds no optimizer state
    (--resume continues from last.ckpt)."""

    def __init__(self, model_dir: str, net: tf.Module, config: TrainConfig, num_actions: int):
        self.counters = RunCounters(config, num_actions)
        self.score = EvaluationScore()
        checkpoint = tf.train.Checkpoint(model=net, run=self.counters, evaluation=self.score)
        self.checkpointer = Checkpointer(model_dir, checkpoint, self.counters, keep=1, alias=BEST,
                                         numbered_dir=os.path.join(model_dir, BEST_DIR))

    def save(self, mean: float, env_steps: int, updates: int, episodes: int, wall_seconds: float) -> str:
        """Save the network as it is now (the evaluated weights) as the best, with its evaluation's mean."""
        for variable, value in ((self.counters.env_steps, env_steps), (self.counters.updates, updates),
                                (self.counters.episodes, episodes), (self.counters.wall_seconds, wall_seconds),
                                (self.score.mean, mean)):
            variable.assign(value)
        return self.checkpointer.save()


def best_evaluation_mean(model_dir: str) -> float | None:
    """The mean score best.ckpt in `model_dir` was saved with; None without a readable one."""
    prefix = os.path.join(model_dir, BEST)
    if not os.path.exists(prefix + ".index"):
        return None
    try:
        return float(tf.train.load_checkpoint(prefix).get_tensor(EVALUATION_MEAN_KEY))
    except (tf.errors.OpError, ValueError, KeyError):
        return None


def resolve_prefix(path: str) -> str:
    """Accept `models/last.ckpt`, `models/last.ckpt.index` or a run folder like `models`."""
    if path.endswith(".index"):
        path = path[: -len(".index")]
    if os.path.isdir(path):
        # The `checkpoint` state file is replaced atomically only after a numbered checkpoint is complete,
        # so after a crash it names a whole checkpoint: prefer it over the last.ckpt alias.
        latest = tf.train.latest_checkpoint(path)
        if latest:
            return latest
        candidate = os.path.join(path, LAST)
        if os.path.exists(candidate + ".index"):
            return candidate
        raise CheckpointError(f"no checkpoint in folder {path} (expected {os.path.join(path, LAST)})")
    if not os.path.exists(path + ".index"):
        raise CheckpointError(f"no checkpoint at {path} (expected the file {path}.index)")
    return path


def read_checkpoint(prefix: str) -> SavedRun:
    """The config, action count and counters stored in a checkpoint, without building anything."""
    try:
        reader = tf.train.load_checkpoint(prefix)

        def value(name: str):
            return reader.get_tensor(f"run/{name}/.ATTRIBUTES/VARIABLE_VALUE")

        config = json.loads(value("config_json"))  # an older doom_a3c saved NaN: Python's reader takes it
        if not isinstance(config, dict):
            raise ValueError("its config is not a JSON object")
        counters = {k: value(k).item() for k in ("env_steps", "episodes", "updates", "wall_seconds")}
        if reader.has_tensor(BOT_LEVEL_KEY) and reader.get_tensor(BOT_LEVEL_KEY) != NO_BOT_LEVEL:
            counters["bot_level"] = reader.get_tensor(BOT_LEVEL_KEY).item()
        return SavedRun(prefix, config, int(value("num_actions")), counters)
    except (tf.errors.OpError, ValueError, KeyError, IndexError, UnicodeDecodeError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CheckpointError(f"checkpoint {prefix} is corrupt, truncated or not a doom_a3c checkpoint ({reason})") from None


def restore(checkpoint: tf.train.Checkpoint, prefix: str, partial: bool = False) -> None:
    """Restore into already-built objects; shape mismatches and damaged files become CheckpointError."""
    try:
        status = checkpoint.restore(prefix)
        if partial:
            status.expect_partial()
        status.assert_existing_objects_matched()
    except (tf.errors.OpError, ValueError, IndexError, AssertionError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CheckpointError(f"cannot restore {prefix}: {reason[:300]}") from None

