"""Gymnasium envs other than Atari behind the environment interface: image envs (a Box image, or a Dict of one
image and vectors) and vector envs (a 1-D Box), each seeded once.
"""
from __future__ import annotations

import sys
from typing import Any, NamedTuple

import cv2
import gymnasium as gym
import numpy as np
from gymnasium import spaces

from doom_a3c.envs.gym.registry import (
    ATARI_ENTRY_POINT,
    ATARI_FRAME_SIZE,
    SUPPORTED_KINDS,
    check_discrete_actions,
    draw_sdl_windows_in_software,
    is_image_box,
    gym_make,
    render_modes,
    registered_spec,
)
from doom_a3c.envs.interface import Step, observation_dtype, preprocess_frame
from doom_a3c.errors import ConfigError

DEFAULT_RENDER_FPS = 30  # for GIFs of an env whose metadata names no render_fps


def _leash_vizdoom_engine(env: gym.Env) -> None:
    """A ViZDoom game made through gymnasium (ViZDoom's own ids) starts its engine through engine_leash.sh as
    ours do, so that no engine outlives a killed trainer; it starts its engine on the first reset, after this."""
    vizdoom = sys.modules.get("vizdoom")  # imported already by whatever registered such an env
    game = getattr(env.unwrapped, "game", None)
    if vizdoom is not None and isinstance(game, vizdoom.DoomGame):
        from doom_a3c.envs.engine import leash_engine

        leash_engine(game, vizdoom)


class SeededOnce:
    """A gymnasium env seeded at its first reset only: seeding every reset would replay the same game."""

    _env: gym.Env

    def reseed(self, seed: int) -> None:
        """The next reset() seeds the gymnasium env with `seed`; the resets after it go on from there."""
        self._seed = seed
        self._env.action_space.seed(seed)
        self._seeded = False


class _GymGame(SeededOnce):
    """What the non-Atari kinds share: one gymnasium env with a Discrete action space, seeded on its first
    reset only (seeding every reset would replay the same game), each action repeated `frame_skip` times (1:
    the env's own frame skip alone), its rewards summed. The env's own time limit ends the game without a
    terminal state: game_over and truncated, and learning bootstraps from the last observation's value. With
    `window` the game is shown as it plays: its rgb_array frames through gymnasium's HumanRendering (a pygame
    window at the env's render_fps), or, for an env without them, its own human render mode."""

    num_actions: int
    action_names: list[str]
    observation_shape: tuple[int, ...]
    seconds_per_step: float

    def __init__(self, env_id: str, seed: int, frame_skip: int = 1, window: bool = False):
        if registered_spec(env_id).entry_point == ATARI_ENTRY_POINT:
            raise ConfigError(f"{env_id} is an Atari game; build it with AtariEnvironment")
        if frame_skip < 1:
            raise ConfigError(f"frame skip must be >= 1, got {frame_skip}")
        modes = render_modes(env_id)
        self.renders = "rgb_array" in modes
        if window and not self.renders and "human" not in modes:
            raise ConfigError(f"{env_id} has neither a human nor an rgb_array render mode: no window can show it")
        if window:
            draw_sdl_windows_in_software()
        self._env = gym_make(env_id, **({"render_mode": "rgb_array"} if self.renders else
                                        {"render_mode": "human"} if window else {}))
        self._frames = self._env  # what screen() renders: the rgb_array env, also under a window
        if window and self.renders:
            # gymnasium's human rendering of the rgb_array frames: a pygame window, paced at the env's render_fps.
            self._env = gym.wrappers.HumanRendering(self._env)
        try:
            check_discrete_actions(env_id, self._env.action_space)
        except ConfigError:
            self._env.close()
            raise
        _leash_vizdoom_engine(self._env)
        self.num_actions = int(self._env.action_space.n)
        self.action_names = [f"ACTION_{i}" for i in range(self.num_actions)]
        frames_per_second = float(self._env.metadata.get("render_fps") or DEFAULT_RENDER_FPS)
        self.seconds_per_step = frame_skip / frames_per_second  # GIFs play at the game's speed
        self._frame_skip = frame_skip
        self._first_action = int(self._env.action_space.start)  # Discrete(n, start=k) counts from k
        self.reseed(seed)

    def _observe(self, observation: Any) -> np.ndarray:
        """The env's observation as the network takes it."""
        raise NotImplementedError

    def reset(self) -> np.ndarray:
        seed = None if self._seeded else self._seed
        self._seeded = True
        observation, _ = self._env.reset(seed=seed)
        return self._observe(observation)

    def step(self, action: int) -> Step:
        reward = 0.0
        for _ in range(self._frame_skip):
            observation, step_reward, terminated, truncated, _ = self._env.step(self._first_action + int(action))
            reward += float(step_reward)
            if terminated or truncated:
                break
        return Step(self._observe(observation), reward, bool(terminated), bool(terminated or truncated),
                    truncated=bool(truncated and not terminated))

    def close(self) -> None:
        self._env.close()


