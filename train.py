#!/usr/bin/env python
"""Train an A3C agent on any of three kinds of environment: `python train.py --scenario basic.wad` (ViZDoom),
`--scenario ALE/Pong-v5` (Atari, any ALE id) or `--scenario CartPole-v1` (gymnasium, vector observations)."""
import sys


def main() -> int:
    from doom_a3c.config import ConfigError, TrainConfig, build_parser, config_from_args, explicit_fields

    args = build_parser(__doc__).parse_args()
    base = None
    if getattr(args, "resume", False):
        from doom_a3c.checkpoint import CheckpointError, read_checkpoint_identity, resolve_prefix

        model_dir = getattr(args, "model_dir", TrainConfig.model_dir)
        try:
            base, _, _ = read_checkpoint_identity(resolve_prefix(model_dir))
        except CheckpointError as error:
            print(f"error: cannot resume: {error}", file=sys.stderr)
            return 2
    config = config_from_args(args, base)
    from doom_a3c.trainer import train

    try:
        config.validate()
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return train(config, explicit_fields(args))


if __name__ == "__main__":
    sys.exit(main())
