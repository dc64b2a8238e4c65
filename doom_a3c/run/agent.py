"""A trained checkpoint as an agent: `load_agent` for Python users, `make_env` for its game. The games are built
from the config saved in the checkpoint, never from a preset: a checkpoint plays as it was trained.
"""
from __future__ import annotations

import dataclasses

from typing import NamedTuple

import numpy as np

from doom_a3c.algo.model.actor_critic import ActorCritic
from doom_a3c.config import TrainConfig
from doom_a3c.envs.factory import make_environment
from doom_a3c.envs.gymnasium_env import GameEnv, record_observation
from doom_a3c.envs.interface import EnvSpec, network_inputs, spec_of
from doom_a3c.errors import CheckpointError
from doom_a3c.modes.build import build_network
from doom_a3c.quiet_import import tf
from doom_a3c.run.saved_config import upgrade_saved_config
from doom_a3c.runtime.checkpoint import read_checkpoint, resolve_prefix, restore

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
    # --enemy-coef's head and labels are for learning only: playing needs neither (the head's saved weights stay
    # unread, a partial restore).
    config = dataclasses.replace(upgrade_saved_config(saved.config, prefix), enemy_coef=0.0)
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


def make_env(config: TrainConfig, seed: int = 0, render_mode: str | None = "rgb_array") -> GameEnv:
    """A gymnasium env of `config`'s game, exactly as a run with this config trains on it. A config made in Python
    (`TrainConfig(scenario="ALE/Pong-v5")`) is first completed as `train` would complete it (ConfigError for a bad
    value); a checkpoint's config (`load_agent(...).config`) is used as it is."""
    from doom_a3c.run.resolve import resolve_python_config

    return GameEnv(config if config.is_resolved() else resolve_python_config(config), seed, render_mode)
