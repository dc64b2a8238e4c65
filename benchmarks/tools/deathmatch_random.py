#!/usr/bin/env python
"""What random actions score in a deathmatch map's matches: all of the preset's actions, and all but those that
fire, with and without bots. On cig every player spawns with a rocket launcher, and a rocket fired at a near wall
kills its firer (docs/defaults/presets.md#deathmatch-against-bots-cig).

    python benchmarks/tools/deathmatch_random.py [--scenario cig] [--minutes 1] [--bots 0 7] [--seed 3]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from doom_a3c.envs.factory import make_environment
from doom_a3c.run.resolve import resolve_new_run


def with_time_limit(game_args: str, minutes: float) -> str:
    """The host's arguments with +timelimit set to `minutes`."""
    words = game_args.split()
    if "+timelimit" in words:
        del words[words.index("+timelimit"):words.index("+timelimit") + 2]
    return " ".join(words + ["+timelimit", f"{minutes:g}"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="cig")
    parser.add_argument("--minutes", type=float, default=1.0, help="game minutes a match")
    parser.add_argument("--bots", type=int, nargs="+", default=[0, 7])
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    for bots in args.bots:
        config = resolve_new_run({"scenario": args.scenario, "model_dir": "unused", "bots": bots})
        config = resolve_new_run({"scenario": args.scenario, "model_dir": "unused", "bots": bots,
                                  "game_args": with_time_limit(config.game_args, args.minutes)})
        game = make_environment(config, args.seed)
        rng = np.random.default_rng(args.seed)
        try:
            for label, allowed in (("every action", range(len(config.actions))),
                                   ("no action that fires", [i for i, a in enumerate(config.actions)
                                                             if "ATTACK" not in a])):
                game.reset()
                while not (step := game.step(int(rng.choice(list(allowed))))).game_over:
                    pass
                print(f"{args.scenario}, {bots} bots, random over {label}: {step.match}")
        finally:
            game.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
