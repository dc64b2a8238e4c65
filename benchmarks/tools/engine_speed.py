#!/usr/bin/env python
"""How fast is this machine's ViZDoom, with no learning at all? The ceiling every trainer here runs under.

    python benchmarks/tools/engine_speed.py [--seconds 5] [--scenario basic.wad]

Steps the scenario's games with uniformly random actions (and restarts, as training does) through the same
DoomEnvironment the trainer uses, built from the config a fresh train.py run resolves (the preset's frame skip,
crop, action set and frame size): one game from one thread, then
one game per core, each from its own thread. Reports steps/s and the CPU time per step of the Python side
and of the engine processes. Shared machines drift: only figures measured back to back compare.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/tools/ is two below
sys.path.insert(0, ROOT)

from doom_a3c.config import TrainConfig  # noqa: E402
from doom_a3c.envs.factory import make_environment  # noqa: E402
from doom_a3c.run.resolve import resolve_new_run  # noqa: E402

from benchmarks.throughput import children_by_parent  # noqa: E402


def process_cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def play(env, seconds: float, seed: int, counts: list[int], slot: int) -> None:
    rng = np.random.default_rng(seed)
    env.reset()
    end = time.perf_counter() + seconds
    steps = 0
    while time.perf_counter() < end:
        if env.step(int(rng.integers(env.num_actions))).game_over:
            env.reset()
        steps += 1
    counts[slot] = steps


def measure(config: TrainConfig, games: int, seconds: float) -> tuple[float, float, float]:
    """(steps/s, Python CPU us per step, engine CPU us per step) for `games` games of a resolved config, one
    thread each."""
    envs = [make_environment(config, seed=i) for i in range(games)]
    try:
        engines = children_by_parent().get(os.getpid(), [])  # the engine processes ViZDoom started for us
        engine_before = sum(process_cpu_seconds(p) for p in engines)
        python_before, start = time.process_time(), time.perf_counter()
        counts = [0] * games
        threads = [threading.Thread(target=play, args=(env, seconds, i, counts, i)) for i, env in enumerate(envs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - start
        steps = sum(counts)
        python_us = (time.process_time() - python_before) / steps * 1e6
        engine_us = (sum(process_cpu_seconds(p) for p in engines) - engine_before) / steps * 1e6
        return steps / wall, python_us, engine_us
    finally:
        for env in envs:
            env.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0, help="playing time per measurement")
    parser.add_argument("--scenario", default="basic.wad")
    args = parser.parse_args()
    config = resolve_new_run({"scenario": args.scenario})
    cores = os.cpu_count() or 1
    print(f"{args.scenario}: random actions, frame size {config.frame_size}, {cores} CPU cores")
    for games in sorted({1, cores}):
        rate, python_us, engine_us = measure(config, games, args.seconds)
        print(f"{games} game(s), one thread each: {rate:,.0f} steps/s; CPU per step: {python_us:.0f} us Python "
              f"(wrapper, client, preprocessing), {engine_us:.0f} us engine", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
