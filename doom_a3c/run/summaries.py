"""Everything a run reports: progress.csv, TensorBoard scalars, the learning-curve PNG."""
from __future__ import annotations

import csv
import gc
import os
from array import array
from collections import deque

import numpy as np

from doom_a3c.config import TrainConfig
from doom_a3c.envs.doom.shaping import MATCH_FIELDS
from doom_a3c.quiet_import import tf
from doom_a3c.runtime.files import atomic_write_text

CSV_FIELDS = ["wall_s", "env_steps", "episode", "worker", "reward", "length"]
# A deathmatch run's progress.csv adds MATCH_FIELDS after these: frags, deaths, frags_per_minute, place; and with
# --bot-curriculum the level of the bots each match was played at.
BOT_LEVEL = "bot_level"
MATCH_TAGS = {"frags": "Match/Frags", "deaths": "Match/Deaths", "frags_per_minute": "Match/Frags per Minute",
              "place": "Match/Place", BOT_LEVEL: "Match/Bot Level"}


def progress_fields(config: TrainConfig) -> list[str]:
    """progress.csv's columns: CSV_FIELDS, a deathmatch's MATCH_FIELDS after them, then with --bot-curriculum
    bot_level."""
    if not config.plays_deathmatch():
        return CSV_FIELDS
    return CSV_FIELDS + MATCH_FIELDS + ([BOT_LEVEL] if config.bot_curriculum else [])


EVAL_FIELDS = ["wall_s", "env_steps", "episodes", "mean", "std", "min", "max"]


