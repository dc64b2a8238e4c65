#!/usr/bin/env python
"""Does a checkpoint's network see its game? The torso's features (the dense layer's units, before any LSTM) on
frames of random play in the checkpoint's own game: the share of units never active on them, and how much an active
unit's output moves from frame to frame against its mean. A torso whose features are the same on every frame is
blind: its policy and value cannot depend on the screen, and the policy gradient has nothing to work with
(docs/defaults/atari-defaults.md#why-the-defaults-fail-pong).

    python benchmarks/tools/torso_probe.py CHECKPOINT [CHECKPOINT ...] [--frames 128] [--warmup 272] [--seed 1]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from doom_a3c.errors import CheckpointError, ConfigError, one_line


def feature_spread(features: np.ndarray) -> dict[str, float]:
    """features [frames, units] -> the share of units never above 0, and over the others their mean output and the
    median of (std over frames / |mean|): the spread, near 0 for a blind torso."""
    active = features.max(axis=0) > 0
    if not active.any():
        return {"never_active": 1.0, "mean": 0.0, "spread": 0.0}
    means, stds = features.mean(axis=0)[active], features.std(axis=0)[active]
    return {"never_active": float(1.0 - active.mean()), "mean": float(means.mean()),
            "spread": float(np.median(stds / np.maximum(np.abs(means), 1e-9)))}


def random_play_observations(agent, steps: int, seed: int) -> list:
    """The observations of `steps` uniformly random actions in the agent's own game (new games as they end)."""
    env = agent.make_env(seed=seed, render_mode=None)
    rng = np.random.default_rng(seed)
    try:
        observation, _ = env.reset(seed=seed)
        observations = []
        for _ in range(steps):
            observations.append(observation)
            observation, _, terminated, truncated, _ = env.step(int(rng.integers(agent.num_actions)))
            if terminated or truncated:
                observation, _ = env.reset()
        return observations
    finally:
        env.close()


def probe(path: str, frames: int, warmup: int, seed: int) -> dict[str, float]:
    """feature_spread of the checkpoint's torso on the last `frames` of `warmup + frames` random steps."""
    from doom_a3c.run.agent import load_agent

    agent = load_agent(path, seed=seed)
    observations = random_play_observations(agent, warmup + frames, seed)[-frames:]
    if isinstance(observations[0], dict):  # frames and game variables: the encoder takes both
        batch = tuple(np.stack([o[key] for o in observations]) for key in observations[0])
    else:
        batch = np.stack(observations)
    features = agent.net.encode(batch)[0].numpy()  # the actor's branch: the policy sees these
    return feature_spread(features)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+", help="checkpoint prefixes (models/last.ckpt) or run folders")
    parser.add_argument("--frames", type=int, default=128, help="frames the features are measured on")
    parser.add_argument("--warmup", type=int, default=272, help="random steps played before them (past the game's "
                        "first frames)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.frames < 2 or args.warmup < 0:
        print("error: --frames must be >= 2 and --warmup >= 0", file=sys.stderr)
        return 2
    print("checkpoint | units never active | mean output of the others | spread (median std / mean over frames)")
    for path in args.checkpoints:
        try:
            result = probe(path, args.frames, args.warmup, args.seed)
        except (CheckpointError, ConfigError, OSError) as error:
            print(f"error: {one_line(error)}", file=sys.stderr)
            return 2
        print(f"{path} | {result['never_active']:.2f} | {result['mean']:.3f} | {result['spread']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
