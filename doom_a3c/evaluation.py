"""Play a trained checkpoint: GIFs of every episode and a results.json summary."""
from __future__ import annotations

import json
import os
import sys
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from doom_a3c.checkpoint import (CheckpointError, atomic_write_text, ensure_writable_dir, read_checkpoint_identity,
                                 resolve_prefix, restore)
from doom_a3c.config import ConfigError
from doom_a3c.envs import OBSERVATION_SHAPE, make_environment
from doom_a3c.network import ActorCritic
from doom_a3c.recording import DOOM_TICS_PER_SECOND, write_gif
from doom_a3c.scenarios import resolve_scenario


class EpisodeSummary(NamedTuple):
    reward: float
    length: int
    gif: str


def play(model: str, out: str, episodes: int = 3, greedy: bool = False, seed: int = 0) -> list[EpisodeSummary]:
    prefix = resolve_prefix(model)
    config, num_actions, counters = read_checkpoint_identity(prefix)
    ensure_writable_dir(out, "--out")
    env = make_environment(config, seed=seed + 10_000)
    if env.num_actions != num_actions:
        raise CheckpointError(f"{prefix} has {num_actions} actions but {config.scenario} now has {env.num_actions}")
    net = ActorCritic(num_actions, config.lstm_size, name="global", frame_norm=config.frame_norm).build_variables(OBSERVATION_SHAPE)
    restore(tf.train.Checkpoint(model=net), prefix, partial=True)
    step = tf.function(net.step)
    rng = np.random.default_rng(seed)
    frame_skip = config.frame_skip or resolve_scenario(config.scenario, config.model_dir).frame_skip
    summaries = []
    for index in range(episodes):
        observation = env.reset()
        frames = [env.screen().copy()]
        state, starts = net.initial_state(1), tf.ones([1])
        total, length, done = 0.0, 0, False
        while not done:
            net_out = step(observation[None], state, starts)
            state, starts = net_out.state, tf.zeros([1])
            probs = tf.nn.softmax(net_out.logits[0]).numpy().astype(np.float64)
            action = int(np.argmax(probs)) if greedy else int(rng.choice(len(probs), p=probs / probs.sum()))
            result = env.step(action)
            total, length, done = total + result.reward, length + 1, result.done
            observation = result.observation
            if not done:
                frames.append(env.screen().copy())
        gif = write_gif(os.path.join(out, f"episode_{index + 1:03d}.gif"), frames, frame_skip / DOOM_TICS_PER_SECOND)
        summaries.append(EpisodeSummary(total, length, gif))
    env.close()
    rewards = [s.reward for s in summaries]
    results = {
        "checkpoint": prefix, "scenario": config.scenario, "trained_env_steps": counters["env_steps"],
        "greedy": greedy, "episodes": [s._asdict() for s in summaries],
        "mean_reward": float(np.mean(rewards)), "std_reward": float(np.std(rewards)),
        "mean_length": float(np.mean([s.length for s in summaries])),
    }
    atomic_write_text(os.path.join(out, "results.json"), json.dumps(results, indent=2) + "\n")
    return summaries


def main(model: str, out: str, episodes: int, greedy: bool, seed: int) -> int:
    try:
        if episodes <= 0:
            raise ConfigError(f"--episodes must be > 0, got {episodes}")
        summaries = play(model, out, episodes, greedy, seed)
    except (ConfigError, CheckpointError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    rewards = np.array([s.reward for s in summaries])
    for i, s in enumerate(summaries, 1):
        print(f"episode {i}: reward {s.reward:.1f}, {s.length} steps -> {s.gif}")
    print(f"mean reward {rewards.mean():.1f} +- {rewards.std():.1f} over {len(rewards)} episodes; "
          f"results in {os.path.join(out, 'results.json')}")
    return 0
