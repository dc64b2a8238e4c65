#!/usr/bin/env python
"""Train an A3C agent on any of three kinds of environment: `python train.py --scenario basic.wad` (ViZDoom),
`--scenario ALE/Pong-v5` (Atari, any ALE id) or `--scenario CartPole-v1` (gymnasium, vector observations)."""
import sys


def main() -> int:
    from doom_a3c.config import build_parser, given_values
    from doom_a3c.training import train_from_flags

    return train_from_flags(given_values(build_parser(__doc__).parse_args()))


if __name__ == "__main__":
    sys.exit(main())
