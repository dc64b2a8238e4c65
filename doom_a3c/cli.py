"""The two commands, `doom-a3c-train` / `python train.py` and `doom-a3c-play` / `python play.py`: parse the
flags, run, return the exit code. A user error is one line on stderr and exit code 2."""
from __future__ import annotations

import argparse
from typing import Sequence

TRAIN_DESCRIPTION = """Train an A3C agent on any of four kinds of environment: `--scenario basic.wad` (ViZDoom),
`--scenario ALE/Pong-v5` (Atari, any ALE id), `--scenario VizdoomBasic-v1` (gymnasium, image observations; your own
after `--env-module MODULE`) or `--scenario CartPole-v1` (gymnasium, vector observations)."""
PLAY_DESCRIPTION = """Watch a trained agent: `--model models/last.ckpt --out /tmp/result` (videos and
results.json), or export its acting step: `--model models/last.ckpt --export DIR` (a TensorFlow SavedModel,
and a TFLite file where the conversion works)."""


def train_main(argv: Sequence[str] | None = None) -> int:
    from doom_a3c.config import build_parser, given_values
    from doom_a3c.run.training import train_from_flags

    return train_from_flags(given_values(build_parser(TRAIN_DESCRIPTION).parse_args(argv)))


def play_parser() -> argparse.ArgumentParser:
    from doom_a3c.config import OneLineErrorParser
    from doom_a3c.run.recording import VIDEO_FORMATS

    parser = OneLineErrorParser(description=PLAY_DESCRIPTION, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", required=True, help="checkpoint prefix (models/last.ckpt) or a run folder")
    parser.add_argument("--out", help="folder for the videos and results.json (needed unless --export)")
    parser.add_argument("--episodes", type=int, default=3, help="episodes to play")
    parser.add_argument("--greedy", action="store_true", help="take the most likely action instead of sampling")
    parser.add_argument("--seed", type=int, default=0, help="random seed for the game and the action sampling")
    parser.add_argument("--video", choices=VIDEO_FORMATS, default="gif",
                        help="videos of the episodes: GIF, MP4 (H.264) or both; ViZDoom's show every game tic")
    parser.add_argument("--export", metavar="DIR",
                        help="instead of playing, write the acting step to DIR as a TensorFlow SavedModel "
                             "(DIR/saved_model) and, where the conversion works, DIR/policy.tflite")
    return parser


def play_main(argv: Sequence[str] | None = None) -> int:
    parser = play_parser()
    args = parser.parse_args(argv)
    if args.export is None and args.out is None:
        parser.error("--out is required (or --export DIR)")
    if args.episodes <= 0:
        parser.error(f"--episodes must be > 0, got {args.episodes}")
    from doom_a3c.run.playback import main

    return main(args.model, args.out, args.episodes, args.greedy, args.seed, args.video, args.export)


def train_command() -> None:
    """The `doom-a3c-train` console script."""
    raise SystemExit(train_main())


def play_command() -> None:
    """The `doom-a3c-play` console script."""
    raise SystemExit(play_main())
