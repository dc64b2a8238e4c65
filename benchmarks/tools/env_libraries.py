#!/usr/bin/env python
"""Environment libraries against this project's own code: env steps/s with uniformly random actions, no learning.

    python benchmarks/tools/env_libraries.py [--seconds 30] [--games 8] [--scenario basic]

1. ViZDoom's own gymnasium env (`vizdoom.gymnasium_wrapper`, what Stable-Baselines3 users train on), one game,
   `frame_skip` as our preset's; it renders at its .cfg's resolution (basic: 320x240) and hands out the raw RGB
   screen, so a trainer still has to grey and shrink it.
2. doom_a3c's DoomEnvironment, one game, built as train.py builds it (160x120, the preset's frame skip, frame
   size and action set; grey and shrunk frames out).
3. gymnasium's AsyncVectorEnv of `--games` ViZDoom gymnasium envs (one process each).
4. doom_a3c's EnvBatch of `--games` DoomEnvironments stepped by 2 threads (a worker's games in training).

Steps count games stepped (a batch step of 8 games is 8). CPU per step counts this process and every process
under it (the engines, the vector env's workers): the cost a trainer pays for its games. ViZDoom's gymnasium
envs get the same preprocessing as ours (doom_a3c.envs.interface.preprocess_frame to the preset's frame size), so
both hand out what the network takes. A smoke check of a few seconds each shows that it runs;
figures to quote need a quiet machine and 30 s or more each. Shared machines drift: compare figures measured back to back.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/tools/ is two below
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from doom_a3c.envs.batch import EnvBatch  # noqa: E402
from doom_a3c.envs.factory import make_environment  # noqa: E402
from doom_a3c.envs.interface import preprocess_frame  # noqa: E402
from soak import family, process_table  # noqa: E402
from doom_a3c.run.resolve import resolve_new_run  # noqa: E402

GYM_IDS = {"basic": "VizdoomBasic-v1", "defend_the_center": "VizdoomDefendCenter-v1",
           "health_gathering": "VizdoomHealthGathering-v1"}


def cpu_seconds() -> float:
    """User + system CPU time of this process and every running process under it."""
    total = 0
    for pid in family(os.getpid(), process_table()):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, ValueError, IndexError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def timed(step, reset, seconds: float) -> tuple[float, float]:
    """(steps per second, CPU ms per step) of `step()` (returning how many games it stepped) for `seconds`."""
    reset()
    steps, start, cpu = 0, time.perf_counter(), cpu_seconds()
    while time.perf_counter() - start < seconds:
        steps += step()
    return steps / (time.perf_counter() - start), 1000 * (cpu_seconds() - cpu) / max(steps, 1)


def vizdoom_gymnasium(env_id: str, frame_skip: int, size: int, seconds: float, seed: int) -> tuple[float, float]:
    import gymnasium as gym
    import vizdoom.gymnasium_wrapper  # noqa: F401  (registers the Vizdoom* ids)

    env = gym.make(env_id, frame_skip=frame_skip)
    env.action_space.seed(seed)

    def step() -> int:
        observation, _, terminated, truncated, _ = env.step(env.action_space.sample())
        preprocess_frame(observation["screen"], size=size)  # what the network takes, as ours gives it
        if terminated or truncated:
            env.reset()
        return 1

    try:
        return timed(step, lambda: env.reset(seed=seed), seconds)
    finally:
        env.close()


def gymnasium_async(env_id: str, frame_skip: int, size: int, games: int, seconds: float, seed: int) -> tuple[float, float]:
    import gymnasium as gym
    import vizdoom.gymnasium_wrapper  # noqa: F401

    def make():
        import vizdoom.gymnasium_wrapper  # noqa: F401, F811  (in the child process too)

        return gym.make(env_id, frame_skip=frame_skip)

    envs = gym.vector.AsyncVectorEnv([make] * games)  # autoresets finished games
    envs.action_space.seed(seed)

    def step() -> int:
        observations = envs.step(envs.action_space.sample())[0]
        for screen in observations["screen"]:
            preprocess_frame(screen, size=size)
        return games

    try:
        return timed(step, lambda: envs.reset(seed=seed), seconds)
    finally:
        envs.close()


def doom_environment(config, seconds: float, seed: int) -> tuple[float, float]:
    env = make_environment(config, seed)
    rng = np.random.default_rng(seed)

    def step() -> int:
        if env.step(int(rng.integers(env.num_actions))).game_over:
            env.reset()
        return 1

    try:
        return timed(step, env.reset, seconds)
    finally:
        env.close()


def env_batch(config, games: int, seconds: float, seed: int) -> tuple[float, float]:
    batch = EnvBatch([make_environment(config, seed + i) for i in range(games)], threads=2)
    rng = np.random.default_rng(seed)

    def step() -> int:
        batch.step(rng.integers(batch.spec.num_actions, size=games))  # resets finished games itself
        return games

    try:
        return timed(step, batch.reset, seconds)
    finally:
        batch.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0, help="seconds per measurement")
    parser.add_argument("--games", type=int, default=8, help="games of the vector env and the EnvBatch")
    parser.add_argument("--scenario", default="basic", choices=sorted(GYM_IDS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    config = resolve_new_run({"scenario": args.scenario, "model_dir": os.path.join(ROOT, "models")})
    env_id = GYM_IDS[args.scenario]
    results = {
        f"vizdoom.gymnasium_wrapper {env_id}, 1 game": vizdoom_gymnasium(env_id, config.frame_skip,
                                                                          config.frame_size, args.seconds, args.seed),
        "doom_a3c DoomEnvironment, 1 game": doom_environment(config, args.seconds, args.seed),
        f"gymnasium AsyncVectorEnv of {env_id}, {args.games} games": gymnasium_async(
            env_id, config.frame_skip, config.frame_size, args.games, args.seconds, args.seed),
        f"doom_a3c EnvBatch, {args.games} games, 2 threads": env_batch(config, args.games, args.seconds, args.seed),
    }
    print(f"{args.scenario}, frame skip {config.frame_skip}, {args.seconds:g} s each, random actions")
    for name, (rate, cpu_ms) in results.items():
        print(f"  {name:<60} {rate:8.0f} env steps/s {cpu_ms:6.2f} ms CPU per step")


if __name__ == "__main__":
    main()
