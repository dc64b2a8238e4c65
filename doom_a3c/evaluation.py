"""A trained checkpoint as an agent: `load_agent` for Python users, and play.py's episodes (videos and a
results.json summary) on top of it. The games are built from the config saved in the checkpoint, never from a
preset: a checkpoint plays as it was trained."""
from __future__ import annotations

import json
import os
import sys
from typing import NamedTuple

import numpy as np

from doom_a3c.build import build_network
from doom_a3c.checkpoint import read_checkpoint, resolve_prefix, restore
from doom_a3c.config import ConfigError, TrainConfig
from doom_a3c.env_batch import make_environment
from doom_a3c.environment import EnvSpec, network_inputs, spec_of
from doom_a3c.gym_adapter import GameEnv, record_observation
from doom_a3c.network import ActorCritic
from doom_a3c.quiet_import import tf
from doom_a3c.recording import VIDEO_FORMATS, write_video
from doom_a3c.resolve import upgrade_saved_config
from doom_a3c.run_files import CheckpointError, atomic_write_text, ensure_writable_dir

PLAY_SEED_OFFSET = 10_000  # play's games are seeded apart from every training game


class PolicyOutput(NamedTuple):
    probabilities: np.ndarray  # [A] float64, the policy's action probabilities
    value: float  # the critic's estimate, in learning (scaled) reward units


class Agent:
    """A checkpoint's network acting in one game at a time; it keeps the LSTM state itself.

    `act(observation, info)` returns the action for an observation of `make_env()`'s gymnasium env; given the
    env's `info`, it forgets its LSTM state where training did (an episode start, an Atari life loss). Without
    `info`, call `reset()` at the start of each episode.
    """

    def __init__(self, net: ActorCritic, config: TrainConfig, spec: EnvSpec, prefix: str, trained_env_steps: int,
                 greedy: bool = False, seed: int = 0):
        self.net = net
        self.config = config
        self.spec = spec
        self.checkpoint = prefix
        self.trained_env_steps = trained_env_steps
        self.greedy = greedy
        self.seed = seed
        self._rng = np.random.default_rng(seed)
        self._step = tf.function(net.step)
        self.reset()

    @property
    def num_actions(self) -> int:
        return self.spec.num_actions

    def make_env(self, seed: int | None = None, render_mode: str | None = "rgb_array") -> GameEnv:
        """A gymnasium env of the game exactly as the checkpoint was trained on (frame skip, preprocessing, action
        set, game variables); seeded with `seed`, by default the agent's seed + 10,000."""
        return GameEnv(self.config, self.seed + PLAY_SEED_OFFSET if seed is None else seed, render_mode)

    def reset(self) -> None:
        """Forget the LSTM state: the next observation starts an episode."""
        self._state, self._starts = self.net.initial_state(1), tf.ones([1])

    def policy(self, observation: np.ndarray | dict[str, np.ndarray]) -> PolicyOutput:
        """One network step on `observation` (as the env returns it, no batch axis); advances the LSTM state."""
        out = self._step(network_inputs(record_observation(observation)[None]), self._state, self._starts)
        self._state, self._starts = out.state, tf.zeros([1])
        return PolicyOutput(tf.nn.softmax(out.logits[0]).numpy().astype(np.float64), float(out.values[0]))

    def choose(self, probabilities: np.ndarray) -> int:
        """The greedy or a sampled action for these probabilities."""
        if self.greedy:
            return int(np.argmax(probabilities))
        return int(self._rng.choice(len(probabilities), p=probabilities / probabilities.sum()))

    def act(self, observation: np.ndarray | dict[str, np.ndarray], info: dict | None = None) -> int:
        """The action for `observation`: the most likely one if greedy, else sampled from the policy. With the
        env's `info`, the LSTM state is first reset where training reset it (a new episode, a lost life)."""
        if info and (info.get("episode_start") or info.get("life_lost")):
            self.reset()
        return self.choose(self.policy(observation).probabilities)


def load_agent(path: str, greedy: bool = False, seed: int = 0) -> Agent:
    """The agent of a checkpoint prefix (models/last.ckpt) or run folder. CheckpointError when it is missing,
    corrupt or does not fit its games. Call from the main thread (Keras builds its layers there)."""
    prefix = resolve_prefix(path)
    saved = read_checkpoint(prefix)
    config = upgrade_saved_config(saved.config, prefix)
    env = make_environment(config, seed=seed + PLAY_SEED_OFFSET)  # the only sure source of the observation shape
    try:
        spec = spec_of(env)
    finally:
        env.close()
    if spec.num_actions != saved.num_actions:
        raise CheckpointError(f"{prefix} has {saved.num_actions} actions but its games have {spec.num_actions}")
    # float32 whatever precision trained it (--precision): the weights are float32 either way, and float32 runs on
    # every CPU and in the export.
    net = build_network(config, spec, name="global", precision="float32")
    restore(tf.train.Checkpoint(model=net), prefix, partial=True)
    return Agent(net, config, spec, prefix, int(saved.counters["env_steps"]), greedy, seed)


