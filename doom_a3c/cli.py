"""The two commands, `doom-a3c-train` / `python train.py` and `doom-a3c-play` / `python play.py`: parse the
flags, run, return the exit code. A user error is one line on stderr and exit code 2."""
from __future__ import annotations

import argparse
import os
from typing import Sequence

from doom_a3c.envs.display import display_problem

TRAIN_DESCRIPTION = """Train an A3C agent on any of four kinds of environment: `--scenario basic.wad` (ViZDoom),
`--scenario ALE/Pong-v5` (Atari, any ALE id), `--scenario VizdoomBasic-v1` (gymnasium, image observations; your own
after `--env-module MODULE`) or `--scenario CartPole-v1` (gymnasium, vector observations)."""
PLAY_DESCRIPTION = """Watch a trained agent: `--model models/last.ckpt --out /tmp/result` (videos and
results.json; add `--window` to watch it live, at the game's own speed); play a multiplayer match of checkpoints:
`--model A.ckpt --opponent B.ckpt --out DIR` (each agent in its own engine, `--episodes` matches); play a match
against them yourself: `--model A.ckpt --human --out DIR`; or export its acting step: `--model models/last.ckpt
--export DIR` (a TensorFlow SavedModel, and a TFLite file where the conversion works)."""
MATCH_FLAGS = ("bots", "match_minutes", "scenario")


def train_main(argv: Sequence[str] | None = None) -> int:
    from doom_a3c.config import build_parser, given_values
    from doom_a3c.run.training import train_from_flags

    return train_from_flags(given_values(build_parser(TRAIN_DESCRIPTION).parse_args(argv)))


def play_parser() -> argparse.ArgumentParser:
    from doom_a3c.config import OneLineErrorParser
    from doom_a3c.run.recording import VIDEO_FORMATS

    parser = OneLineErrorParser(description=PLAY_DESCRIPTION, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", required=True, action="append", metavar="CKPT",
                        help="checkpoint prefix (models/last.ckpt) or a run folder; in a match (--human, "
                             "--opponent) repeat it for more agents")
    parser.add_argument("--out", help="folder for the videos and results.json (needed unless --export)")
    parser.add_argument("--episodes", type=int, default=argparse.SUPPRESS,
                        help="episodes to play, matches with --opponent (default 3; with --human 1)")
    parser.add_argument("--greedy", action="store_true", help="take the most likely action instead of sampling")
    parser.add_argument("--seed", type=int, default=0, help="random seed for the game and the action sampling")
    parser.add_argument("--video", choices=VIDEO_FORMATS, default="gif",
                        help="videos of the episodes: GIF, MP4 (H.264) or both; ViZDoom's show every game tic")
    parser.add_argument("--window", action="store_true",
                        help="show the episodes in a window as the agent plays them, at the game's own speed "
                             "(ViZDoom: 35 tics a second); videos and results.json as without it; needs a display")
    parser.add_argument("--export", metavar="DIR",
                        help="instead of playing, write the acting step to DIR as a TensorFlow SavedModel "
                             "(DIR/saved_model) and, where the conversion works, DIR/policy.tflite")
    match = parser.add_argument_group("matches", "multiplayer matches between checkpoints of a multiplayer map (cig)")
    # No defaults shown or set (SUPPRESS): a flag given without --opponent is an error, and the help says the default.
    match.add_argument("--opponent", action="append", default=argparse.SUPPRESS, metavar="CKPT",
                       help="a checkpoint that plays against --model, in an engine of its own with its own config; "
                            "repeat for more players")
    match.add_argument("--human", action="store_true",
                       help="play the match yourself: you host it in a window (keyboard and mouse) at the game's "
                            "own speed, and every --model and --opponent joins it; needs a display")
    match.add_argument("--bots", type=int, default=argparse.SUPPRESS,
                       help="bots the host adds to each match (default 0)")
    match.add_argument("--match-minutes", type=float, default=argparse.SUPPRESS,
                       help="each match's time limit in minutes (default: the map's +timelimit, cig's 10; the "
                            "map's .cfg episode timeout, cig's 12 minutes, still ends it)")
    match.add_argument("--scenario", default=argparse.SUPPRESS,
                       help="the map of the matches, a multiplayer scenario (default: --model's own)")
    return parser


def checkpoint_exists(path: str) -> bool:
    """A checkpoint prefix, its .index file or a run folder is there (read later, after TensorFlow's import)."""
    path = path[: -len(".index")] if path.endswith(".index") else path
    return os.path.isdir(path) or os.path.exists(path + ".index")


def play_main(argv: Sequence[str] | None = None) -> int:
    parser = play_parser()
    args = parser.parse_args(argv)
    if args.export is None and args.out is None:
        parser.error("--out is required (or --export DIR)")
    args.episodes = getattr(args, "episodes", 1 if args.human else 3)
    if args.episodes <= 0:
        parser.error(f"--episodes must be > 0, got {args.episodes}")
    for flag in ("opponent", *MATCH_FLAGS):
        if not hasattr(args, flag):
            setattr(args, flag, None)
    check_windows(parser, args)
    models, args.model = args.model, args.model[0]
    if args.opponent or args.human:
        players = [("--model", path) for path in models] + [("--opponent", path) for path in args.opponent or []]
        args.opponent = models[1:] + (args.opponent or [])  # a repeated --model joins as an --opponent does
        return match_main(parser, args, players)
    if len(models) > 1:
        parser.error(f"--model given {len(models)} times: several checkpoints play together in a match only "
                     f"(add --human to play against them, or --opponent)")
    given = [flag for flag in MATCH_FLAGS if getattr(args, flag) is not None]
    if given:
        parser.error(f"--{given[0].replace('_', '-')} needs --opponent or --human (it sets up a match)")
    from doom_a3c.run.playback import main

    return main(args.model, args.out, args.episodes, args.greedy, args.seed, args.video, args.export, args.window)


def check_windows(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--window and --human: the flags they go with, and a display to open the window on, before TensorFlow's
    import or any engine."""
    for flag, given in (("--window", args.window), ("--human", args.human)):
        if not given:
            continue
        if args.export is not None:
            parser.error(f"--export writes the acting step: it plays nothing, and takes no {flag}")
        problem = display_problem()
        if problem is not None:
            parser.error(f"{flag}: {problem}")
    if args.window and args.opponent and not args.human:
        parser.error("--window shows single-player episodes; to play in a match yourself, add --human")


def match_main(parser: argparse.ArgumentParser, args: argparse.Namespace, players: list[tuple[str, str]]) -> int:
    """play.py --opponent or --human: bad flags and missing checkpoints reported before TensorFlow is imported.
    `players`: each checkpoint with the flag that gave it."""
    if args.export is not None:
        parser.error("--export writes one agent's acting step: it takes no --opponent")
    if args.bots is not None and args.bots < 0:
        parser.error(f"--bots must be >= 0, got {args.bots}")
    if args.match_minutes is not None and not args.match_minutes > 0:
        parser.error(f"--match-minutes must be > 0, got {args.match_minutes}")
    for flag, path in players:
        if not checkpoint_exists(path):
            parser.error(f"{flag}: no checkpoint at {path} (expected {path}.index or a run folder)")
    from doom_a3c.run.match import main

    return main(args.model, args.opponent, args.out, args.episodes, args.bots or 0, args.match_minutes, args.scenario,
                args.greedy, args.seed, args.video, person=args.human)


def train_command() -> None:
    """The `doom-a3c-train` console script."""
    raise SystemExit(train_main())


def play_command() -> None:
    """The `doom-a3c-play` console script."""
    raise SystemExit(play_main())
