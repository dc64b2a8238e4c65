"""Gymnasium environments (Atari games, other image envs and small vector-observation tasks) behind the
environment interface of doom_a3c/environment.py, so every trainer runs them unchanged.

Three kinds are supported, all with a Discrete action space:

* "atari": Atari games from ale-py (`ALE/Pong-v5`, `BreakoutNoFrameskip-v4`, ...), preprocessed the
  DeepMind way into (84, 84, 1) uint8 grey frames by `AtariEnvironment`;
* "image": any other env that observes an image (a Box of HxWxC or HxW uint8) or a Dict of one image and
  vectors (ViZDoom's own gymnasium ids, `VizdoomDeadlyCorridor-v1`...), by `ImageEnvironment`: the image
  through the same `preprocess_frame` as Doom's, the vectors beside it as game variables;
* "vector": an env with a 1-D Box observation (`CartPole-v1`, `Acrobot-v1`, ...), observations as float32,
  by `VectorEnvironment`.

An id registered by a module of the user's (`--env-module MODULE`) is found once `import_env_module` has
imported it; ViZDoom's ids (`Vizdoom*`) import their module unasked, as vizdoom is a dependency anyway.

As everywhere, every reward reported here is the game's own, unclipped and unscaled; clipping or scaling
for learning is the worker's job, so logs and play.py show the true score.
"""
from __future__ import annotations

import difflib
import functools
import importlib
import os
import re
import sys
from typing import Any, NamedTuple

import cv2
import gymnasium as gym
import numpy as np
from gymnasium import spaces

from doom_a3c.config import ConfigError, TrainConfig, one_line
from doom_a3c.environment import Step, observation_dtype, preprocess_frame

# Rendering (CartPole's rgb_array) initialises pygame, whose display and audio set-up print an "error:"
# line on a machine without a desktop session; no env here opens a window or plays sound.
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

ATARI_ENTRY_POINT = "ale_py.env:AtariEnv"
ATARI_FRAME_SIZE = 84
ATARI_FRAMES_PER_SECOND = 60  # the console's NTSC frame rate
ATARI_EXAMPLES = ("ALE/Pong-v5", "ALE/Breakout-v5", "PongNoFrameskip-v4")
IMAGE_EXAMPLES = ("VizdoomDeadlyCorridor-v1", "VizdoomBasic-v1")
VECTOR_EXAMPLES = ("CartPole-v1", "Acrobot-v1")
SUPPORTED_KINDS = (f"Atari games (e.g. {', '.join(ATARI_EXAMPLES)}), envs observing an image or a Dict of one image "
                   f"and vectors (e.g. {', '.join(IMAGE_EXAMPLES)}; your own after --env-module MODULE) and envs "
                   f"with a 1-D Box observation (e.g. {', '.join(VECTOR_EXAMPLES)}), all with discrete actions")
# Ids whose registering module is imported without --env-module: a user of `--scenario VizdoomBasic-v1` expects
# it to work as `--scenario basic` does, vizdoom being installed with doom_a3c anyway.
ENV_MODULES_BY_PREFIX = {"Vizdoom": "vizdoom.gymnasium_wrapper"}
DEFAULT_RENDER_FPS = 30  # for GIFs of an env whose metadata names no render_fps


@functools.lru_cache(maxsize=None)
def _register_atari() -> None:
    try:
        import ale_py

        ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)  # no banner on stderr for every game
        gym.register_envs(ale_py)
    except ImportError:  # classic-control envs still work without ale-py
        pass


@functools.lru_cache(maxsize=None)
def import_env_module(module: str) -> None:
    """Import the module that registers a user's gymnasium ids (--env-module; "" imports nothing), from the
    current folder too, as `python -m` would (the doom-a3c-* commands do not put it on sys.path)."""
    if not module:
        return
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())  # last: it never shadows an installed module
    try:
        importlib.import_module(module)
    except Exception as error:  # ImportError, or whatever the module raised while it registered its envs
        raise ConfigError(f"--env-module {module}: cannot import it ({one_line(error)})") from None


def _register_envs(name: str = "") -> None:
    """ale-py's games, and the module that registers `name` when it is one of ENV_MODULES_BY_PREFIX's."""
    _register_atari()
    for prefix, module in ENV_MODULES_BY_PREFIX.items():
        if name.startswith(prefix):
            import_env_module(module)


def _registered_ids(name: str = "") -> list[str]:
    """All registered gymnasium ids, the Atari ones included when ale-py is installed (and ViZDoom's for a
    `name` of theirs)."""
    _register_envs(name)
    return list(gym.registry)


