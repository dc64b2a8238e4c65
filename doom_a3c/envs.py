"""Environments behind one small interface, and the pixel preprocessing the network expects.

An environment here reports the game's true reward; scaling for learning happens in the worker,
so the CSV, TensorBoard and play.py always show what the game itself scored.
"""
from __future__ import annotations

from typing import NamedTuple, Protocol

import cv2
import numpy as np

from doom_a3c.config import ConfigError, TrainConfig
from doom_a3c.recording import DOOM_TICS_PER_SECOND
from doom_a3c.scenarios import ATARI, DOOM, Scenario, environment_kind, resolve_scenario

FRAME_SIZE = 84  # the seed's input; --frame-size (or a preset) can choose another
OBSERVATION_SHAPE = (FRAME_SIZE, FRAME_SIZE, 1)


def preprocess_frame(screen: np.ndarray, crop: tuple[float, float, float, float] = (0, 0, 0, 0),
                     size: int = FRAME_SIZE) -> np.ndarray:
    """RGB (H, W, 3) or grey (H, W) uint8 screen -> (size, size, 1) uint8 grey frame.

    `crop` removes these fractions of the height (top, bottom) and width (left, right) first, so that
    small targets keep more pixels. Kept as uint8 (4x smaller rollouts); the network scales to [0, 1].
    """
    if any(crop):
        height, width = screen.shape[:2]
        top, bottom = round(crop[0] * height), height - round(crop[1] * height)
        left, right = round(crop[2] * width), width - round(crop[3] * width)
        screen = screen[top:bottom, left:right]
    grey = cv2.cvtColor(screen, cv2.COLOR_RGB2GRAY) if screen.ndim == 3 else screen
    small = cv2.resize(grey, (size, size), interpolation=cv2.INTER_AREA)
    return small[:, :, None]


class StepResult(NamedTuple):
    observation: np.ndarray  # [84, 84, 1] uint8; meaningless once done
    reward: float  # the game's reward, unscaled
    done: bool

    @property
    def game_over(self) -> bool:
        """Doom has no lives: the learning terminal is the real end (gym_envs.GymStep tells them apart)."""
        return self.done


class Environment(Protocol):
    """ViZDoom (below), Atari and gymnasium vector envs (gym_envs.py). `step(...).done` ends an episode
    for learning (an Atari life loss too); `step(...).game_over` is the real end, where reset() follows."""

    num_actions: int
    action_names: list[str]

    def reset(self) -> np.ndarray: ...

    def step(self, action: int) -> StepResult: ...

    def screen(self) -> np.ndarray: ...

    def close(self) -> None: ...


def button_names(game) -> list[str]:
    """A DoomGame's available buttons by name ("MOVE_LEFT"), in the order make_action expects them."""
    return [str(b).split(".")[-1].split(":")[0] for b in game.get_available_buttons()]


def button_vector(buttons: list[str], held: list[str]) -> list[float]:
    """make_action's argument that holds down the buttons in `held`."""
    return [1.0 if b in held else 0.0 for b in buttons]


def check_screen_resolution(name: str):
    import vizdoom as vzd

    if not name.startswith("RES_") or not hasattr(vzd.ScreenResolution, name):
        raise ConfigError(f"unknown --screen-resolution {name!r}; e.g. RES_160X120, RES_320X240, RES_640X480")
    return getattr(vzd.ScreenResolution, name)


