#!/usr/bin/env python
"""Our Atari curves against the published ones, at equal agent steps (the anchors of docs/results/atari.md).

    python benchmarks/atari_anchors.py --game Breakout --ours docs/curves/breakout_relu_recipe_seed0_45min.csv \
        docs/curves/breakout_defaults_seed1_45min.csv --out docs/figures/breakout_vs_anchors.png
    python benchmarks/atari_anchors.py --game Pong --ours RUN_DIR/progress.csv [...] --out pong.png

Every curve is put on one measure, Dopamine's: the mean score of the whole games that ended within each
quarter-million agent steps (Dopamine's "iteration" of 250k agent steps, 1M frames). Ours come from progress.csv
(its `env_steps` column counts agent steps for Atari; its `reward` is the whole game's unclipped score). Prints
the table at 1M, 2.5M, 4M and 5M agent steps and draws the curves into --out.

The anchors (ANCHOR_CURVES), numbers from their published runs:
- Dopamine (google/dopamine, baselines/atari/data/<game>.json, extracted into benchmarks/data/dopamine_sticky.json
  for seven games): DQN, C51, Rainbow and IQN with sticky actions, as the v5 ids here; each point the mean of its
  5 runs over the iteration's training games.
- RLlib's A2C on Breakout (ray-project/rl-experiments, atari-a2c/results/A2C_BreakoutNoFrameskip-v4_0_*/
  progress.csv): one run, BreakoutNoFrameskip-v4 (no sticky actions), `episode_reward_mean` (its last 100
  games) at the row nearest each quarter million of `timesteps_total` (agent steps: its episode_len_mean counts
  frames, about 4 times our games' agent steps at the same score). A different measure from the others: a
  moving mean of 100 games, not one window's games.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from doom_a3c.run.summaries import read_progress  # noqa: E402

WINDOW = 250_000  # agent steps: one Dopamine iteration

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
DOPAMINE_FILE = os.path.join(DATA_DIR, "dopamine_sticky.json")  # its "source" says where the numbers come from
DOPAMINE_AGENTS = ("DQN", "C51", "Rainbow", "IQN")
ANCHOR_ITERATIONS = 28  # the anchors' curves here run to 7M agent steps


def dopamine_curves(path: str = DOPAMINE_FILE) -> dict[str, dict[str, list[float]]]:
    """Per game, per agent: the mean over Dopamine's 5 runs of each iteration's training score (iteration i: the
    games ending in agent steps i*WINDOW to (i+1)*WINDOW)."""
    with open(path) as handle:
        return json.load(handle)["games"]


def _anchor_curves() -> dict[str, dict[str, list[float]]]:
    dopamine = dopamine_curves()
    curves = {game: {f"Dopamine {agent} (sticky)": dopamine[game][agent][:ANCHOR_ITERATIONS]
                     for agent in DOPAMINE_AGENTS} for game in ("Breakout", "Pong")}
    # RLlib's A2C, the row nearest (i+1)*WINDOW of its one run.
    curves["Breakout"]["RLlib A2C (v4, no sticky; mean-100)"] = [
        9.2, 14.7, 19.1, 23.3, 35.7, 46.2, 58.2, 74.5, 121.3, 133.7, 205.2, 176.3, 202.2, 242.3, 274.5, 289.0, 295.2,
        265.2, 296.2, 302.6, 336.5, 335.3, 354.5, 334.1, 364.5, 362.4, 362.0, 367.4]
    return curves


# Scores at the end of each window of WINDOW agent steps: index i covers steps i*WINDOW to (i+1)*WINDOW.
ANCHOR_CURVES = _anchor_curves()
MARKS = (1_000_000, 2_500_000, 4_000_000, 5_000_000)  # agent steps


def window_means(rows: list[dict[str, float]], window: int = WINDOW) -> list[float | None]:
    """The mean score of the games that ended in each window of agent steps (None for a window with none). A last
    window the run only entered (its games ending in its first tenth, as a run stopped at 2.5M logs a few games a
    few steps past it) is left out: a handful of games is not that window's mean."""
    if not rows:
        return []
    steps = np.array([row["env_steps"] for row in rows])
    scores = np.array([row["reward"] for row in rows])
    index = np.maximum(steps - 1, 0).astype(int) // window  # window i holds the games ending in (i*W, (i+1)*W]
    entered = index == index.max()
    if steps.max() - index.max() * window <= window // 10 and not entered.all():
        steps, scores, index = steps[~entered], scores[~entered], index[~entered]
    sums = np.bincount(index, weights=scores)
    counts = np.bincount(index)
    return [float(s / c) if c else None for s, c in zip(sums, counts)]


def at_mark(curve: list[float | None], steps: int) -> float | None:
    """The curve's value for the window that ends at `steps` agent steps."""
    index = steps // WINDOW - 1
    return curve[index] if 0 <= index < len(curve) else None


def table(game: str, ours: dict[str, list[float | None]]) -> list[str]:
    """A markdown table: each curve's value at MARKS."""
    curves = {**ours, **ANCHOR_CURVES.get(game, {})}
    lines = ["| curve | " + " | ".join(f"{m / 1e6:g}M" for m in MARKS) + " |",
             "| --- |" + " --- |" * len(MARKS)]
    for name, curve in curves.items():
        values = [at_mark(curve, m) for m in MARKS]
        lines.append(f"| {name} | " + " | ".join("-" if v is None else f"{v:.1f}" for v in values) + " |")
    return lines


def plot(game: str, ours: dict[str, list[float | None]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5))
    for name, curve in ANCHOR_CURVES.get(game, {}).items():
        x = [(i + 1) * WINDOW / 1e6 for i in range(len(curve))]
        axes.plot(x, curve, linestyle="--", linewidth=1.2, label=name)
    for name, curve in ours.items():
        points = [((i + 1) * WINDOW / 1e6, v) for i, v in enumerate(curve) if v is not None]
        axes.plot(*zip(*points), linewidth=2.2, label=name)
    axes.set_xlabel("agent steps (millions; 4 frames each)")
    axes.set_ylabel(f"{game} score: mean of the games ending in each 0.25M steps")
    axes.set_title(f"{game}: doom_a3c against published runs at equal agent steps")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    temporary = path + ".tmp.png"
    figure.savefig(temporary, dpi=90)
    plt.close(figure)
    os.replace(temporary, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", required=True, choices=sorted(ANCHOR_CURVES))
    parser.add_argument("--ours", nargs="+", required=True, metavar="PROGRESS_CSV",
                        help="progress.csv files of our runs (a run folder is read as its progress.csv)")
    parser.add_argument("--labels", nargs="+", default=None, help="one legend label per --ours (default: file names)")
    parser.add_argument("--out", default=None, help="write the plot here (PNG)")
    args = parser.parse_args()
    if args.labels and len(args.labels) != len(args.ours):
        parser.error("--labels needs one label per --ours file")
    ours = {}
    for i, path in enumerate(args.ours):
        path = os.path.join(path, "progress.csv") if os.path.isdir(path) else path
        rows = read_progress(path)
        if not rows:
            print(f"error: no games in {path}", file=sys.stderr)
            return 2
        label = args.labels[i] if args.labels else os.path.splitext(os.path.basename(path))[0]
        ours[f"doom_a3c {label}"] = window_means(rows)
    print("\n".join(table(args.game, ours)))
    if args.out:
        plot(args.game, ours, args.out)
        print(f"plot: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
