"""Gymnasium environments (Atari games and small vector-observation tasks) behind the environment
interface of doom_a3c/environment.py, so every trainer runs them unchanged.

Two kinds are supported:

* "image": Atari games from ale-py (`ALE/Pong-v5`, `BreakoutNoFrameskip-v4`, ...), preprocessed the
  DeepMind way into (84, 84, 1) uint8 grey frames by `AtariEnvironment`;
* "vector": any gymnasium env with a 1-D Box observation and a Discrete action space (`CartPole-v1`,
  `Acrobot-v1`, ...), observations as float32, by `VectorEnvironment`.

As everywhere, every reward reported here is the game's own, unclipped and unscaled; clipping or scaling
for learning is the worker's job, so logs and play.py show the true score.
"""
from __future__ import annotations

import difflib
import functools
import os
import re
from typing import Any

import cv2
import gymnasium as gym
import numpy as np
from gymnasium import spaces

from doom_a3c.config import ConfigError, TrainConfig
from doom_a3c.environment import Step

# Rendering (CartPole's rgb_array) initialises pygame, whose display and audio set-up print an "error:"
# line on a machine without a desktop session; no env here opens a window or plays sound.
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

ATARI_ENTRY_POINT = "ale_py.env:AtariEnv"
ATARI_FRAME_SIZE = 84
ATARI_FRAMES_PER_SECOND = 60  # the console's NTSC frame rate
ATARI_EXAMPLES = ("ALE/Pong-v5", "ALE/Breakout-v5", "PongNoFrameskip-v4")
VECTOR_EXAMPLES = ("CartPole-v1", "Acrobot-v1")
SUPPORTED_KINDS = (f"Atari image games (e.g. {', '.join(ATARI_EXAMPLES)}) and envs with a 1-D Box "
                   f"observation and discrete actions (e.g. {', '.join(VECTOR_EXAMPLES)})")


@functools.lru_cache(maxsize=None)
def _register_atari() -> None:
    try:
        import ale_py

        ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)  # no banner on stderr for every game
        gym.register_envs(ale_py)
    except ImportError:  # classic-control envs still work without ale-py
        pass


def _registered_ids() -> list[str]:
    """All registered gymnasium ids, the Atari ones included when ale-py is installed."""
    _register_atari()
    return list(gym.registry)


def registered_atari_ids() -> list[str]:
    """Every `ALE/<Game>-v5` id with image observations (the `-ram` ids are not registered under ALE/)."""
    return sorted(i for i in _registered_ids() if i.startswith("ALE/") and i.endswith("-v5"))


def is_gym_id(name: str) -> bool:
    """True for a registered gymnasium id ("ALE/Pong-v5", "PongNoFrameskip-v4", "CartPole-v1"), False for
    ViZDoom scenario names ("basic", "basic.wad", "my.cfg")."""
    _register_atari()
    return name in gym.registry


def looks_like_gym_id(name: str) -> bool:
    """True for names shaped like a gymnasium id ("Name-v3", "ALE/Name-v5"), registered or not, so that a
    misspelt id can get gymnasium's "did you mean" error instead of a missing-scenario one."""
    return is_gym_id(name) or re.fullmatch(r"([\w.-]+/)?[\w.-]+-v\d+", name) is not None


def _unknown_id_message(env_id: str) -> str:
    wanted = env_id.lower()

    def similarity(registered: str) -> float:
        # compare with and without the namespace, so "Pong-v5" finds "ALE/Pong-v5" first
        names = {registered.lower(), registered.lower().split("/")[-1]}
        return max(difflib.SequenceMatcher(None, wanted, name).ratio() for name in names)

    scored = sorted(((similarity(r), r) for r in _registered_ids()), key=lambda pair: -pair[0])
    matches = [registered for score, registered in scored[:3] if score >= 0.6]
    hint = f"did you mean {', '.join(repr(m) for m in matches)}? " if matches else ""
    return f"unknown gymnasium environment {env_id!r}; {hint}supported: {SUPPORTED_KINDS}"


def _spec(env_id: str) -> gym.envs.registration.EnvSpec:
    if not is_gym_id(env_id):
        raise ConfigError(_unknown_id_message(env_id))
    return gym.spec(env_id)


def gym_kind(env_id: str) -> str:
    """"image" (an Atari game) or "vector" for a registered id, without creating the env; ConfigError else."""
    return "image" if _spec(env_id).entry_point == ATARI_ENTRY_POINT else "vector"


