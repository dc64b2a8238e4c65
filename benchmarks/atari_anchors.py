#!/usr/bin/env python
"""Our Atari curves against the published ones, at equal agent steps (the anchors of docs/results/atari.md).

    python benchmarks/atari_anchors.py --game Breakout --ours docs/curves/breakout_relu_recipe_seed0_45min.csv \
        docs/curves/breakout_defaults_seed1_45min.csv --out docs/figures/breakout_vs_anchors.png
    python benchmarks/atari_anchors.py --game Pong --ours RUN_DIR/progress.csv [...] --out pong.png

Every curve is put on one measure, Dopamine's: the mean score of the whole games that ended within each
quarter-million agent steps (Dopamine's "iteration" of 250k agent steps, 1M frames). Ours come from progress.csv
(its `env_steps` column counts agent steps for Atari; its `reward` is the whole game's unclipped score). Prints
the table at 1M, 2.5M, 4M and 5M agent steps and draws the curves into --out.

The anchors (ANCHOR_CURVES), copied as numbers from their published runs:
- Dopamine (google/dopamine, baselines/atari/data/<game>.json): DQN, C51, Rainbow and IQN with sticky actions,
  as the v5 ids here; each point the mean of its 5 runs over the iteration's training games.
- RLlib's A2C on Breakout (ray-project/rl-experiments, atari-a2c/results/A2C_BreakoutNoFrameskip-v4_0_*/
  progress.csv): one run, BreakoutNoFrameskip-v4 (no sticky actions), `episode_reward_mean` (its last 100
  games) at the row nearest each quarter million of `timesteps_total` (agent steps: its episode_len_mean counts
  frames, about 4 times our games' agent steps at the same score). A different measure from the others: a
  moving mean of 100 games, not one window's games.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from doom_a3c.run.summaries import read_progress  # noqa: E402

WINDOW = 250_000  # agent steps: one Dopamine iteration

# Scores at the end of each window of WINDOW agent steps: index i covers steps i*WINDOW to (i+1)*WINDOW, the
# 5 runs' mean for Dopamine's (its iterations 0-27), the row nearest (i+1)*WINDOW for RLlib's.
ANCHOR_CURVES = {
    "Breakout": {
        "Dopamine DQN (sticky)": [1.6, 3.1, 3.9, 6.7, 9.3, 12.1, 14.2, 16.3, 18.6, 21.5, 24.5, 28.8, 32.1, 35.6,
                                  38.8, 41.3, 43.3, 46.7, 49.9, 52.9, 57.5, 58.5, 62.0, 63.6, 63.4, 70.1, 69.0, 71.6],
        "Dopamine C51 (sticky)": [1.6, 2.9, 6.4, 13.3, 17.8, 22.0, 28.5, 32.9, 39.6, 47.1, 54.7, 62.8, 69.2, 78.6,
                                  90.0, 95.6, 106.6, 114.5, 130.0, 139.5, 156.7, 164.0, 179.6, 178.3, 187.7, 198.3,
                                  195.6, 200.8],
        "Dopamine Rainbow (sticky)": [1.8, 4.5, 11.8, 15.6, 19.8, 24.1, 27.4, 32.4, 37.6, 41.9, 49.9, 53.9, 57.1,
                                      62.3, 62.2, 64.4, 66.7, 65.8, 68.3, 67.4, 63.6, 62.5, 59.8, 59.7, 58.2, 58.0,
                                      55.0, 52.8],
        "Dopamine IQN (sticky)": [4.1, 16.3, 22.5, 31.6, 41.6, 49.8, 59.0, 71.6, 84.4, 102.7, 118.8, 123.9, 134.9,
                                  140.7, 143.0, 150.4, 148.1, 158.7, 155.8, 147.1, 145.8, 142.4, 132.8, 133.9, 130.0,
                                  129.7, 130.5, 118.3],
        "RLlib A2C (v4, no sticky; mean-100)": [9.2, 14.7, 19.1, 23.3, 35.7, 46.2, 58.2, 74.5, 121.3, 133.7, 205.2,
                                                176.3, 202.2, 242.3, 274.5, 289.0, 295.2, 265.2, 296.2, 302.6, 336.5,
                                                335.3, 354.5, 334.1, 364.5, 362.4, 362.0, 367.4],
    },
    "Pong": {
        "Dopamine DQN (sticky)": [-20.3, -19.1, -17.6, -16.6, -15.4, -13.6, -11.0, -8.5, -7.4, -4.9, -2.4, -1.7, -0.4,
                                  0.9, 1.5, 2.6, 3.2, 4.2, 5.0, 5.7, 5.3, 6.4, 6.1, 7.0, 8.1, 7.0, 8.0, 7.1],
        "Dopamine C51 (sticky)": [-20.5, -20.5, -20.1, -18.9, -18.1, -16.8, -14.9, -13.6, -10.9, -6.1, -3.1, 2.1, 6.4,
                                  8.3, 9.4, 11.7, 12.6, 13.2, 13.8, 14.2, 14.5, 14.7, 14.8, 14.7, 15.2, 15.8, 15.8,
                                  16.0],
        "Dopamine Rainbow (sticky)": [-20.4, -20.6, -18.7, -16.5, -12.6, -1.6, 6.3, 10.7, 13.1, 15.2, 15.8, 16.7,
                                      17.2, 17.6, 17.6, 18.1, 18.2, 18.4, 18.6, 18.4, 18.7, 18.7, 18.8, 18.8, 18.9,
                                      18.8, 18.9, 19.0],
        "Dopamine IQN (sticky)": [-19.4, -13.8, -8.9, -1.8, 4.3, 8.2, 11.6, 12.8, 14.2, 15.2, 15.9, 16.4, 16.6, 17.1,
                                  17.3, 17.7, 17.8, 18.1, 18.0, 18.4, 18.6, 18.6, 18.7, 18.8, 18.9, 19.0, 19.2, 19.3],
    },
}
MARKS = (1_000_000, 2_500_000, 4_000_000, 5_000_000)  # agent steps


def window_means(rows: list[dict[str, float]], window: int = WINDOW) -> list[float | None]:
    """The mean score of the games that ended in each window of agent steps (None for a window with none)."""
    if not rows:
        return []
    steps = np.array([row["env_steps"] for row in rows])
    scores = np.array([row["reward"] for row in rows])
    index = np.maximum(steps - 1, 0).astype(int) // window  # window i holds the games ending in (i*W, (i+1)*W]
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