class VectorEnvironment(_GymGame):
    """A gymnasium env with a 1-D Box observation (as float32) and a Discrete action space, e.g. CartPole-v1;
    one env step per agent step (no frame skip)."""

    kind = "vector"
    observation_dtype = np.float32

    def __init__(self, env_id: str, seed: int, window: bool = False):
        super().__init__(env_id, seed, window=window)
        observation_space = self._env.observation_space
        try:
            if not (isinstance(observation_space, spaces.Box) and len(observation_space.shape) == 1):
                raise ConfigError(f"{env_id} observes {observation_space}, which the network cannot take; "
                                  f"supported: {SUPPORTED_KINDS}")
            if not self.renders:
                raise ConfigError(f"{env_id} cannot render rgb_array frames, which GIFs need")
        except ConfigError:
            self._env.close()
            raise
        self.observation_shape = tuple(observation_space.shape)
        # The env's own bounds, for the gymnasium env that doom_a3c.make_env returns (float32, as observed here).
        self.observation_bounds = (observation_space.low.astype(np.float32), observation_space.high.astype(np.float32))

    def _observe(self, observation: Any) -> np.ndarray:
        return np.asarray(observation, dtype=np.float32)

    def screen(self) -> np.ndarray:
        """The env's rendering of its current state at half size ((200, 300, 3) for CartPole), uint8, for GIFs:
        a full-size 500-step GIF took 9 s to encode in the coordinator."""
        frame = np.asarray(self._frames.render(), dtype=np.uint8)
        return cv2.resize(frame, (frame.shape[1] // 2, frame.shape[0] // 2), interpolation=cv2.INTER_AREA)


class ImageLayout(NamedTuple):
    """Where an image env's observation keeps its image and its vectors."""

    image_key: str | None  # the Dict entry that holds the image; None: the observation is the image itself
    vector_keys: tuple[str, ...]  # the Dict's 1-D Box entries, in the Dict's order
    variable_names: tuple[str, ...]  # one per vector element: "gamevariables[0]", ...
    unit_floats: bool  # a float image in [0, 1], scaled to uint8 (else uint8 already)


def _check_image(env_id: str, box: spaces.Box) -> bool:
    """ConfigError unless the conv torso can take this image; True for floats in [0, 1]."""
    if len(box.shape) == 3 and box.shape[2] not in (1, 3):
        raise ConfigError(f"{env_id} observes an image of shape {box.shape}: supported are HxW or HxWxC with C 1 "
                          f"(grey) or 3 (RGB), channels last")
    if box.dtype == np.uint8:
        return False
    if np.issubdtype(box.dtype, np.floating) and np.all(box.low == 0) and np.all(box.high == 1):
        return True
    raise ConfigError(f"{env_id} observes a {box.dtype} image in [{np.min(box.low)}, {np.max(box.high)}]: supported "
                      f"are uint8 images, or floats bounded by [0, 1] (scaled to uint8)")


def image_layout(env_id: str, space: spaces.Space) -> ImageLayout:
    """The layout of an image env's observation space: a Box image, or a Dict of exactly one image and any
    1-D Box vectors. ConfigError (one line) for anything else."""
    if is_image_box(space):
        return ImageLayout(None, (), (), _check_image(env_id, space))
    entries = space.spaces if isinstance(space, spaces.Dict) else {}
    images = [key for key, entry in entries.items() if is_image_box(entry)]
    vectors = tuple(key for key, entry in entries.items() if isinstance(entry, spaces.Box) and len(entry.shape) == 1)
    if len(images) != 1 or len(images) + len(vectors) != len(entries):
        raise ConfigError(f"{env_id} observes {space}, which the network cannot take: an image env's Dict must hold "
                          f"one image and 1-D Box vectors only (ViZDoom: no depth, labels or automap buffers)")
    names = tuple(f"{key}[{i}]" for key in vectors for i in range(entries[key].shape[0]))
    return ImageLayout(images[0], vectors, names, _check_image(env_id, entries[images[0]]))


class ImageEnvironment(_GymGame):
    """A gymnasium env that observes an image (HxWxC or HxW uint8, or floats in [0, 1]), or a Dict of one image
    and vectors (ViZDoom's gymnasium ids: 'screen' and 'gamevariables'), with a Discrete action space.

    The image goes through `preprocess_frame` as a Doom screen does: (frame_size, frame_size, 1) grey, or 3
    channels with `color`, `frame_width` wide where it is set. The Dict's vectors travel beside it as the game variables of a record observation
    (doom_a3c/envs/interface.py), in `variable_names`' order, as the env reports them: the network standardises them by
    running statistics (--normalize-variables, on for them by default). GIFs show the env's rgb_array
    rendering, or, for an env that cannot render, its own image.
    """

    kind = "image"
    observation_dtype = np.uint8

    def __init__(self, env_id: str, seed: int, frame_size: int = ATARI_FRAME_SIZE, color: bool = False,
                 crop: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0), frame_skip: int = 1, frame_width: int = 0,
                 window: bool = False):
        super().__init__(env_id, seed, frame_skip, window)
        try:
            self._layout = image_layout(env_id, self._env.observation_space)
        except ConfigError:
            self._env.close()
            raise
        self.variable_names = list(self._layout.variable_names)
        self.observation_shape = (frame_size, frame_width or frame_size, 3 if color else 1)
        self._color = color
        self._crop = tuple(crop)
        self._record = observation_dtype(self.observation_shape, len(self.variable_names)) \
            if self.variable_names else None
        self._last_image: np.ndarray | None = None

    def _image(self, observation: Any) -> np.ndarray:
        """The observation's image as an (H, W) grey or (H, W, 3) RGB uint8 screen, as preprocess_frame takes it."""
        image = np.asarray(observation if self._layout.image_key is None else observation[self._layout.image_key])
        if self._layout.unit_floats:
            image = np.rint(np.clip(image, 0.0, 1.0) * 255.0).astype(np.uint8)
        if image.ndim == 3 and image.shape[2] == 1:
            image = image[:, :, 0]
        if self._color and image.ndim == 2:
            image = cv2.cvtColor(image, cv2.COLOR_GRAY2RGB)
        return image

    def _observe(self, observation: Any) -> np.ndarray:
        self._last_image = self._image(observation)
        frame = preprocess_frame(self._last_image, self._crop, self.observation_shape[0], self._color,
                                 width=self.observation_shape[1])
        if self._record is None:
            return frame
        record = np.zeros((), self._record)
        record["frame"] = frame
        record["variables"] = np.concatenate([np.asarray(observation[key], np.float32).ravel()
                                              for key in self._layout.vector_keys])
        return record

    def screen(self) -> np.ndarray:
        """The env's rgb_array rendering, else its last image, as [H, W, 3] uint8, for GIFs."""
        frame = self._frames.render() if self.renders else None
        if not (isinstance(frame, np.ndarray) and frame.ndim == 3 and frame.shape[2] == 3):
            frame = self._last_image if self._last_image is not None else np.zeros((*self.observation_shape[:2], 3))
        if frame.ndim == 2:
            frame = cv2.cvtColor(np.asarray(frame, np.uint8), cv2.COLOR_GRAY2RGB)
        return np.asarray(frame, dtype=np.uint8)
