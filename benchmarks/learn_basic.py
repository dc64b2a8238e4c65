#!/usr/bin/env python
"""How fast does train.py learn basic.wad? Runs it for a time budget per seed and reads progress.csv.

    python benchmarks/learn_basic.py --minutes 10 --seeds 0 1 2 [-- extra train.py flags]

Reports, per seed, the wall time and the env steps at which the mean of the last 100 episodes first
reached the threshold (80 by default), the final mean-100 and the run's env steps per second (a shared
machine's speed drifts: times only compare between runs of about the same speed), and the median over seeds.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from doom_a3c.summaries import moving_mean, read_progress  # noqa: E402


def first_reached(rows: list[dict[str, float]], means: np.ndarray, threshold: float, window: int = 100):
    """The progress row at which the mean of the last `window` episodes first reached threshold, if any."""
    return next((rows[i] for i in range(window - 1, len(rows)) if means[i] >= threshold), None)


def median_padded(values: list[float], runs: int) -> float:
    """Median over `runs`, the runs that never reached the threshold counting as +inf."""
    return statistics.median(sorted(values) + [float("inf")] * (runs - len(values)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="time budget per seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--threshold", type=float, default=80.0)
    parser.add_argument("--scenario", default="basic.wad")
    parser.add_argument("--stop-at-threshold", action="store_true", help="end each run once the threshold is reached")
    parser.add_argument("--out", default=None, help="keep each run's outputs here (default: a temporary folder)")
    args, extra = parser.parse_known_args()
    extra = [e for e in extra if e != "--"]
    out = args.out or tempfile.mkdtemp(prefix="learn_basic_")
    reached: list[tuple[float, float]] = []  # (wall s, env steps) of each seed that got there
    finals: list[float] = []
    for seed in args.seeds:
        run_dir = os.path.join(out, f"seed{seed}")
        command = [sys.executable, os.path.join(ROOT, "train.py"), "--scenario", args.scenario, "--seed", str(seed),
                   "--max-minutes", str(args.minutes), "--model-dir", run_dir, "--frames-dir",
                   os.path.join(run_dir, "frames"), "--log-every-seconds", "30", *extra]
        if args.stop_at_threshold:
            command += ["--target-reward", str(args.threshold)]
        print("$", " ".join(command), flush=True)
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        rows = read_progress(os.path.join(run_dir, "progress.csv"))
        means = moving_mean(np.array([r["reward"] for r in rows]), 100)
        row = first_reached(rows, means, args.threshold)
        final = means[-1] if rows else float("nan")
        steps = int(rows[-1]["env_steps"]) if rows else 0
        rate = steps / rows[-1]["wall_s"] if rows and rows[-1]["wall_s"] > 0 else float("nan")
        finals.append(final)
        if row:
            reached.append((row["wall_s"], row["env_steps"]))
        # Steps to the threshold measure sample efficiency, whatever else the machine was doing.
        shown = f"at {row['wall_s']:.0f} s ({int(row['env_steps']):,} env steps)" if row else "not reached"
        print(f"seed {seed}: mean-100 >= {args.threshold:g} {shown}; final mean-100 {final:.1f}; "
              f"{len(rows)} episodes, {steps:,} env steps at {rate:,.0f} env steps/s", flush=True)
    runs = len(args.seeds)
    print(f"\n{len(reached)}/{runs} seeds reached mean-100 >= {args.threshold:g} within {args.minutes:g} min")
    if reached:
        print(f"median time to threshold: {median_padded([t for t, _ in reached], runs):.0f} s")
        print(f"median env steps to threshold: {median_padded([s for _, s in reached], runs):,.0f}")
    print(f"median final mean-100: {statistics.median(finals):.1f}")
    print(f"outputs: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
