#!/usr/bin/env python
"""Deathmatch runs side by side: the evaluations against full-strength bots (eval.csv, frags a match) of train.py
runs and of benchmarks/peer_kieliger.py's, over wall time and over frames (game tics), in one figure, with
Kieliger's published curve on the frames axis; and a table of each run's evaluation nearest the minutes and frames
asked for.

    python benchmarks/compare_deathmatch.py --run "doom_a3c seed 0=/tmp/ours/models:6" \
        --run "Kieliger's PPO seed 0=/tmp/kieliger-seed0:4" --out docs/figures/deathmatch_vs_kieliger.png

Each --run is LABEL=FOLDER:FRAME_SKIP, FOLDER holding eval.csv (a train.py model dir, or the peer's --out), or
LABEL=FILE.csv:FRAME_SKIP for an evaluations CSV kept elsewhere (docs/curves/*_eval.csv); FRAME_SKIP turns its env
steps into frames (train.py's deathmatch: 4, or 6 for a run made with --frame-skip 6; the peer's: 4). Both are read by
doom_a3c/run/summaries.py's reader.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from doom_a3c.run.summaries import read_progress  # noqa: E402

# ../shared/maps/README.md: Kieliger's shaped PPO with the bot curriculum on deathmatch_simple, frags a match
# against full-strength bots at 4M / 8M / 12M frames.
PUBLISHED = [(4e6, 9.5), (8e6, 14.0), (12e6, 17.0)]


def parse_run(text: str) -> tuple[str, str, int]:
    """LABEL=FOLDER:FRAME_SKIP, checked; ValueError with what is wrong."""
    label, sep, rest = text.partition("=")
    folder, colon, skip = rest.rpartition(":")
    if not (sep and colon and label and folder and skip.isdigit() and int(skip) > 0):
        raise ValueError(f"--run {text!r}: expected LABEL=FOLDER:FRAME_SKIP, e.g. \"ours=/tmp/run/models:6\"")
    return label, folder, int(skip)


def evaluations(folder: str, frame_skip: int) -> list[tuple[float, float, float]]:
    """(minutes, frames, mean frags a match) of each evaluation in FOLDER/eval.csv (or in FOLDER, a .csv), in order."""
    path = folder if folder.endswith(".csv") else os.path.join(folder, "eval.csv")
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file (a train.py model dir or the peer's --out holds eval.csv)")
    return [(row["wall_s"] / 60.0, row["env_steps"] * frame_skip, row["mean"]) for row in read_progress(path)]


def nearest(points: list[tuple[float, float, float]], index: int, at: float) -> tuple[float, float, float] | None:
    """The evaluation whose minutes (index 0) or frames (index 1) are nearest `at`, None for no evaluations."""
    return min(points, key=lambda point: abs(point[index] - at)) if points else None


def table(runs: dict[str, list[tuple[float, float, float]]], minutes: list[float], frames: list[float]) -> str:
    """A markdown table: each run's evaluation nearest each of `minutes` and `frames`, with where it was taken."""
    header = [f"{m:g} min" for m in minutes] + [f"{f / 1e6:g}M frames" for f in frames]
    lines = ["| run | " + " | ".join(header) + " |", "|---" * (len(header) + 1) + "|"]
    for label, points in runs.items():
        cells = []
        for index, targets in ((0, minutes), (1, frames)):
            for at in targets:
                point = nearest(points, index, at)
                cells.append("-" if point is None else
                             f"{point[2]:.2f} ({point[0]:.0f} min, {point[1] / 1e6:.1f}M)")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(runs: dict[str, list[tuple[float, float, float]]], out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (by_time, by_frames) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, points in runs.items():
        by_time.plot([p[0] for p in points], [p[2] for p in points], marker="o", label=label)
        by_frames.plot([p[1] / 1e6 for p in points], [p[2] for p in points], marker="o", label=label)
    by_frames.plot([f / 1e6 for f, _ in PUBLISHED], [v for _, v in PUBLISHED], "k--", marker="s",
                   label="Kieliger's published curve")
    by_time.set(xlabel="wall time, minutes (2 cores)", ylabel="frags a match vs full-strength bots",
                title="at equal wall time")
    by_frames.set(xlabel="frames (game tics), millions", title="at equal frames")
    for axes in (by_time, by_frames):
        axes.grid(alpha=0.3)
        axes.set_ylim(bottom=0)
        axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out, dpi=90)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="append", required=True,
                        help="LABEL=FOLDER:FRAME_SKIP or LABEL=FILE.csv:FRAME_SKIP (repeat)")
    parser.add_argument("--out", default=None, help="the figure (.png); none without it")
    parser.add_argument("--minutes", type=float, nargs="*", default=[30.0, 60.0])
    parser.add_argument("--frames", type=float, nargs="*", default=[f for f, _ in PUBLISHED])
    args = parser.parse_args(argv)
    try:
        runs = {}
        for text in args.run:
            label, folder, skip = parse_run(text)
            runs[label] = evaluations(folder, skip)
    except ValueError as error:
        print(f"compare_deathmatch.py: {error}", file=sys.stderr)
        return 2
    print(table(runs, args.minutes, args.frames))
    if args.out:
        plot(runs, args.out)
        print(f"figure: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
