#!/usr/bin/env python
"""How fast does train.py learn basic.wad? Runs it for a time budget per seed and reads progress.csv.

    python benchmarks/learn_basic.py --minutes 10 --seeds 0 1 2 [-- extra train.py flags]

Reports, per seed, the wall time and the env steps at which the mean of the last 100 episodes first
reached the threshold (80 by default), the final mean-100 and the run's env steps per second (a shared
machine's speed drifts: times only compare between runs of about the same speed), and the median over seeds.

    python benchmarks/learn_basic.py --minutes 4 --seeds 0 1 2 --stop-at-threshold --peer-python /tmp/peer/bin/python

also runs the peer, Stable-Baselines3 PPO (benchmarks/peer_sb3.py, in a Python that has it), right after each
of our seeds, and reports the ratios of the two: only figures measured back to back compare.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
from typing import NamedTuple

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.trainer_child import run_trainer_checked  # noqa: E402
from doom_a3c.run.summaries import moving_mean, read_progress  # noqa: E402


def first_reached(rows: list[dict[str, float]], means: np.ndarray, threshold: float, window: int = 100):
    """The progress row at which the mean of the last `window` episodes first reached threshold, if any."""
    return next((rows[i] for i in range(window - 1, len(rows)) if means[i] >= threshold), None)


def median_padded(values: list[float], runs: int) -> float:
    """Median over `runs`, the runs that never reached the threshold counting as +inf."""
    return statistics.median(sorted(values) + [float("inf")] * (runs - len(values)))


class Result(NamedTuple):
    reached: tuple[float, float] | None  # (wall s, env steps) at which mean-100 first reached the threshold
    final: float  # mean-100 at the end
    rate: float  # env steps/s over the whole run


def run_once(label: str, command: list[str], run_dir: str, threshold: float) -> Result:
    """Run one training command (it writes run_dir/progress.csv) and read off when it got there."""
    print("$", " ".join(command), flush=True)
    run_trainer_checked(command)
    rows = read_progress(os.path.join(run_dir, "progress.csv"))
    means = moving_mean(np.array([r["reward"] for r in rows]), 100)
    row = first_reached(rows, means, threshold)
    final = means[-1] if rows else float("nan")
    steps = int(rows[-1]["env_steps"]) if rows else 0
    rate = steps / rows[-1]["wall_s"] if rows and rows[-1]["wall_s"] > 0 else float("nan")
    result = Result((row["wall_s"], row["env_steps"]) if row else None, final, rate)
    print(f"{headline(label, result, threshold)}; {len(rows)} episodes, {steps:,} env steps at {rate:,.0f} env "
          f"steps/s", flush=True)
    return result


def headline(label: str, result: Result, threshold: float) -> str:
    """'label: mean-100 >= 80 at 40 s (45,120 env steps); final mean-100 79.7', for ours and the peers."""
    # Steps to the threshold measure sample efficiency, whatever else the machine was doing.
    shown = (f"at {result.reached[0]:.0f} s ({int(result.reached[1]):,} env steps)" if result.reached
             else "not reached")
    return f"{label}: mean-100 >= {threshold:g} {shown}; final mean-100 {result.final:.1f}"


def summarize(name: str, results: list[Result], threshold: float, minutes: float) -> tuple[float, float]:
    """Print the medians over seeds; returns (median wall s to threshold, median env steps/s)."""
    reached = [r.reached for r in results if r.reached]
    runs = len(results)
    print(f"\n{name}: {len(reached)}/{runs} seeds reached mean-100 >= {threshold:g} within {minutes:g} min")
    median_time = median_padded([t for t, _ in reached], runs)
    if reached:
        print(f"  median time to threshold: {median_time:.0f} s")
        print(f"  median env steps to threshold: {median_padded([s for _, s in reached], runs):,.0f}")
    median_rate = statistics.median(r.rate for r in results)
    print(f"  median final mean-100: {statistics.median(r.final for r in results):.1f}; "
          f"median env steps/s: {median_rate:,.0f}")
    return median_time, median_rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="time budget per seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--threshold", type=float, default=80.0)
    parser.add_argument("--scenario", default="basic.wad")
    parser.add_argument("--stop-at-threshold", action="store_true", help="end each run once the threshold is reached")
    parser.add_argument("--out", default=None, help="keep each run's outputs here (default: a temporary folder)")
    parser.add_argument("--peer-python", default=None,
                        help="a Python with Stable-Baselines3: after each seed's run, run benchmarks/peer_sb3.py "
                             "with it (same seed, budget and threshold) and report the ratios")
    parser.add_argument("--peer-minutes", type=float, default=None, help="the peer's budget (default: --minutes)")
    args, extra = parser.parse_known_args()
    extra = [e for e in extra if e != "--"]
    out = args.out or tempfile.mkdtemp(prefix="learn_basic_")
    peer_minutes = args.peer_minutes or args.minutes
    ours: list[Result] = []
    peers: list[Result] = []
    for seed in args.seeds:
        run_dir = os.path.join(out, f"seed{seed}")
        command = [sys.executable, os.path.join(ROOT, "train.py"), "--scenario", args.scenario, "--seed", str(seed),
                   "--max-minutes", str(args.minutes), "--model-dir", run_dir, "--frames-dir",
                   os.path.join(run_dir, "frames"), "--log-every-seconds", "30", *extra]
        if args.stop_at_threshold:
            command += ["--target-reward", str(args.threshold)]
        ours.append(run_once(f"seed {seed}", command, run_dir, args.threshold))
        if args.peer_python:
            # Right after ours, so that both see the same machine (a shared machine's speed drifts).
            peer_dir = os.path.join(out, f"peer_seed{seed}")
            command = [args.peer_python, os.path.join(ROOT, "benchmarks", "peer_sb3.py"), "--seed", str(seed),
                       "--minutes", str(peer_minutes), "--out", peer_dir]
            if args.stop_at_threshold:
                command += ["--target-reward", str(args.threshold)]
            peers.append(run_once(f"peer seed {seed}", command, peer_dir, args.threshold))
    our_time, our_rate = summarize("doom_a3c", ours, args.threshold, args.minutes)
    if peers:
        peer_time, peer_rate = summarize("peer (SB3 PPO, benchmarks/peer_sb3.py)", peers, args.threshold,
                                         peer_minutes)
        times = (f"the peer's median time to threshold is {peer_time / our_time:.2f}x ours (a seed that never got "
                 f"there counts as infinite)" if math.isfinite(our_time) else "our median run did not get there")
        print(f"\nratios, measured back to back: env steps/s {our_rate / peer_rate:.2f}x the peer's; {times}")
    print(f"outputs: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
