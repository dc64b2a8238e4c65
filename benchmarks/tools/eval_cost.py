#!/usr/bin/env python
"""What one evaluation during training costs: the evaluator's own games and play (doom_a3c/run/periodic_evaluation.py's
`play_episodes`), on the config a fresh `train.py --scenario NAME [flags]` resolves, with an untrained network or a
checkpoint's weights.

    python benchmarks/tools/eval_cost.py [--scenario cig] [--minutes M] [--model CKPT] [-- extra train.py flags]

The games are built as the evaluator builds them (min(--eval-episodes, --envs-per-worker) games, in child processes,
seeded --seed + 20,000 + i) and play --eval-episodes whole episodes, greedy unless --no-eval-greedy is given.
`--minutes M` sets a deathmatch's +timelimit to M game minutes (a shorter match to extrapolate from; default: the
preset's). Reports the wall seconds of the play, the batched steps and the agent steps played (every game steps
until the last has played its share, so games that are done play on), and the CPU seconds of the whole process tree
(this process and its game processes and their engines, read from /proc before and after the play): a busy machine
inflates the wall seconds, not the CPU seconds. Building and starting the games (the first evaluation's only) is
left out of both and reported apart. A deathmatch's matches also report their deaths (every match that ended, those
of games playing on past their share too).
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.tools.deathmatch_random import with_time_limit
from doom_a3c.algo.local_copy import LocalCopy
from doom_a3c.config import build_parser, given_values
from doom_a3c.envs.engine import descendants
from doom_a3c.envs.factory import make_env_batch
from doom_a3c.errors import CheckpointError, ConfigError
from doom_a3c.modes.build import build_network
from doom_a3c.quiet_import import tf
from doom_a3c.run.periodic_evaluation import EVAL_SEED_OFFSET, play_episodes
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.runtime.checkpoint import resolve_prefix, restore

TICKS = os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds() -> float:
    """User + system CPU seconds of this process and every process under it that is still running."""
    total = 0
    for pid in [os.getpid(), *descendants(os.getpid())]:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / TICKS


def measure(args: argparse.Namespace, train_flags: list[str]) -> None:
    """Play one evaluation of the resolved config as the evaluator plays it and print what it cost."""
    given = given_values(build_parser("train.py flags").parse_args([f for f in train_flags if f != "--"]))
    flags = {**given, "scenario": args.scenario, "model_dir": "/tmp/eval_cost_unused", "gif_every": 0}
    config = resolve_new_run(flags)
    if args.minutes is not None:
        if "-deathmatch" not in config.game_args.split():
            raise ConfigError(f"--minutes: for a deathmatch host (cig, a map with --bots N), not {args.scenario}")
        config = resolve_new_run({**flags, "game_args": with_time_limit(config.game_args, args.minutes)})
    seeds = [config.seed + EVAL_SEED_OFFSET + i for i in range(min(config.eval_episodes, config.envs_per_worker))]
    started = time.perf_counter()
    games = make_env_batch(config, seeds, stop=threading.Event())
    try:
        policy = LocalCopy(build_network(config, games.spec, "evaluation"), config, len(seeds))
        if args.model:
            restore(tf.train.Checkpoint(model=policy.net), resolve_prefix(args.model), partial=True)
        policy.act(games.reset(), np.ones(len(seeds), np.float32))  # traced, and the games started, before timing
        build_seconds = time.perf_counter() - started
        batched_steps, matches = 0, []
        step = games.step

        def counted(actions):
            nonlocal batched_steps
            batched_steps += 1
            result = step(actions)
            if result.matches is not None:
                matches.extend(match for match in result.matches if match is not None)
            return result

        games.step = counted
        cpu, wall = tree_cpu_seconds(), time.perf_counter()
        scores, restarts = play_episodes(games, policy, config.eval_episodes, config.eval_greedy,
                                         np.random.default_rng(config.seed + EVAL_SEED_OFFSET), threading.Event())
        wall, cpu = time.perf_counter() - wall, tree_cpu_seconds() - cpu
    finally:
        games.close()
    agent_steps = batched_steps * len(seeds)
    print(f"{args.scenario}: {config.eval_episodes} {'greedy' if config.eval_greedy else 'sampled'} episodes on "
          f"{len(seeds)} games ({config.game_args if config.env_kind == 'doom' else config.scenario_path})")
    print(f"build and start: {build_seconds:.1f} s wall")
    print(f"play: {wall:.1f} s wall, {cpu:.1f} CPU s (process tree), {batched_steps:,} batched steps, "
          f"{agent_steps:,} agent steps ({agent_steps / wall:,.0f} a wall second, {1000 * cpu / agent_steps:.2f} "
          f"CPU ms each)")
    print(f"scores: {', '.join(f'{s:g}' for s in scores)}; mean {np.mean(scores):.2f}"
          + (f"; restarts: {restarts}" if restarts else ""))
    if matches:
        deaths = [match["deaths"] for match in matches]
        print(f"deaths a match: {', '.join(f'{d:g}' for d in deaths)}; mean {np.mean(deaths):.1f} over "
              f"{len(deaths)} matches")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default="cig")
    parser.add_argument("--minutes", type=float, default=None, help="a deathmatch's match length in game minutes")
    parser.add_argument("--model", default=None, help="play these weights (a checkpoint of the same scenario and "
                                                      "network), not untrained ones")
    args, train_flags = parser.parse_known_args()
    try:
        measure(args, train_flags)
    except (ConfigError, CheckpointError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