def _make(env_id: str, **kwargs: Any) -> gym.Env:
    """gym.make, with a missing dependency (box2d, mujoco, ROMs...) reported as one ConfigError line."""
    try:
        return gym.make(env_id, **kwargs)
    except (gym.error.Error, ImportError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ConfigError(f"cannot create gymnasium environment {env_id!r}: {first_line}") from error


def _check_discrete_actions(env_id: str, action_space: spaces.Space) -> None:
    if isinstance(action_space, spaces.Box):
        raise ConfigError(f"{env_id} has a continuous action space; only discrete actions are supported. "
                          f"Supported: {SUPPORTED_KINDS}")
    if not isinstance(action_space, spaces.Discrete):
        raise ConfigError(f"{env_id} has a {type(action_space).__name__} action space, which the network cannot "
                          f"take; supported: {SUPPORTED_KINDS}")


class _SeededOnce:
    """A gymnasium env seeded at its first reset only: seeding every reset would replay the same game."""

    _env: gym.Env

    def reseed(self, seed: int) -> None:
        """The next reset() seeds the gymnasium env with `seed`; the resets after it go on from there."""
        self._seed = seed
        self._env.action_space.seed(seed)
        self._seeded = False


class AtariEnvironment(_SeededOnce):
    """An Atari game with the standard DeepMind preprocessing, built from gymnasium's own wrappers.

    * The ALE env is made with frameskip=1 and `gymnasium.wrappers.AtariPreprocessing` does the rest:
      up to `noop_max` random no-ops after each reset, repeating the action `frame_skip` frames and
      max-pooling the last two (Atari sprites flicker), 84x84 grey. Observations: (84, 84, 1) uint8.
    * Sticky actions are the env's own default: `ALE/*-v5` repeats the previous action with probability
      0.25 on every frame (Machado et al. 2018), the `*-v4` ids use 0. They are kept on purpose: they are
      the ALE's recommended source of stochasticity, so scores compare with v5 results, not with
      the deterministic-emulator numbers of the 2016 A3C paper.
    * Games whose actions start NOOP, FIRE get FIRE and then action 2 pressed after every reset and
      after every lost life, as baselines' `FireResetEnv` does; Breakout otherwise waits forever for a
      serve. This happens whether or not lives are terminal. The (almost always zero) rewards of those
      presses are added to the next step's reward, so the rewards summed over a game equal its score.
    * A lost life gives done=True, game_over=False when `life_loss_terminal` (learning treats it as the
      end of an episode, the game goes on without reset); the real end of the game gives
      done=game_over=True, the ALE's frame limit (108,000 frames) game_over and truncated (no terminal:
      learning bootstraps from the last frame's value).
    """

    kind = "image"
    observation_dtype = np.uint8

    def __init__(self, env_id: str, seed: int, frame_skip: int = 4, noop_max: int = 30,
                 life_loss_terminal: bool = True, frame_size: int = ATARI_FRAME_SIZE):
        spec = _spec(env_id)
        if spec.entry_point != ATARI_ENTRY_POINT:
            raise ConfigError(f"{env_id} is not an Atari (ale-py) game; e.g. {', '.join(ATARI_EXAMPLES)}")
        if spec.kwargs.get("obs_type", "rgb") != "rgb":
            raise ConfigError(f"{env_id} observes {spec.kwargs['obs_type']!r}; only the image (rgb) Atari "
                              f"games are supported, e.g. {', '.join(ATARI_EXAMPLES)}")
        if frame_skip < 1:
            raise ConfigError(f"frame skip must be >= 1 for Atari, got {frame_skip}")
        if noop_max < 0:
            raise ConfigError(f"noop_max must be >= 0, got {noop_max}")
        # The wrapper reads its grey frames from the ALE itself; the base env's own per-frame observation is
        # thrown away, and grey costs the emulator less than colour (GIFs read the colour screen directly).
        base = _make(env_id, frameskip=1, render_mode="rgb_array", obs_type="grayscale")
        self.action_names: list[str] = list(base.unwrapped.get_action_meanings())
        if self.action_names[0] != "NOOP":  # Backgammon, VideoCheckers: no action that does nothing
            noop_max = 0  # their random starts come from sticky actions alone
        self._env = gym.wrappers.AtariPreprocessing(
            base, noop_max=noop_max, frame_skip=frame_skip, screen_size=frame_size,
            terminal_on_life_loss=False, grayscale_obs=True, grayscale_newaxis=True, scale_obs=False)
        self._ale = base.unwrapped.ale
        self.observation_shape = (frame_size, frame_size, 1)
        self.seconds_per_step = frame_skip / ATARI_FRAMES_PER_SECOND  # GIFs play at the game's speed
        self.num_actions = len(self.action_names)
        self.life_loss_terminal = life_loss_terminal
        self.fires_on_reset = self.action_names[:2] == ["NOOP", "FIRE"] and self.num_actions >= 3
        self.reseed(seed)
        self._lives = 0
        self._carried_reward = 0.0  # rewards of FIRE presses, reported with the next step

    def _press_fire(self) -> tuple[np.ndarray, float, bool]:
        """FIRE then action 2 (baselines' FireResetEnv). Returns (observation, reward, game ended)."""
        reward = 0.0
        observation = None
        for action in (self.action_names.index("FIRE"), 2):
            observation, step_reward, terminated, truncated, _ = self._env.step(action)
            reward += float(step_reward)
            if terminated or truncated:
                return observation, reward, True
        return observation, reward, False

    def reset(self) -> np.ndarray:
        seed = None if self._seeded else self._seed  # seeding every reset would replay the same game
        self._seeded = True
        observation, _ = self._env.reset(seed=seed)
        self._carried_reward = 0.0
        while self.fires_on_reset:
            observation, reward, ended = self._press_fire()
            if not ended:
                self._carried_reward = reward
                break
            observation, _ = self._env.reset()  # a game that ended while serving: start again, as FireResetEnv does
        self._lives = self._ale.lives()
        return observation

    def step(self, action: int) -> Step:
        observation, step_reward, terminated, truncated, _ = self._env.step(int(action))
        reward = float(step_reward) + self._carried_reward
        self._carried_reward = 0.0
        if terminated or truncated:
            return Step(observation, reward, bool(terminated), True, truncated=not terminated)
        lives = self._ale.lives()
        life_lost = lives < self._lives
        self._lives = lives
        if life_lost and self.fires_on_reset:
            observation, fire_reward, ended = self._press_fire()
            self._lives = self._ale.lives()
            if ended:
                return Step(observation, reward + fire_reward, True, True)
            self._carried_reward = fire_reward
        return Step(observation, reward, life_lost and self.life_loss_terminal, False)

    def screen(self) -> np.ndarray:
        """The current emulator frame in colour at the original resolution (210, 160, 3) uint8, for GIFs."""
        return self._ale.getScreenRGB()

    def close(self) -> None:
        self._env.close()


class VectorEnvironment(_SeededOnce):
    """A gymnasium env with a 1-D Box observation (as float32) and a Discrete action space, e.g. CartPole-v1.

    The env's own time limit (CartPole-v1: 500 steps) ends the game without a terminal state: game_over and
    truncated, and learning bootstraps from the last observation's value.
    """

    kind = "vector"
    observation_dtype = np.float32

    def __init__(self, env_id: str, seed: int):
        spec = _spec(env_id)
        if spec.entry_point == ATARI_ENTRY_POINT:
            raise ConfigError(f"{env_id} is an Atari game; build it with AtariEnvironment")
        self._env = _make(env_id, render_mode="rgb_array")
        try:
            _check_discrete_actions(env_id, self._env.action_space)
            observation_space = self._env.observation_space
            if not (isinstance(observation_space, spaces.Box) and len(observation_space.shape) == 1):
                raise ConfigError(f"{env_id} observes {observation_space}, which the network cannot take; "
                                  f"supported: {SUPPORTED_KINDS}")
            if "rgb_array" not in self._env.metadata.get("render_modes", []):
                raise ConfigError(f"{env_id} cannot render rgb_array frames, which GIFs need")
        except ConfigError:
            self._env.close()
            raise
        self.observation_shape: tuple[int, ...] = tuple(observation_space.shape)
        # The env's own bounds, for the gymnasium env that doom_a3c.make_env returns (float32, as observed here).
        self.observation_bounds = (observation_space.low.astype(np.float32), observation_space.high.astype(np.float32))
        self.num_actions = int(self._env.action_space.n)
        self.action_names: list[str] = [f"ACTION_{i}" for i in range(self.num_actions)]
        self.seconds_per_step = 1.0 / float(self._env.metadata.get("render_fps") or 30)
        self._first_action = int(self._env.action_space.start)  # Discrete(n, start=k) counts from k
        self.reseed(seed)

    def reset(self) -> np.ndarray:
        seed = None if self._seeded else self._seed
        self._seeded = True
        observation, _ = self._env.reset(seed=seed)
        return np.asarray(observation, dtype=np.float32)

    def step(self, action: int) -> Step:
        observation, reward, terminated, truncated, _ = self._env.step(self._first_action + int(action))
        return Step(np.asarray(observation, dtype=np.float32), float(reward), bool(terminated),
                    bool(terminated or truncated), truncated=bool(truncated and not terminated))

    def screen(self) -> np.ndarray:
        """The env's rendering of its current state at half size ((200, 300, 3) for CartPole), uint8, for GIFs:
        a full-size 500-step GIF took 9 s to encode in the coordinator."""
        frame = np.asarray(self._env.render(), dtype=np.uint8)
        return cv2.resize(frame, (frame.shape[1] // 2, frame.shape[0] // 2), interpolation=cv2.INTER_AREA)

    def close(self) -> None:
        self._env.close()


def make_gym_environment(config: TrainConfig, seed: int) -> AtariEnvironment | VectorEnvironment:
    """The environment a resolved config's gymnasium id names (frame skip and frame size apply to Atari only)."""
    return _build(config.scenario_path, seed, config.frame_skip, config.frame_size)


def _build(env_id: str, seed: int, frame_skip: int, frame_size: int) -> AtariEnvironment | VectorEnvironment:
    if _spec(env_id).entry_point == ATARI_ENTRY_POINT:
        return AtariEnvironment(env_id, seed, frame_skip=frame_skip, frame_size=frame_size)
    return VectorEnvironment(env_id, seed)


def gym_action_names(env_id: str, frame_size: int = ATARI_FRAME_SIZE) -> list[str]:
    """The action names of a gymnasium id, by building one game (the only sure check that it can be
    trained here: a missing ROM, continuous actions, image observations that are not Atari's...)."""
    env = _build(env_id, seed=0, frame_skip=4, frame_size=frame_size)
    try:
        return list(env.action_names)
    finally:
        env.close()
