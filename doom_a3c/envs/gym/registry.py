"""Which gymnasium ids the project runs, and as which kind: Atari games, other image envs and small
vector-observation tasks, each behind the environment interface of doom_a3c/envs/interface.py, so every trainer
runs them unchanged.

Three kinds are supported, all with a Discrete action space:

* "atari": Atari games from ale-py (`ALE/Pong-v5`, `BreakoutNoFrameskip-v4`, ...), preprocessed the
  DeepMind way into (84, 84, 1) uint8 grey frames by `AtariEnvironment` (atari.py);
* "image": any other env that observes an image (a Box of HxWxC or HxW uint8) or a Dict of one image and
  vectors (ViZDoom's own gymnasium ids, `VizdoomDeadlyCorridor-v1`...), by `ImageEnvironment` (games.py): the image
  through the same `preprocess_frame` as Doom's, the vectors beside it as game variables;
* "vector": an env with a 1-D Box observation (`CartPole-v1`, `Acrobot-v1`, ...), observations as float32,
  by `VectorEnvironment` (games.py).

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
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from doom_a3c.errors import ConfigError, one_line

# Rendering (CartPole's rgb_array) initialises pygame, whose display and audio set-up print an "error:"
# line on a machine without a desktop session. A game shown in a window (play.py --window, --human) takes the video
# driver back first (doom_a3c/envs/display.py's show_windows), and draws in software (below).
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")


def draw_sdl_windows_in_software() -> None:
    """For a window SDL opens in this process (ale-py's, pygame's): drawn without OpenGL. SDL's OpenGL path loads
    Mesa's software driver (llvmpipe, on a machine without a GPU), whose LLVM symbols resolve into TensorFlow's own
    copy of LLVM and crash the process at the window's first frame. A person's own settings are kept; ViZDoom's
    engines are processes of their own, and keep SDL's defaults."""
    os.environ.setdefault("SDL_RENDER_DRIVER", "software")
    os.environ.setdefault("SDL_FRAMEBUFFER_ACCELERATION", "0")


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


def registered_spec(env_id: str) -> gym.envs.registration.EnvSpec:
    if not is_gym_id(env_id):
        raise ConfigError(_unknown_id_message(env_id))
    return gym.spec(env_id)


def is_image_box(space: spaces.Space) -> bool:
    return isinstance(space, spaces.Box) and len(space.shape) in (2, 3)


@functools.lru_cache(maxsize=None)
def _observation_space(env_id: str) -> spaces.Space:
    """An env's observation space, from one env made and closed: its spec does not hold it (ViZDoom's games
    start their engine only on reset, so this is cheap for them)."""
    env = gym_make(env_id)
    try:
        return env.observation_space
    finally:
        env.close()


def gym_kind(env_id: str) -> str:
    """"atari" (an ale-py game), "image" (an image, or a Dict holding one) or "vector" for a registered id;
    ConfigError else. The same names as doom_a3c/run/presets.py's ATARI, IMAGE and VECTOR."""
    if registered_spec(env_id).entry_point == ATARI_ENTRY_POINT:
        return "atari"
    space = _observation_space(env_id)
    if is_image_box(space) or (isinstance(space, spaces.Dict) and any(map(is_image_box, space.spaces.values()))):
        return "image"
    return "vector"


def gym_make(env_id: str, **kwargs: Any) -> gym.Env:
    """gym.make, with a missing dependency (box2d, mujoco, ROMs...) reported as one ConfigError line."""
    try:
        return gym.make(env_id, **kwargs)
    except (gym.error.Error, ImportError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ConfigError(f"cannot create gymnasium environment {env_id!r}: {first_line}") from error


def render_modes(env_id: str) -> list[str]:
    """The render modes an id's env class declares, read before making it (gymnasium warns of a mode it lacks)."""
    creator = registered_spec(env_id).entry_point
    try:
        if isinstance(creator, str):
            creator = gym.envs.registration.load_env_creator(creator)
    except (gym.error.Error, ImportError, AttributeError):  # gym_make reports it, when it makes the env
        return []
    return list(getattr(creator, "metadata", {}).get("render_modes") or [])


def check_discrete_actions(env_id: str, action_space: spaces.Space) -> None:
    if isinstance(action_space, spaces.Box):
        raise ConfigError(f"{env_id} has a continuous action space; only discrete actions are supported. "
                          f"Supported: {SUPPORTED_KINDS}")
    if not isinstance(action_space, spaces.Discrete):
        raise ConfigError(f"{env_id} has a {type(action_space).__name__} action space, which the network cannot "
                          f"take; supported: {SUPPORTED_KINDS}")
