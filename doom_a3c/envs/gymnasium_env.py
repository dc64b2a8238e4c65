"""A game exactly as it was trained (preprocessing, frame skip, action set, game variables) as a `gymnasium.Env`,
for a user's own tools: wrappers, `RecordVideo`, their evaluation code, another library.

It wraps the one environment interface of doom_a3c/envs/interface.py: `reset(seed, options) -> (observation, info)`,
`step(action) -> (observation, reward, terminated, truncated, info)`, `render()` as `rgb_array`; or `human`, the
game in a window as it plays, at its own speed (ViZDoom's engine window, ale-py's, gymnasium's HumanRendering). The
reward is the game's own score. What training treats otherwise is said in `info`, and the `Agent` of
doom_a3c/run/agent.py reads it:

* `info["life_lost"]` (Atari): a lost life ended the episode for learning only. The game goes on (the episode
  terminates at the real game end), and the agent forgets its LSTM state there, as it did in training.
* `info["episode_start"]` (reset's info): the agent forgets its LSTM state.

`terminated` is the end of the game as training saw it (a Doom scenario's episode timeout is a terminal unless the
run bootstrapped from it); `truncated` is a time limit training bootstrapped from (Atari's, CartPole's).

A Doom observation with game variables or sound, one NumPy record array inside doom_a3c, is a `spaces.Dict` here:
{"frame": uint8 frame, "variables": float32 vector}, and with --audio "audio": the step's sound, [samples, 2] int16
(left, right; doom_a3c/envs/doom/audio.py); `gym_observation` and `record_observation` convert between the two.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from doom_a3c.config import TrainConfig
from doom_a3c.envs.display import show_windows
from doom_a3c.envs.factory import make_environment
from doom_a3c.envs.interface import AUDIO, FRAME, VARIABLES, Environment, observation_dtype


def gym_observation(observation: np.ndarray) -> np.ndarray | dict[str, np.ndarray]:
    """doom_a3c's observation as the gymnasium env returns it: a fresh array, or the record's fields as a dict."""
    if observation.dtype.names is None:
        return np.array(observation)
    fields = {FRAME: np.array(observation[FRAME]), VARIABLES: np.array(observation[VARIABLES], np.float32)}
    if AUDIO in observation.dtype.names:
        fields[AUDIO] = np.array(observation[AUDIO])
    return fields


def record_observation(observation: np.ndarray | dict[str, np.ndarray]) -> np.ndarray:
    """The gymnasium env's observation back as doom_a3c's: a dict becomes the record array the network takes."""
    if not isinstance(observation, dict):
        return np.asarray(observation)
    frame = np.asarray(observation[FRAME])
    variables = np.asarray(observation.get(VARIABLES, ()), np.float32)  # a user's own dict may leave out none
    audio = np.asarray(observation[AUDIO], np.int16) if AUDIO in observation else None
    record = np.zeros((), observation_dtype(frame.shape, variables.shape[-1],
                                            audio_shape=None if audio is None else audio.shape))
    record[FRAME], record[VARIABLES] = frame, variables
    if audio is not None:
        record[AUDIO] = audio
    return record


def observation_space(game: Environment, observation: np.ndarray) -> spaces.Space:
    """The space of `game`'s observations, like this one (its first): a vector env's own bounds, uint8 frames,
    game variables as float32 (bounded by float32's range: gymnasium's checker warns of infinite bounds)."""
    if observation.dtype.names is not None:
        frame, variables = observation[FRAME], observation[VARIABLES]
        largest = np.finfo(np.float32).max
        fields = {FRAME: spaces.Box(0, 255, frame.shape, np.uint8),
                  VARIABLES: spaces.Box(-largest, largest, variables.shape, np.float32)}
        if AUDIO in observation.dtype.names:
            sample = np.iinfo(np.int16)
            fields[AUDIO] = spaces.Box(sample.min, sample.max, observation[AUDIO].shape, np.int16)
        return spaces.Dict(fields)
    if observation.dtype == np.uint8:
        return spaces.Box(0, 255, observation.shape, np.uint8)
    low, high = game.observation_bounds
    return spaces.Box(low, high, observation.shape, np.float32)


class GameEnv(gym.Env):
    """One game of a resolved config as a gymnasium env. `game` is doom_a3c's own environment underneath."""

    metadata = {"render_modes": ["rgb_array", "human"], "render_fps": 30}

    def __init__(self, config: TrainConfig, seed: int = 0, render_mode: str | None = "rgb_array"):
        if render_mode not in (None, "rgb_array", "human"):
            raise ValueError(f"render_mode must be 'rgb_array', 'human' or None, got {render_mode!r}")
        self.config = config
        self.render_mode = render_mode
        if render_mode == "human":
            show_windows()
        self.game: Environment = make_environment(config, seed=seed,
                                                  window="agent" if render_mode == "human" else None)
        try:
            first = self.game.reset()  # the only sure source of the observation's shape and fields
        except BaseException:
            self.game.close()
            raise
        self.metadata = {**self.metadata, "render_fps": round(1.0 / self.game.seconds_per_step)}
        self.observation_space = observation_space(self.game, first)
        self.action_space = spaces.Discrete(self.game.num_actions)
        self.action_names: list[str] = list(self.game.action_names)
        self._closed = False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """A new episode; with `seed`, the game's episodes start again from that seed (the same seed, the same
        episode). Returns (observation, {"episode_start": True})."""
        super().reset(seed=seed)
        if seed is not None:
            self.game.reseed(seed)
        return gym_observation(self.game.reset()), {"episode_start": True}

    def step(self, action):
        step = self.game.step(int(action))
        terminated = step.game_over and not step.truncated
        info = {"life_lost": bool(step.done and not step.game_over)}
        if step.match is not None:  # a deathmatch's last step: the match's frags, deaths, frags a minute, place
            info["match"] = step.match
        return gym_observation(step.observation), step.reward, bool(terminated), bool(step.truncated), info

    def render(self) -> np.ndarray | None:
        """The screen a person sees, in colour at full resolution, [H, W, 3] uint8 (None with render_mode None, and
        with `human`, whose window shows it already; `game.screen()` has it then)."""
        if self.render_mode != "rgb_array":
            return None
        return np.array(self.game.screen())

    def close(self) -> None:
        if not self._closed:  # gymnasium allows close() twice; an engine does not
            self._closed = True
            self.game.close()
