"""Play a trained checkpoint: GIFs of every episode and a results.json summary. The games are built from the
config saved in the checkpoint, never from a preset: a checkpoint plays as it was trained."""
from __future__ import annotations

import json
import os
import sys
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from doom_a3c.build import build_network
from doom_a3c.checkpoint import CheckpointError, atomic_write_text, ensure_writable_dir, read_checkpoint, resolve_prefix, \
    restore
from doom_a3c.config import ConfigError
from doom_a3c.env_batch import make_environment
from doom_a3c.environment import network_inputs, spec_of
from doom_a3c.recording import write_gif
from doom_a3c.resolve import upgrade_saved_config


class EpisodeSummary(NamedTuple):
    reward: float
    length: int
    gif: str


def play(model: str, out: str, episodes: int = 3, greedy: bool = False, seed: int = 0) -> list[EpisodeSummary]:
    prefix = resolve_prefix(model)
    saved = read_checkpoint(prefix)
    config, counters = upgrade_saved_config(saved.config, prefix), saved.counters
    ensure_writable_dir(out, "--out")
    env = make_environment(config, seed=seed + 10_000)
    try:
        if env.num_actions != saved.num_actions:
            raise CheckpointError(f"{prefix} has {saved.num_actions} actions but its games have {env.num_actions}")
        net = build_network(config, spec_of(env), name="global")
        restore(tf.train.Checkpoint(model=net), prefix, partial=True)
    except CheckpointError:
        env.close()
        raise
    step = tf.function(net.step)
    rng = np.random.default_rng(seed)
    summaries = []
    for index in range(episodes):
        observation = env.reset()
        frames = [env.screen().copy()]
        state, starts = net.initial_state(1), tf.ones([1])
        total, length, game_over = 0.0, 0, False
        while not game_over:  # a whole game: an Atari life loss resets the LSTM, as in training, and goes on
            net_out = step(network_inputs(observation[None]), state, starts)
            state = net_out.state
            probs = tf.nn.softmax(net_out.logits[0]).numpy().astype(np.float64)
            action = int(np.argmax(probs)) if greedy else int(rng.choice(len(probs), p=probs / probs.sum()))
            result = env.step(action)
            total, length, game_over = total + result.reward, length + 1, result.game_over
            starts = tf.ones([1]) if result.done else tf.zeros([1])
            observation = result.observation
            if not game_over:
                frames.append(env.screen().copy())
        gif = write_gif(os.path.join(out, f"episode_{index + 1:03d}.gif"), frames, env.seconds_per_step)
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
