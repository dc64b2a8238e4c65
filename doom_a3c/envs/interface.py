"""The one environment interface that Doom, Atari and vector envs share, and the pixel preprocessing.

Every environment declares what the rest of the code needs (`num_actions`, `action_names`,
`observation_shape`, `seconds_per_step`) and steps with one type, `Step`. An environment reports
the game's true reward; scaling and clipping for learning happen in the rollout, so the CSV,
TensorBoard and play.py always show what the game itself scored. Reward shaping (a preset's bonus
for changes of game variables) travels beside it in `Step.shaping` and reaches learning only.

An observation is one NumPy array per game: the frame (or vector) itself, or, for a Doom scenario
whose preset feeds game variables (or, with --audio, the game's sound) to the network, a record array with the
fields `frame`, `variables` and `audio`. Being one array, it stacks, concatenates and crosses process pipes the same way;
`network_inputs` splits it for the network.
"""
from __future__ import annotations

from typing import NamedTuple, Protocol

import cv2
import numpy as np


class Step(NamedTuple):
    observation: np.ndarray  # [*observation_shape]; once game_over only meaningful if truncated (the caller resets)
    reward: float  # the game's own reward for this step: unclipped, unscaled
    done: bool  # the learning terminal: do not bootstrap past it (an Atari life loss too)
    game_over: bool  # the real end of the game (a terminal or a time limit): only now does the caller reset()
    shaping: float = 0.0  # learning-only bonus from the preset's reward shaping; never reported as score
    # A time limit ended the game (game_over, not done): no terminal state, so learning bootstraps from the value
    # of `observation`, the last one, while the LSTM state still resets for the next game.
    truncated: bool = False
    # A deathmatch's report of the match (doom_a3c/envs/doom/shaping.py's MatchReport as a dict) on its last step;
    # None for every other step and game.
    match: dict | None = None


class EnvSpec(NamedTuple):
    """What an environment declares about itself (sent across processes as it is)."""

    num_actions: int
    observation_shape: tuple[int, ...]
    seconds_per_step: float  # game time per agent step: GIFs play at the game's own speed
    action_names: list[str]


class Environment(Protocol):
    """ViZDoom (doom_a3c/envs/doom/game.py), Atari and gymnasium vector envs (doom_a3c/envs/gym/)."""

    num_actions: int
    action_names: list[str]
    observation_shape: tuple[int, ...]
    seconds_per_step: float

    def reset(self) -> np.ndarray: ...

    def reseed(self, seed: int) -> None:
        """The next reset() starts the game's sequence of episodes from `seed`, as if built with it."""

    def step(self, action: int) -> Step: ...

    def screen(self) -> np.ndarray:
        """The current frame in colour at full resolution, [H, W, 3] uint8: what GIFs show a person."""

    def close(self) -> None: ...


def spec_of(env: Environment) -> EnvSpec:
    return EnvSpec(env.num_actions, tuple(env.observation_shape), float(env.seconds_per_step),
                   list(env.action_names))


FRAME, VARIABLES, AUDIO = "frame", "variables", "audio"  # a record's fields that the network takes
NETWORK_FIELDS = (FRAME, VARIABLES, AUDIO)
ENEMY = "enemy"  # a record's learning-only target (doom_a3c/envs/doom/labels.py); the network never sees it


def observation_dtype(frame_shape: tuple[int, ...], num_variables: int, enemy_target: bool = False,
                      audio_shape: tuple[int, int] | None = None) -> np.dtype:
    """The record of one Doom observation with game variables: the uint8 frame and the scaled variables; with
    `audio_shape`, the step's sound as ViZDoom's buffer holds it ([samples, 2] int16, left and right,
    doom_a3c/envs/doom/audio.py); with `enemy_target`, beside them whether an enemy is in view (1.0 or 0.0), for
    learning only."""
    fields = [(FRAME, np.uint8, frame_shape), (VARIABLES, np.float32, (num_variables,))]
    if audio_shape is not None:
        fields.append((AUDIO, np.int16, tuple(audio_shape)))
    return np.dtype(fields + [(ENEMY, np.float32, (1,))] if enemy_target else fields)


def with_frame_shape(record: np.dtype, frame_shape: tuple[int, ...]) -> np.dtype:
    """A record dtype whose frame has another shape (a stack of frames), every other field as it was."""
    return np.dtype([(name, record[name].base, frame_shape if name == FRAME else record[name].shape)
                     for name in record.names])


def enemy_targets(observations: np.ndarray) -> np.ndarray | None:
    """Observations [...] -> their enemy-in-view targets [...] float32, or None when they carry none."""
    if observations.dtype.names is None or ENEMY not in observations.dtype.names:
        return None
    return np.ascontiguousarray(observations[ENEMY][..., 0])


def network_inputs(observations: np.ndarray):
    """Observations [..., *obs] as the network takes them: the array itself, or for record observations a dict of
    the fields it takes ("frame", and "variables" and "audio" where the game gives them; contiguous copies:
    TensorFlow cannot take a strided field view). A record with nothing beside its frame but a learning target
    gives the frames alone."""
    if observations.dtype.names is None:
        return observations
    inputs = {name: np.ascontiguousarray(observations[name]) for name in NETWORK_FIELDS
              if name in observations.dtype.names and observations.dtype[name].shape != (0,)}
    return inputs[FRAME] if len(inputs) == 1 else inputs


def preprocess_frame(screen: np.ndarray, crop=(0.0, 0.0, 0.0, 0.0), size: int = 84,
                     color: bool = False, width: int = 0) -> np.ndarray:
    """RGB (H, W, 3) or grey (H, W) uint8 screen -> (size, size, 1) uint8 grey frame, or with `color` an
    RGB screen -> (size, size, 3) uint8 colour frame; `width` > 0 makes them (size, width, C).

    `crop` removes these fractions of the height (top, bottom) and width (left, right) first, so that
    small targets keep more pixels. Kept as uint8 (4x smaller rollouts); the network scales to [0, 1].
    """
    if any(crop):
        screen_height, screen_width = screen.shape[:2]
        top, bottom = round(crop[0] * screen_height), screen_height - round(crop[1] * screen_height)
        left, right = round(crop[2] * screen_width), screen_width - round(crop[3] * screen_width)
        screen = screen[top:bottom, left:right]
    target = (width or size, size)  # cv2's (width, height)
    if color:
        return cv2.resize(screen, target, interpolation=cv2.INTER_AREA)
    grey = cv2.cvtColor(screen, cv2.COLOR_RGB2GRAY) if screen.ndim == 3 else screen
    small = cv2.resize(grey, target, interpolation=cv2.INTER_AREA)
    return small[:, :, None]
