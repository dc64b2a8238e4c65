#!/usr/bin/env python
"""Issue 4's other peer: Sample Factory's APPO on its own ViZDoom basic env (`sf_examples.vizdoom`, env
`doom_basic`: idle + 3 actions, frame skip 4, rewards x 0.01, 128x72 frames), 2 workers x 4 envs, on the CPU.

    python benchmarks/peer_sample_factory.py --sf-python /tmp/sf/bin/python --seeds 0 --minutes 12

Sample Factory writes no per-episode file. Every 5 s its log prints the env frames so far and the mean score of
its last 100 episodes ("Avg episode reward", in its x 0.01 units). This reads the log as it grows, stops a run
once that mean reaches the threshold (or the budget runs out) and reports, as learn_basic.py does, the wall
time and env steps (frames / 4) at which it got there, counted from its first report (after start-up).
Sample Factory and PyTorch are not this project's dependencies; put them in an environment of their own:
    python -m venv /tmp/sf && /tmp/sf/bin/pip install sample-factory vizdoom==1.3.2
"""
from __future__ import annotations

import argparse
import csv
import datetime
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from learn_basic import Result, headline, summarize  # noqa: E402

FRAME_SKIP = 4  # doom_basic's env_frameskip: Sample Factory counts frames, we count agent steps
REWARD_SCALE = 0.01  # doom_basic's reward_scaling: its log shows scaled scores
STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")
FRAMES = re.compile(r"Fps is .*Total num frames: (\d+)\.")
REWARD = re.compile(r"Avg episode reward: \[\(0, '(-?[\d.]+)'\)\]")


def parse_log(lines: list[str]) -> list[tuple[float, float, float]]:
    """(wall s since the first frame report, env steps, mean-100 score) for each reward report of the log."""
    start = frames = None
    points = []
    for line in lines:
        stamp = STAMP.search(line)
        if not stamp:
            continue
        when = datetime.datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if match := FRAMES.search(line):
            start = when if start is None else start
            frames = int(match.group(1))
        elif (match := REWARD.search(line)) and frames:  # none before its first frames: no episode yet
            points.append((when - start, frames / FRAME_SKIP, float(match.group(1)) / REWARD_SCALE))
    return points


def result_of(points: list[tuple[float, float, float]], threshold: float) -> Result:
    if not points:
        return Result(None, float("nan"), float("nan"))
    reached = next(((wall, steps) for wall, steps, mean in points if mean >= threshold), None)
    wall, steps, mean = points[-1]
    return Result(reached, mean, steps / wall if wall > 0 else float("nan"))


def stop_session(proc: subprocess.Popen) -> None:
    """SIGTERM lets Sample Factory shut down; then SIGKILL for what is left of its session: its ViZDoom engines
    and multiprocessing's resource tracker ignore SIGTERM and would outlive it."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def run_seed(sf_python: str, seed: int, minutes: float, threshold: float, out: str, workers: int, envs: int) -> Result:
    log_path = os.path.join(out, f"seed{seed}.log")
    command = [sf_python, "-m", "sf_examples.vizdoom.train_vizdoom", "--env=doom_basic", f"--experiment=seed{seed}",
               f"--train_dir={out}", f"--num_workers={workers}", f"--num_envs_per_worker={envs}", "--device=cpu",
               f"--seed={seed}"]
    print("$", " ".join(command), flush=True)
    with open(log_path, "w") as log:
        # A session of its own: its workers and their ViZDoom engines all go with one killpg.
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + minutes * 60 + 120  # 2 minutes for its start-up, which the times leave out
    points: list = []
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(2)
            with open(log_path, errors="replace") as log:
                points = parse_log(log.readlines())
            if points and (points[-1][0] >= minutes * 60 or points[-1][2] >= threshold):
                break
    finally:
        stop_session(proc)
    with open(os.path.join(out, f"seed{seed}_mean100.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["wall_s", "env_steps", "mean100"])
        writer.writerows(points)
    result = result_of(points, threshold)
    print(f"{headline(f'peer (Sample Factory) seed {seed}', result, threshold)}; "
          f"{int(points[-1][1]) if points else 0:,} env steps at {result.rate:,.0f} env steps/s", flush=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sf-python", required=True, help="a Python with sample-factory and vizdoom installed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--minutes", type=float, default=12.0, help="training budget per seed")
    parser.add_argument("--threshold", type=float, default=80.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--envs-per-worker", type=int, default=4)
    parser.add_argument("--out", default=None, help="train dir and logs (default: a temporary folder)")
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="peer_sf_")
    os.makedirs(out, exist_ok=True)
    results = [run_seed(args.sf_python, seed, args.minutes, args.threshold, out, args.workers, args.envs_per_worker)
               for seed in args.seeds]
    summarize("peer (Sample Factory APPO, benchmarks/peer_sample_factory.py)", results, args.threshold, args.minutes)
    print(f"outputs: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