class DoomEnvironment:
    """One ViZDoom game, rendering RGB at the scenario's resolution, stepping `frame_skip` tics; the network
    sees (frame_size, frame_size, 1) grey frames."""

    def __init__(self, scenario: Scenario, frame_skip: int, resolution: str = "RES_160X120", seed: int = 0,
                 frame_size: int = FRAME_SIZE):
        import vizdoom as vzd

        self._vzd = vzd
        self._game = vzd.DoomGame()
        try:
            self._game.load_config(scenario.cfg_path)
        except Exception as error:  # ViZDoom raises its own exception types
            raise ConfigError(f"cannot load scenario config {scenario.cfg_path}: {error}") from error
        self._game.set_screen_resolution(check_screen_resolution(resolution))
        self._game.set_screen_format(vzd.ScreenFormat.RGB24)
        self._game.set_window_visible(False)
        self._game.set_mode(vzd.Mode.PLAYER)
        self._game.set_seed(seed % (2**31))
        if scenario.game_args:
            self._game.add_game_args(scenario.game_args)
        self._frag_reward = scenario.frag_reward
        if self._frag_reward:
            self._game.add_available_game_variable(vzd.GameVariable.FRAGCOUNT)
        self._bots = scenario.bots
        self._frags = 0.0
        try:
            self._game.init()
        except Exception as error:
            raise ConfigError(f"ViZDoom could not start {scenario.cfg_path}: {error}") from error
        buttons = button_names(self._game)
        combos = scenario.actions or [[b] for b in buttons if not b.endswith("_DELTA")]
        unknown = sorted({b for combo in combos for b in combo} - set(buttons))
        if unknown:
            raise ConfigError(f"preset for {scenario.name} uses buttons {unknown} that its cfg does not make "
                              f"available ({buttons})")
        self._actions = [button_vector(buttons, combo) for combo in combos]
        self.action_names = ["+".join(combo) for combo in combos]
        self.num_actions = len(self._actions)
        self._frame_skip = frame_skip
        self._crop = tuple(scenario.crop)
        self.observation_shape = (frame_size, frame_size, 1)
        self._last_screen: np.ndarray | None = None

    def _observe(self) -> np.ndarray:
        self._last_screen = self._game.get_state().screen_buffer
        return preprocess_frame(self._last_screen, self._crop, self.observation_shape[0])

    def reset(self) -> np.ndarray:
        self._game.new_episode()
        for _ in range(self._bots):
            self._game.send_game_command("addbot")
        self._frags = 0.0
        return self._observe()

    def step(self, action: int) -> StepResult:
        reward = self._game.make_action(self._actions[action], self._frame_skip)
        if self._frag_reward:
            frags = self._game.get_game_variable(self._vzd.GameVariable.FRAGCOUNT)
            reward += self._frag_reward * (frags - self._frags)
            self._frags = frags
        if self._game.is_episode_finished():
            return StepResult(np.zeros(self.observation_shape, np.uint8), float(reward), True)
        if self._game.is_player_dead():  # deathmatch maps: the episode goes on after a death
            self._game.respawn_player()
        return StepResult(self._observe(), float(reward), False)

    def screen(self) -> np.ndarray:
        """The last rendered frame at full resolution, RGB: what GIFs show a person."""
        assert self._last_screen is not None, "reset() first"
        return self._last_screen

    def close(self) -> None:
        self._game.close()


def make_environment(config: TrainConfig, seed: int) -> Environment:
    """The environment `--scenario` names, whichever of the three kinds it is."""
    if environment_kind(config.scenario) != DOOM:
        from doom_a3c.gym_envs import make_gym_environment

        return make_gym_environment(config.scenario, seed, frame_skip=config.frame_skip, frame_size=config.frame_size)
    scenario = resolve_scenario(config.scenario, cache_dir=config.model_dir)
    frame_skip = config.frame_skip or scenario.frame_skip
    return DoomEnvironment(scenario, frame_skip, config.screen_resolution, seed, config.frame_size)


def check_environment(config: TrainConfig) -> None:
    """Raise ConfigError now for anything make_environment would refuse (before a run moves files)."""
    if environment_kind(config.scenario) == DOOM:
        resolve_scenario(config.scenario, config.model_dir)
        check_screen_resolution(config.screen_resolution)
    else:  # creating one game is the only sure check (missing ROM, continuous actions, image obs...)
        make_environment(config, seed=0).close()


def observation_shape_of(env: Environment) -> tuple[int, ...]:
    return tuple(getattr(env, "observation_shape", OBSERVATION_SHAPE))


def seconds_per_step(config: TrainConfig, env: Environment) -> float:
    """Game time of one agent step, so that GIFs play at the game's own speed."""
    if hasattr(env, "seconds_per_step"):
        return env.seconds_per_step
    frame_skip = config.frame_skip or resolve_scenario(config.scenario, config.model_dir).frame_skip
    return frame_skip / DOOM_TICS_PER_SECOND


def reward_scale_for(config: TrainConfig) -> float:
    if config.reward_scale:
        return config.reward_scale
    if environment_kind(config.scenario) != DOOM:
        return 1.0
    return resolve_scenario(config.scenario, cache_dir=config.model_dir).reward_scale


def clips_rewards(config: TrainConfig) -> bool:
    """--clip-rewards auto: on for Atari (seed 002: scores differ by orders of magnitude between games)."""
    if config.clip_rewards == "auto":
        return environment_kind(config.scenario) == ATARI
    return config.clip_rewards == "on"
