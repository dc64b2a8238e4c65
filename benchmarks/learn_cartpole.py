#!/usr/bin/env python
"""How fast does train.py learn CartPole-v1? One run per seed, stopped at the target or the time budget.

    python benchmarks/learn_cartpole.py [--seeds 0 1 2] [--minutes 2] [-- extra train.py flags]

Prints, per seed, the training wall time (progress.csv's wall_s: from the start of the worker
threads) at which the mean of the last 100 episodes first reached 475, and the process's total time
(TensorFlow import and set-up included). The run uses the CartPole-v1 preset (scenarios/CartPole-v1.toml)
unless extra flags override it. Goal: within 60 s on 2 cores in at least 2 of 3 seeds.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.trainer_child import run_trainer_checked  # noqa: E402
from doom_a3c.run.summaries import read_progress  # noqa: E402


def first_time_at_mean(rows: list[dict[str, float]], threshold: float, window: int = 100) -> tuple[float | None, int | None]:
    """(wall_s, env_steps) of the first episode at which the mean of the last `window` reached threshold."""
    rewards = [r["reward"] for r in rows]
    total = sum(rewards[:window - 1])
    for i in range(window - 1, len(rows)):
        total += rewards[i]
        if total / window >= threshold:
            return rows[i]["wall_s"], int(rows[i]["env_steps"])
        total -= rewards[i - window + 1]
    return None, None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--minutes", type=float, default=2.0, help="time budget per seed")
    parser.add_argument("--threshold", type=float, default=475.0)
    parser.add_argument("--goal-seconds", type=float, default=60.0)
    parser.add_argument("--out", default=None, help="keep each run's outputs here (default: a temporary folder)")
    args, extra = parser.parse_known_args()
    extra = [e for e in extra if e != "--"]
    out = args.out or tempfile.mkdtemp(prefix="learn_cartpole_")
    reached_in_time = 0
    for seed in args.seeds:
        run_dir = os.path.join(out, f"seed{seed}")
        command = [sys.executable, os.path.join(ROOT, "train.py"), "--scenario", "CartPole-v1", "--seed", str(seed),
                   "--max-minutes", str(args.minutes), "--target-reward", str(args.threshold),
                   "--model-dir", run_dir, "--frames-dir", os.path.join(run_dir, "frames"), *extra]
        print("$", " ".join(command), flush=True)
        started = time.time()
        run_trainer_checked(command)
        process_seconds = time.time() - started
        rows = read_progress(os.path.join(run_dir, "progress.csv"))
        wall, steps = first_time_at_mean(rows, args.threshold)
        if wall is not None and wall <= args.goal_seconds:
            reached_in_time += 1
        shown = f"{wall:.1f} s of training ({steps:,} env steps)" if wall is not None else "not reached"
        final = sum(r["reward"] for r in rows[-100:]) / max(1, min(100, len(rows)))
        print(f"seed {seed}: mean-100 >= {args.threshold:g} at {shown}; process {process_seconds:.0f} s in all; "
              f"final mean-100 {final:.1f} after {len(rows)} episodes", flush=True)
    print(f"{reached_in_time}/{len(args.seeds)} seeds reached mean-100 >= {args.threshold:g} within "
          f"{args.goal_seconds:g} s of training; outputs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
