#!/usr/bin/env python
"""The peer to measure against: Stable-Baselines3 PPO on ViZDoom's own gymnasium basic env, as ViZDoom's
example trains it (examples/python/learning_stable_baselines3.py: frame skip 4, rewards x 0.01, SB3's
default PPO with 128-step rollouts), with 8 envs and 60x80 grey frames.

    python benchmarks/peer_sb3.py --seed 0 --minutes 5 --out /tmp/peer [--target-reward 80]

It writes progress.csv in train.py's format (one row per episode: wall_s, env_steps, episode, worker, reward,
length) so that benchmarks/learn_basic.py reads both the same way; `learn_basic.py --peer-python PY` runs it
right after each of our runs, and reports the ratios. It needs PyTorch and Stable-Baselines3,
which are not this project's dependencies: install them in a separate environment, e.g.
    python -m venv /tmp/peer && /tmp/peer/bin/pip install stable-baselines3 vizdoom==1.3.2 gymnasium==1.4.0 opencv-python-headless
This file imports nothing from doom_a3c (no TensorFlow there).
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from collections import deque

import numpy as np

FIELDS = ["wall_s", "env_steps", "episode", "worker", "reward", "length"]  # doom_a3c.run.summaries.CSV_FIELDS


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--minutes", type=float, default=5.0, help="wall-time budget")
    parser.add_argument("--out", required=True, help="folder for progress.csv")
    parser.add_argument("--envs", type=int, default=8)
    parser.add_argument("--env-id", default="VizdoomBasic-v1")
    parser.add_argument("--algo", default="ppo", choices=["ppo", "a2c"],
                        help="ppo: the peer of the basic.wad comparison; a2c: SB3's synchronous A2C with its defaults "
                             "(5-step rollouts)")
    parser.add_argument("--target-reward", type=float, default=None, help="stop once mean-100 reaches this")
    return parser.parse_args()


def make_env_factory(env_id: str, seed: int):
    import cv2
    import gymnasium
    import vizdoom.gymnasium_wrapper  # noqa: F401 - registers the Vizdoom* ids

    class GreyScreen(gymnasium.ObservationWrapper):
        """The dict observation -> the screen alone, grey, 60x80 (the peer's configuration in the basic.wad
        comparison)."""

        def __init__(self, env):
            super().__init__(env)
            self.observation_space = gymnasium.spaces.Box(0, 255, (60, 80, 1), np.uint8)

        def observation(self, observation):
            grey = cv2.cvtColor(observation["screen"], cv2.COLOR_RGB2GRAY)
            return cv2.resize(grey, (80, 60), interpolation=cv2.INTER_AREA)[:, :, None]

    def make(rank: int):
        def build():
            env = gymnasium.make(env_id, frame_skip=4)
            env = gymnasium.wrappers.RecordEpisodeStatistics(env)  # the game's own score, before scaling
            env = GreyScreen(env)
            env = gymnasium.wrappers.TransformReward(env, lambda r: r * 0.01)
            env.reset(seed=seed * 1000 + rank)
            return env
        return build

    return make


def main() -> int:
    args = parse_args()
    try:
        import torch
        from stable_baselines3 import A2C, PPO
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.vec_env import DummyVecEnv
    except ImportError as error:
        print(f"error: the peer needs PyTorch and Stable-Baselines3 ({error}); see this file's docstring",
              file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(args.seed)
    make = make_env_factory(args.env_id, args.seed)
    envs = DummyVecEnv([make(i) for i in range(args.envs)])  # SB3's default for make_vec_env
    if args.algo == "ppo":
        model = PPO("CnnPolicy", envs, n_steps=128, seed=args.seed, verbose=0)
    else:
        model = A2C("CnnPolicy", envs, seed=args.seed, verbose=0)

    class EpisodeLog(BaseCallback):
        """One progress.csv row per finished episode; stops at the time budget or the target."""

        def __init__(self, writer, handle, start: float):
            super().__init__()
            self.writer, self.handle, self.start = writer, handle, start
            self.episodes = 0
            self.recent = deque(maxlen=100)

        def _on_step(self) -> bool:
            now = time.time() - self.start
            for worker, info in enumerate(self.locals["infos"]):
                episode = info.get("episode")
                if episode is None:
                    continue
                self.episodes += 1
                self.recent.append(float(episode["r"]))
                self.writer.writerow([f"{now:.3f}", self.num_timesteps, self.episodes, worker,
                                      float(episode["r"]), int(episode["l"])])
            self.handle.flush()
            reached = (args.target_reward is not None and len(self.recent) == 100
                       and np.mean(self.recent) >= args.target_reward)
            return now < args.minutes * 60 and not reached

    with open(os.path.join(args.out, "progress.csv"), "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(FIELDS)
        callback = EpisodeLog(writer, handle, time.time())
        model.learn(total_timesteps=10**9, callback=callback)
    envs.close()
    print(f"peer: {callback.num_timesteps} env steps, {callback.episodes} episodes, mean-100 "
          f"{np.mean(callback.recent) if callback.recent else float('nan'):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