def registered_atari_ids() -> list[str]:
    """Every `ALE/<Game>-v5` id with image observations (the `-ram` ids are not registered under ALE/)."""
    return sorted(i for i in _registered_ids() if i.startswith("ALE/") and i.endswith("-v5"))


def is_gym_id(name: str) -> bool:
    """True for a registered gymnasium id ("ALE/Pong-v5", "PongNoFrameskip-v4", "CartPole-v1",
    "VizdoomBasic-v1", an id of an imported --env-module), False for ViZDoom scenario names ("basic",
    "basic.wad", "my.cfg")."""
    _register_envs(name)
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

    scored = sorted(((similarity(r), r) for r in _registered_ids(env_id)), key=lambda pair: -pair[0])
    matches = [registered for score, registered in scored[:3] if score >= 0.6]
    hint = f"did you mean {', '.join(repr(m) for m in matches)}? " if matches else ""
    return f"unknown gymnasium environment {env_id!r}; {hint}supported: {SUPPORTED_KINDS}"


def _spec(env_id: str) -> gym.envs.registration.EnvSpec:
    if not is_gym_id(env_id):
        raise ConfigError(_unknown_id_message(env_id))
    return gym.spec(env_id)


def _is_image_box(space: spaces.Space) -> bool:
    return isinstance(space, spaces.Box) and len(space.shape) in (2, 3)


@functools.lru_cache(maxsize=None)
def _observation_space(env_id: str) -> spaces.Space:
    """An env's observation space, from one env made and closed: its spec does not hold it (ViZDoom's games
    start their engine only on reset, so this is cheap for them)."""
    env = _make(env_id)
    try:
        return env.observation_space
    finally:
        env.close()


def gym_kind(env_id: str) -> str:
    """"atari" (an ale-py game), "image" (an image, or a Dict holding one) or "vector" for a registered id;
    ConfigError else. The same names as doom_a3c/scenarios.py's ATARI, IMAGE and VECTOR."""
    if _spec(env_id).entry_point == ATARI_ENTRY_POINT:
        return "atari"
    space = _observation_space(env_id)
    if _is_image_box(space) or (isinstance(space, spaces.Dict) and any(map(_is_image_box, space.spaces.values()))):
        return "image"
    return "vector"