class EpisodeSummary(NamedTuple):
    reward: float
    length: int  # agent steps
    gif: str  # the first video written (the GIF unless --video mp4)
    videos: list[str]
    frames: int  # video frames: every game tic for ViZDoom, one per step otherwise


def play_episode(agent: Agent, env: GameEnv) -> tuple[float, int, list[np.ndarray]]:
    """One whole game: (reward, steps, the screens a person sees). ViZDoom games show every tic. An Atari life
    loss resets the LSTM (the agent reads it in `info`), as in training, and the game goes on."""
    tic_by_tic = hasattr(env.game, "record_tics")  # ViZDoom: a frame per tic, not per frame_skip tics
    if tic_by_tic:
        env.game.record_tics = True
    observation, info = env.reset()
    frames = [env.render()]
    total, length, game_over = 0.0, 0, False
    while not game_over:
        observation, reward, terminated, truncated, info = env.step(agent.act(observation, info))
        total, length, game_over = total + reward, length + 1, terminated or truncated
        if tic_by_tic:
            frames.extend(env.game.tic_screens)
        elif not game_over:
            frames.append(env.render())
    return total, length, frames


def seconds_per_frame(env: GameEnv) -> float:
    if hasattr(env.game, "record_tics"):
        from doom_a3c.doom_env import DOOM_TICS_PER_SECOND

        return 1.0 / DOOM_TICS_PER_SECOND
    return env.game.seconds_per_step


def play(model: str, out: str, episodes: int = 3, greedy: bool = False, seed: int = 0,
         video: str = "gif") -> list[EpisodeSummary]:
    """Play `episodes` games of a checkpoint; videos (`video`: gif, mp4 or both) and results.json in `out`."""
    if video not in VIDEO_FORMATS:
        raise ConfigError(f"--video must be one of {', '.join(VIDEO_FORMATS)}, got {video!r}")
    prefix = resolve_prefix(model)
    ensure_writable_dir(out, "--out")
    agent = load_agent(prefix, greedy, seed)
    env = agent.make_env()
    summaries = []
    try:
        for index in range(episodes):
            total, length, frames = play_episode(agent, env)
            paths = write_video(os.path.join(out, f"episode_{index + 1:03d}"), frames, seconds_per_frame(env), video)
            summaries.append(EpisodeSummary(total, length, paths[0], paths, len(frames)))
    finally:
        env.close()
    rewards = [s.reward for s in summaries]
    results = {
        "checkpoint": agent.checkpoint, "scenario": agent.config.scenario,
        "trained_env_steps": agent.trained_env_steps, "greedy": greedy,
        "episodes": [s._asdict() for s in summaries],
        "mean_reward": float(np.mean(rewards)), "std_reward": float(np.std(rewards)),
        "mean_length": float(np.mean([s.length for s in summaries])),
    }
    atomic_write_text(os.path.join(out, "results.json"), json.dumps(results, indent=2) + "\n")
    return summaries


def main(model: str, out: str, episodes: int, greedy: bool, seed: int, video: str = "gif",
         export: str | None = None) -> int:
    """play.py: play and record, or with `export` write the acting step as a SavedModel (and TFLite)."""
    try:
        if export is not None:
            from doom_a3c.export import export_policy

            exported = export_policy(load_agent(model, greedy, seed), export)
            print(f"SavedModel of the acting step in {exported.saved_model}")
            print(f"TFLite: {exported.tflite}" if exported.tflite else f"TFLite: not written ({exported.tflite_error})")
            return 0
        summaries = play(model, out, episodes, greedy, seed, video)
    except (ConfigError, CheckpointError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    rewards = np.array([s.reward for s in summaries])
    for i, s in enumerate(summaries, 1):
        print(f"episode {i}: reward {s.reward:.1f}, {s.length} steps -> {', '.join(s.videos)}")
    print(f"mean reward {rewards.mean():.1f} +- {rewards.std():.1f} over {len(rewards)} episodes; "
          f"results in {os.path.join(out, 'results.json')}")
    return 0
