#!/usr/bin/env python
"""Watch a trained agent: `python play.py --model models/last.ckpt --out /tmp/result`."""
import argparse
import sys


def main() -> int:
    from doom_a3c.config import OneLineErrorParser

    parser = OneLineErrorParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", required=True, help="checkpoint prefix (models/last.ckpt) or a run folder")
    parser.add_argument("--out", required=True, help="folder for the GIFs and results.json")
    parser.add_argument("--episodes", type=int, default=3, help="episodes to play")
    parser.add_argument("--greedy", action="store_true", help="take the most likely action instead of sampling")
    parser.add_argument("--seed", type=int, default=0, help="random seed for the game and the action sampling")
    args = parser.parse_args()
    from doom_a3c.evaluation import main as play_main

    return play_main(args.model, args.out, args.episodes, args.greedy, args.seed)


if __name__ == "__main__":
    sys.exit(main())