def append_evaluation(path: str, row: dict[str, float]) -> None:
    """One evaluation's row of eval.csv (EVAL_FIELDS), on disk when this returns; the header once, in a new or
    empty file (a resumed run appends to its own)."""
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as handle:
        if new:
            handle.write(",".join(EVAL_FIELDS) + "\n")
        handle.write(",".join(_format(row[k]) for k in EVAL_FIELDS) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def trim_evaluations(path: str, env_steps: int) -> None:
    """A resumed run's eval.csv keeps the evaluations its checkpoint covers (env_steps at most the checkpoint's):
    after a crash the file may run ahead of it, and those steps are played again. best.ckpt is left as it is:
    its weights were evaluated, and the checkpoint holds its own score."""
    rows = read_progress(path)
    kept = [r for r in rows if r["env_steps"] <= env_steps]
    if len(kept) < len(rows):
        write_rows(path, EVAL_FIELDS, kept)


def write_rows(path: str, fields: list[str], rows: list[dict[str, float]]) -> None:
    """A CSV of `fields` holding `rows`, replaced in one rename: a crash leaves the old file or the new one."""
    lines = [",".join(fields)] + [",".join(_format(r[k]) for k in fields) for r in rows]
    atomic_write_text(path, "\n".join(lines) + "\n")


def read_progress(path: str) -> list[dict[str, float]]:
    if not os.path.exists(path):
        return []
    with open(path, newline="") as handle:  # a column an older file lacks, or an empty cell: NaN
        return [{k: float(v) if v not in (None, "") else float("nan") for k, v in row.items()}
                for row in csv.DictReader(handle)]


class RunLog:
    def __init__(self, model_dir: str, config: TrainConfig, resumed_episodes: int | None = None):
        self.csv_path = os.path.join(model_dir, "progress.csv")
        self.curve_path = os.path.join(model_dir, "learning_curve.png")
        rows = read_progress(self.csv_path) if resumed_episodes is not None else []
        # After a crash the CSV may run ahead of the checkpoint we resume from: keep only what it covers.
        rows = [r for r in rows if r["episode"] <= (resumed_episodes or 0)]
        # The curve's three columns, 8 bytes per value: a dict per episode cost ~300 bytes, and basic.wad
        # ends ~80 episodes a second (45 MiB more resident memory every 30 minutes).
        self.curve_steps = array("d", (r["env_steps"] for r in rows))
        self.curve_wall = array("d", (r["wall_s"] for r in rows))
        self.curve_rewards = array("d", (r["reward"] for r in rows))
        self.fields = progress_fields(config)
        # A run resumed from a checkpoint older than a column gets the column, empty in its earlier rows.
        write_rows(self.csv_path, self.fields, [{k: r.get(k, float("nan")) for k in self.fields} for r in rows])
        self._csv = open(self.csv_path, "a", newline="")
        self._csv_writer = csv.writer(self._csv)
        self.recent_rewards: deque[float] = deque((r["reward"] for r in rows[-100:]), maxlen=100)
        self._unsummarised: list[tuple[float, int, float]] = []  # (reward, length, mean value) since the last write
        self._unsummarised_matches: list[dict[str, float]] = []
        self.recent_frags_per_minute: deque[float] = deque(
            (r["frags_per_minute"] for r in rows[-100:] if "frags_per_minute" in r), maxlen=100)
        self.writer = tf.summary.create_file_writer(os.path.join(model_dir, "tensorboard"))
        with self.writer.as_default():
            table = "\n".join(f"| {k} | {v} |" for k, v in sorted(vars(config).items()))
            tf.summary.text("Config/Hyperparameters", "| parameter | value |\n|---|---|\n" + table, step=0)

    def episode(self, wall_s: float, env_steps: int, episode: int, worker: int, reward: float, length: int,
                mean_value: float, match: dict[str, float] | None = None) -> None:
        """One finished episode's row; `match`: a deathmatch's report (its columns are empty without one)."""
        row = {"wall_s": round(wall_s, 2), "env_steps": env_steps, "episode": episode, "worker": worker,
               "reward": reward, "length": length}
        row.update({k: (match or {}).get(k, float("nan")) for k in self.fields[len(CSV_FIELDS):]})
        if match is not None and len(self.fields) > len(CSV_FIELDS):
            self._unsummarised_matches.append(match)
            self.recent_frags_per_minute.append(match["frags_per_minute"])
        self.curve_steps.append(env_steps)
        self.curve_wall.append(row["wall_s"])
        self.curve_rewards.append(reward)
        self._csv_writer.writerow([_format(row[k]) for k in self.fields])
        self.recent_rewards.append(reward)
        self._unsummarised.append((reward, length, mean_value))

    def summarise_episodes(self, env_steps: int) -> None:
        """TensorBoard's Perf/ scalars for the episodes logged since the last call: their means, so one
        write per batch. Doom ends an episode every few seconds (one point per episode); CartPole ends
        hundreds per second, and a summary op per episode starved the coordinator (9 ms each under load)."""
        if self._unsummarised_matches:
            with self.writer.as_default(step=env_steps):
                for key, tag in MATCH_TAGS.items():
                    values = [m[key] for m in self._unsummarised_matches if key in m]  # a level: the curriculum's
                    if values:
                        tf.summary.scalar(tag, np.mean(values))
            self._unsummarised_matches.clear()
        if not self._unsummarised:
            return
        reward, length, value = np.mean(self._unsummarised, axis=0)
        self._unsummarised.clear()
        with self.writer.as_default(step=env_steps):
            tf.summary.scalar("Perf/Reward", reward)
            tf.summary.scalar("Perf/Length", length)
            tf.summary.scalar("Perf/Value", value)
            tf.summary.scalar("Perf/Mean Reward (100 episodes)", self.mean_reward())

    def mean_frags_per_minute(self) -> float | None:
        """A deathmatch run's mean frags a minute over its last 100 matches (NaN before the first); None otherwise."""
        if len(self.fields) == len(CSV_FIELDS):
            return None
        values = [v for v in self.recent_frags_per_minute if not np.isnan(v)]
        return float(np.mean(values)) if values else float("nan")

    def mean_reward(self) -> float:
        return float(np.mean(self.recent_rewards)) if self.recent_rewards else float("nan")

    def scalars(self, step: int, values: dict[str, float]) -> None:
        with self.writer.as_default(step=step):
            for tag, value in values.items():
                tf.summary.scalar(tag, value)

    def flush(self) -> None:
        self._csv.flush()
        self.writer.flush()

    def plot_curve(self) -> None:
        if not self.curve_rewards:
            return
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        # Copies: a view would pin the arrays' buffers, and `append` cannot resize an exported buffer.
        steps, wall, rewards = (np.array(column) for column in (self.curve_steps, self.curve_wall, self.curve_rewards))
        window = moving_mean(rewards, 100)
        # At most ~5,000 episode dots: a 30-minute basic.wad run ends 140k episodes.
        every = max(1, len(rewards) // 5000)
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for ax, x, label in ((axes[0], steps, "environment steps"), (axes[1], wall / 60.0, "wall time (minutes)")):
            ax.plot(x[::every], rewards[::every], ".", alpha=0.25, markersize=3, label="episode")
            ax.plot(x, window, "-", linewidth=2, label="mean of last 100")
            ax.set_xlabel(label)
            ax.set_ylabel("episode reward")
            ax.grid(alpha=0.3)
        axes[0].legend(loc="lower right")
        fig.tight_layout()
        tmp = f"{self.curve_path}.tmp-{os.getpid()}"
        fig.savefig(tmp, format="png", dpi=80)
        plt.close(fig)
        # A figure is a web of reference cycles (~6k objects and its ~1 MiB canvas) that only a full
        # collection frees, and those come rarely in a long run: without this, resident memory climbed
        # by ~125 MiB over the first 15 plots before it levelled off.
        gc.collect()
        os.replace(tmp, self.curve_path)

    def close(self) -> None:
        self.flush()
        self._csv.close()
        self.writer.close()


def moving_mean(values: np.ndarray, window: int) -> np.ndarray:
    """Mean of the last `window` values at every index (fewer at the start)."""
    sums = np.cumsum(np.concatenate([[0.0], values]))
    counts = np.minimum(np.arange(1, len(values) + 1), window)
    return (sums[1:] - sums[np.arange(1, len(values) + 1) - counts]) / counts


def _format(value: float) -> str:
    if np.isnan(value):
        return ""  # a column this row has no value for
    return str(int(value)) if float(value).is_integer() else f"{value:.4f}".rstrip("0")