def _make(env_id: str, **kwargs: Any) -> gym.Env:
    """gym.make, with a missing dependency (box2d, mujoco, ROMs...) reported as one ConfigError line."""
    try:
        return gym.make(env_id, **kwargs)
    except (gym.error.Error, ImportError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ConfigError(f"cannot create gymnasium environment {env_id!r}: {first_line}") from error


def _render_modes(env_id: str) -> list[str]:
    """The render modes an id's env class declares, read before making it (gymnasium warns of a mode it lacks)."""
    creator = _spec(env_id).entry_point
    try:
        if isinstance(creator, str):
            creator = gym.envs.registration.load_env_creator(creator)
    except (gym.error.Error, ImportError, AttributeError):  # _make reports it, when it makes the env
        return []
    return list(getattr(creator, "metadata", {}).get("render_modes") or [])


def _check_discrete_actions(env_id: str, action_space: spaces.Space) -> None:
    if isinstance(action_space, spaces.Box):
        raise ConfigError(f"{env_id} has a continuous action space; only discrete actions are supported. "
                          f"Supported: {SUPPORTED_KINDS}")
    if not isinstance(action_space, spaces.Discrete):
        raise ConfigError(f"{env_id} has a {type(action_space).__name__} action space, which the network cannot "
                          f"take; supported: {SUPPORTED_KINDS}")


def _leash_vizdoom_engine(env: gym.Env) -> None:
    """A ViZDoom game made through gymnasium (ViZDoom's own ids) starts its engine through engine_leash.sh as
    ours do, so that no engine outlives a killed trainer; it starts its engine on the first reset, after this."""
    vizdoom = sys.modules.get("vizdoom")  # imported already by whatever registered such an env
    game = getattr(env.unwrapped, "game", None)
    if vizdoom is not None and isinstance(game, vizdoom.DoomGame):
        from doom_a3c.doom_env import leash_engine

        leash_engine(game, vizdoom)


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


class _GymGame(_SeededOnce):
    """What the non-Atari kinds share: one gymnasium env with a Discrete action space, seeded on its first
    reset only (seeding every reset would replay the same game), each action repeated `frame_skip` times (1:
    the env's own frame skip alone), its rewards summed. The env's own time limit ends the game without a
    terminal state: game_over and truncated, and learning bootstraps from the last observation's value."""

    num_actions: int
    action_names: list[str]
    observation_shape: tuple[int, ...]
    seconds_per_step: float

    def __init__(self, env_id: str, seed: int, frame_skip: int = 1):
        if _spec(env_id).entry_point == ATARI_ENTRY_POINT:
            raise ConfigError(f"{env_id} is an Atari game; build it with AtariEnvironment")
        if frame_skip < 1:
            raise ConfigError(f"frame skip must be >= 1, got {frame_skip}")
        self.renders = "rgb_array" in _render_modes(env_id)
        self._env = _make(env_id, **({"render_mode": "rgb_array"} if self.renders else {}))
        try:
            _check_discrete_actions(env_id, self._env.action_space)
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

    def __init__(self, env_id: str, seed: int):
        super().__init__(env_id, seed)
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
        frame = np.asarray(self._env.render(), dtype=np.uint8)
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
    if _is_image_box(space):
        return ImageLayout(None, (), (), _check_image(env_id, space))
    entries = space.spaces if isinstance(space, spaces.Dict) else {}
    images = [key for key, entry in entries.items() if _is_image_box(entry)]
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
    channels with `color`. The Dict's vectors travel beside it as the game variables of a record observation
    (environment.py), in `variable_names`' order, as the env reports them: the network standardises them by
    running statistics (--normalize-variables, on for them by default). GIFs show the env's rgb_array
    rendering, or, for an env that cannot render, its own image.
    """

    kind = "image"
    observation_dtype = np.uint8

    def __init__(self, env_id: str, seed: int, frame_size: int = ATARI_FRAME_SIZE, color: bool = False,
                 crop: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0), frame_skip: int = 1):
        super().__init__(env_id, seed, frame_skip)
        try:
            self._layout = image_layout(env_id, self._env.observation_space)
        except ConfigError:
            self._env.close()
            raise
        self.variable_names = list(self._layout.variable_names)
        self.observation_shape = (frame_size, frame_size, 3 if color else 1)
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
        frame = preprocess_frame(self._last_image, self._crop, self.observation_shape[0], self._color)
        if self._record is None:
            return frame
        record = np.zeros((), self._record)
        record["frame"] = frame
        record["variables"] = np.concatenate([np.asarray(observation[key], np.float32).ravel()
                                              for key in self._layout.vector_keys])
        return record

    def screen(self) -> np.ndarray:
        """The env's rgb_array rendering, else its last image, as [H, W, 3] uint8, for GIFs."""
        frame = self._env.render() if self.renders else None
        if not (isinstance(frame, np.ndarray) and frame.ndim == 3 and frame.shape[2] == 3):
            frame = self._last_image if self._last_image is not None else np.zeros((*self.observation_shape[:2], 3))
        if frame.ndim == 2:
            frame = cv2.cvtColor(np.asarray(frame, np.uint8), cv2.COLOR_GRAY2RGB)
        return np.asarray(frame, dtype=np.uint8)


GymEnvironment = AtariEnvironment | ImageEnvironment | VectorEnvironment


def _build(kind: str, env_id: str, seed: int, config: TrainConfig) -> GymEnvironment:
    """One game of `kind` ("atari", "image", "vector"); frame skip and size apply to Atari and image envs,
    colour and crop to image envs."""
    if kind == "atari":
        return AtariEnvironment(env_id, seed, frame_skip=config.frame_skip, frame_size=config.frame_size)
    if kind == "image":
        return ImageEnvironment(env_id, seed, frame_size=config.frame_size, color=bool(config.color),
                                crop=tuple(config.crop or (0.0, 0.0, 0.0, 0.0)), frame_skip=config.frame_skip)
    return VectorEnvironment(env_id, seed)


def make_gym_environment(config: TrainConfig, seed: int) -> GymEnvironment:
    """The environment a resolved config's gymnasium id names, its --env-module imported first (a game process
    or Ray worker may not have imported it yet)."""
    import_env_module(config.env_module)
    kind = config.env_kind if config.env_kind in ("atari", "image", "vector") else gym_kind(config.scenario_path)
    return _build(kind, config.scenario_path, seed, config)


class GymFacts(NamedTuple):
    """What resolve.py fills in from one game of a gymnasium id."""

    kind: str  # "atari", "image" or "vector"
    action_names: list[str]
    variable_names: list[str]  # an image env's Dict vectors, element by element ([] for the others)


def describe_gym_env(config: TrainConfig) -> GymFacts:
    """One game of `config.scenario` built with the config's values (its --env-module imported first): the only
    sure check that it can be trained here (a missing ROM, continuous actions, an observation the network
    cannot take...)."""
    import_env_module(config.env_module)
    kind = gym_kind(config.scenario)
    env = _build(kind, config.scenario, 0, config)
    try:
        return GymFacts(kind, list(env.action_names), list(getattr(env, "variable_names", [])))
    finally:
        env.close()
