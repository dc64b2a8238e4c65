"""One ViZDoom game behind the environment interface, built from a resolved config alone."""
from __future__ import annotations

import os

import numpy as np

from doom_a3c.config import ConfigError, TrainConfig
from doom_a3c.environment import Step, preprocess_frame

DOOM_TICS_PER_SECOND = 35


def button_names(game) -> list[str]:
    """A DoomGame's available buttons by name ("MOVE_LEFT"), in the order make_action expects them."""
    return [str(b).split(".")[-1].split(":")[0] for b in game.get_available_buttons()]


def button_vector(buttons: list[str], held: list[str]) -> list[float]:
    """make_action's argument that holds down the buttons in `held`."""
    return [1.0 if b in held else 0.0 for b in buttons]


def locate_cfg(path: str) -> str:
    """The saved .cfg path, or, when it is gone (ViZDoom installed elsewhere, another Ray host), the
    shipped scenario of the same file name."""
    if os.path.exists(path):
        return path
    import vizdoom

    shipped = os.path.join(vizdoom.scenarios_path, os.path.basename(path))
    if os.path.exists(shipped):
        return shipped
    raise ConfigError(f"scenario config {path} does not exist")


class DoomEnvironment:
    """One ViZDoom game, rendering RGB at --screen-resolution, stepping `frame_skip` tics per action; the
    network sees (frame_size, frame_size, 1) grey frames. Everything comes from the resolved config."""

    def __init__(self, config: TrainConfig, seed: int = 0):
        import vizdoom as vzd

        self._vzd = vzd
        cfg_path = locate_cfg(config.scenario_path)
        self._game = vzd.DoomGame()
        try:
            self._game.load_config(cfg_path)
        except Exception as error:  # ViZDoom raises its own exception types
            raise ConfigError(f"cannot load scenario config {cfg_path}: {error}") from error
        self._game.set_screen_resolution(getattr(vzd.ScreenResolution, config.screen_resolution))
        self._game.set_screen_format(vzd.ScreenFormat.RGB24)
        self._game.set_window_visible(False)
        self._game.set_mode(vzd.Mode.PLAYER)
        self._game.set_seed(seed % (2**31))
        if config.game_args:
            self._game.add_game_args(config.game_args)
        self._frag_reward = config.frag_reward
        if self._frag_reward:
            self._game.add_available_game_variable(vzd.GameVariable.FRAGCOUNT)
        self._bots = config.bots
        self._frags = 0.0
        try:
            self._game.init()
        except Exception as error:
            raise ConfigError(f"ViZDoom could not start {cfg_path}: {error}") from error
        buttons = button_names(self._game)
        unknown = sorted({b for combo in config.actions for b in combo} - set(buttons))
        if unknown:
            self._game.close()
            raise ConfigError(f"the action set uses buttons {unknown} that {cfg_path} does not make available "
                              f"({buttons})")
        self._actions = [button_vector(buttons, combo) for combo in config.actions]
        self.action_names = ["+".join(combo) for combo in config.actions]
        self.num_actions = len(self._actions)
        self._frame_skip = config.frame_skip
        self.seconds_per_step = config.frame_skip / DOOM_TICS_PER_SECOND
        self._crop = tuple(config.crop)
        self.observation_shape = (config.frame_size, config.frame_size, 1)
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

    def step(self, action: int) -> Step:
        reward = self._game.make_action(self._actions[action], self._frame_skip)
        if self._frag_reward:
            frags = self._game.get_game_variable(self._vzd.GameVariable.FRAGCOUNT)
            reward += self._frag_reward * (frags - self._frags)
            self._frags = frags
        if self._game.is_episode_finished():  # Doom has no lives: the learning terminal is the real end
            return Step(np.zeros(self.observation_shape, np.uint8), float(reward), True, True)
        if self._game.is_player_dead():  # deathmatch maps: the episode goes on after a death
            self._game.respawn_player()
        return Step(self._observe(), float(reward), False, False)

    def screen(self) -> np.ndarray:
        """The last rendered frame at full resolution, RGB."""
        assert self._last_screen is not None, "reset() first"
        return self._last_screen

    def close(self) -> None:
        self._game.close()
