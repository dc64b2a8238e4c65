"""A gymnasium id's game built from a resolved config (Atari, image or vector), and the facts a config
needs from it (actions, variables) before a run starts.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from doom_a3c.config import BACKGROUND_STEPS, TrainConfig
from doom_a3c.envs.gym.atari import AtariEnvironment
from doom_a3c.envs.gym.games import ImageEnvironment, VectorEnvironment
from doom_a3c.envs.gym.registry import gym_kind, import_env_module

GymEnvironment = AtariEnvironment | ImageEnvironment | VectorEnvironment


def _build(kind: str, env_id: str, seed: int, config: TrainConfig, window: bool = False) -> GymEnvironment:
    """One game of `kind` ("atari", "image", "vector"); frame skip and size apply to Atari and image envs,
    colour and crop to image envs; `window`: shown in a window as it plays."""
    if kind == "atari":
        return AtariEnvironment(env_id, seed, frame_skip=config.frame_skip, frame_size=config.frame_size,
                                vector_env_rules=bool(config.ale_vector), window=window)
    if kind == "image":
        return ImageEnvironment(env_id, seed, frame_size=config.frame_size, color=bool(config.color),
                                crop=tuple(config.crop or (0.0, 0.0, 0.0, 0.0)), frame_skip=config.frame_skip,
                                frame_width=config.frame_width, window=window)
    return VectorEnvironment(env_id, seed, window=window)


def make_gym_environment(config: TrainConfig, seed: int, window: bool = False) -> GymEnvironment:
    """The environment a resolved config's gymnasium id names, its --env-module imported first (a game process
    or Ray worker may not have imported it yet); `window`: shown in a window as it plays, at the game's speed."""
    import_env_module(config.env_module)
    kind = config.env_kind if config.env_kind in ("atari", "image", "vector") else gym_kind(config.scenario_path)
    return _build(kind, config.scenario_path, seed, config, window)


class GymFacts(NamedTuple):
    """What doom_a3c/run/resolve.py fills in from one game of a gymnasium id."""

    kind: str  # "atari", "image" or "vector"
    action_names: list[str]
    variable_names: list[str]  # an image env's Dict vectors, element by element ([] for the others)
    background: int | None  # the most common grey of an image's first frame (--frame-norm background), else None
    background_image: list | None  # each pixel's median grey over random play (--frame-norm pixel_background)


def background_grey(frame: np.ndarray) -> int:
    """The most common value of a uint8 frame: its background (the lowest, where two are as common)."""
    return int(np.bincount(np.asarray(frame, np.uint8).ravel(), minlength=256).argmax())


def _grey_frame(observation: np.ndarray) -> np.ndarray:
    """An observation's grey frame [H, W]: an image env's record gives its frame, a one-channel frame its channel."""
    frame = observation["frame"] if observation.dtype.names else observation
    return frame[..., 0] if frame.ndim == 3 else frame


def pixel_backgrounds(env: GymEnvironment, steps: int, seed: int) -> list[list[int]]:
    """Each pixel's background: its median grey over the frames of `steps` uniformly random actions (new games as
    they end). What stays put (a field, a wall, a score's box) becomes 0 once subtracted; what moves stands out."""
    rng = np.random.default_rng(seed)
    frames = [_grey_frame(env.reset())]
    while len(frames) < steps:
        step = env.step(int(rng.integers(len(env.action_names))))
        frames.append(_grey_frame(env.reset() if step.game_over else step.observation))
    return np.rint(np.median(np.stack(frames), axis=0)).astype(int).tolist()


def describe_gym_env(config: TrainConfig) -> GymFacts:
    """One game of `config.scenario` built with the config's values (its --env-module imported first): the only
    sure check that it can be trained here (a missing ROM, continuous actions, an observation the network
    cannot take...)."""
    import_env_module(config.env_module)
    kind = gym_kind(config.scenario)
    env = _build(kind, config.scenario, 0, config)
    try:
        background, image = None, None
        if kind in ("atari", "image") and config.frame_norm == "background":  # a reset only where it is read
            background = background_grey(_grey_frame(env.reset()))
        if kind in ("atari", "image") and config.frame_norm == "pixel_background" and not config.color:
            image = pixel_backgrounds(env, BACKGROUND_STEPS, config.seed)
        return GymFacts(kind, list(env.action_names), list(getattr(env, "variable_names", [])), background, image)
    finally:
        env.close()
