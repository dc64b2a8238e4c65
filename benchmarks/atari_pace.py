#!/usr/bin/env python
"""Atari training's pace beside the emulator's own, and against another checkout, back to back.

    python benchmarks/atari_pace.py [--game ALE/Breakout-v5] [--minutes 3] [--repeats 2]
                                    [--against DIR] [--emulator-seconds 30] [-- extra train.py flags]

- emulator only: ale-py's vector env (`AtariVectorEnv`) with the run's games, all of them (workers x
  --envs-per-worker, as the resolved defaults say) in one env stepped by one C++ thread a core, random actions,
  nothing else: the pace the emulator and its preprocessing allow on this machine. Measured before the training runs
  and after them; the median is the reference.
- training: `train.py --scenario GAME --max-minutes M` of this checkout (benchmarks/throughput.py's `run_mode`: agent
  steps/s from progress.csv after --warmup seconds), and with `--against DIR` of the checkout in DIR too (a `git
  worktree` of an older commit), the two alternated in each of --repeats rounds.
- share: training's median agent steps/s over the emulator's; ratio: this checkout's median over DIR's.

Prints a table and writes the numbers to --out (default: a temporary folder)/atari_pace.json. Only figures measured
back to back compare: the machine's speed varies from one hour to the next.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.throughput import run_mode  # noqa: E402


def emulator_pace(game: str, games: int, threads: int, seconds: float, seed: int = 0) -> float:
    """Agent steps/s of ale-py's vector env alone: `games` games of `game` as training makes them (the id's sticky
    actions, 84x84 grey, max-pooled, 4-frame stack, no-op starts), `threads` C++ threads, random actions."""
    import numpy as np

    from ale_py.vector_env import AtariVectorEnv

    from doom_a3c.envs.gym.registry import registered_spec

    spec = registered_spec(game).kwargs
    env = AtariVectorEnv(spec["game"], games, num_threads=threads,
                         repeat_action_probability=float(spec.get("repeat_action_probability", 0.0)),
                         reward_clipping=False, autoreset_mode="SameStep")
    try:
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        actions = rng.integers(env.single_action_space.n, size=(256, games)).astype(np.int32)
        for row in actions[:20]:  # warm-up
            env.step(row)
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            env.step(actions[steps % len(actions)])
            steps += 1
        return steps * games / (time.perf_counter() - start)
    finally:
        env.close()


def resolved_games(game: str, extra: list[str]) -> int:
    """The games of a fresh run of `game` with these train.py flags: workers x envs_per_worker."""
    from doom_a3c.config import build_parser, given_values
    from doom_a3c.run.resolve import resolve_new_run

    given = given_values(build_parser("atari_pace").parse_args(["--scenario", game, *extra]))
    config = resolve_new_run({**given, "model_dir": tempfile.mkdtemp(prefix="atari_pace_config_")})
    return config.workers * config.envs_per_worker


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", default="ALE/Breakout-v5")
    parser.add_argument("--minutes", type=float, default=3.0, help="training time of each run")
    parser.add_argument("--warmup", type=float, default=30.0, help="seconds left out of a run's rate")
    parser.add_argument("--repeats", type=int, default=2, help="rounds of runs (each checkout once a round)")
    parser.add_argument("--against", default="", help="another checkout (a git worktree) to run alternately")
    parser.add_argument("--emulator-seconds", type=float, default=30.0)
    parser.add_argument("--out", default="")
    args, extra = parser.parse_known_args()
    extra = [e for e in extra if e != "--"]
    out = args.out or tempfile.mkdtemp(prefix="atari_pace_")
    os.makedirs(out, exist_ok=True)
    games, threads = resolved_games(args.game, extra), os.cpu_count() or 1
    checkouts = {"this": ROOT, **({"against": os.path.abspath(args.against)} if args.against else {})}
    emulator = [emulator_pace(args.game, games, threads, args.emulator_seconds)]
    print(f"emulator only: {emulator[0]:,.0f} agent steps/s ({games} games, {threads} threads)", flush=True)
    training: dict[str, list[float]] = {name: [] for name in checkouts}
    run_args = argparse.Namespace(scenario=args.game, minutes=args.minutes, warmup=args.warmup)
    for repeat in range(args.repeats):
        order = list(checkouts) if repeat % 2 == 0 else list(reversed(checkouts))
        for name in order:
            result = run_mode(name, [], run_args, extra, os.path.join(out, f"r{repeat}"), root=checkouts[name])
            training[name].append(result["steps_per_s"])
            print(f"  {name}: {result['steps_per_s']:,.0f} agent steps/s", flush=True)
    emulator.append(emulator_pace(args.game, games, threads, args.emulator_seconds))
    reference = statistics.median(emulator)
    medians = {name: statistics.median(rates) for name, rates in training.items()}
    print(f"\n{args.game}, {args.minutes:g}-minute runs, {args.repeats} round(s), {os.cpu_count()} CPU cores")
    print(f"emulator only: {', '.join(f'{e:,.0f}' for e in emulator)} agent steps/s (median {reference:,.0f})")
    for name, rates in training.items():
        print(f"training ({checkouts[name]}): {', '.join(f'{r:,.0f}' for r in rates)} agent steps/s, median "
              f"{medians[name]:,.0f}, share of the emulator's {medians[name] / reference:.2f}")
    summary = {"game": args.game, "minutes": args.minutes, "cores": os.cpu_count(), "emulator": emulator,
               "training": training, "checkouts": checkouts,
               "share": {name: m / reference for name, m in medians.items()}}
    if args.against:
        summary["ratio"] = medians["this"] / medians["against"]
        print(f"ratio this / against: {summary['ratio']:.2f}")
    with open(os.path.join(out, "atari_pace.json"), "w") as handle:
        json.dump(summary, handle, indent=1)
    print(f"outputs: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
