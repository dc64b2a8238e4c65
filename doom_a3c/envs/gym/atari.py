"""Atari games from ale-py with DeepMind's preprocessing, behind the environment interface.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np

from doom_a3c.envs.gym.games import SeededOnce
from doom_a3c.envs.gym.registry import (
    ATARI_ENTRY_POINT,
    ATARI_EXAMPLES,
    ATARI_FRAME_SIZE,
    ATARI_FRAMES_PER_SECOND,
    draw_sdl_windows_in_software,
    gym_make,
    registered_spec,
)
from doom_a3c.envs.interface import Step
from doom_a3c.errors import ConfigError


class FireFrameOnReset(gym.Wrapper):
    """FIRE held for one frame after every reset of a frameskip-1 ALE env, as ale-py's vector env starts a game
    (its reward, always 0 at a game's start, is dropped as the vector env drops it)."""

    def __init__(self, env: gym.Env, fire: int):
        super().__init__(env)
        self._fire = fire

    def reset(self, **kwargs):
        observation, info = self.env.reset(**kwargs)
        observation, _, _, _, info = self.env.step(self._fire)
        return observation, info


class AtariEnvironment(SeededOnce):
    """An Atari game with the standard DeepMind preprocessing, built from gymnasium's own wrappers.

    * The ALE env is made with frameskip=1 and `gymnasium.wrappers.AtariPreprocessing` does the rest:
      up to `noop_max` random no-ops after each reset, repeating the action `frame_skip` frames and
      max-pooling the last two (Atari sprites flicker), 84x84 grey. Observations: (84, 84, 1) uint8.
    * Sticky actions are the env's own default: `ALE/*-v5` repeats the previous action with probability
      0.25 on every frame (Machado et al. 2018), the `*-v4` ids use 0. They are kept on purpose: they are
      the ALE's recommended source of stochasticity, so scores compare with v5 results, not with
      the deterministic-emulator numbers of the 2016 A3C paper.
    * With `vector_env_rules` (runs trained in ale-py's vector env, doom_a3c/envs/ale_vector_batch.py), the game
      starts as that env starts it: FIRE held for one frame (games with a FIRE action) before the no-ops, and
      nothing pressed after a lost life: the agent serves itself. Without (runs trained before it), games whose
      actions start NOOP, FIRE get FIRE and then action 2 pressed after every reset and after every lost life,
      as baselines' `FireResetEnv` does; Breakout otherwise waits forever for a serve. The (almost always zero)
      rewards of those presses are added to the next step's reward, so the rewards summed over a game equal
      its score.
    * A lost life gives done=True, game_over=False when `life_loss_terminal` (learning treats it as the
      end of an episode, the game goes on without reset); the real end of the game gives
      done=game_over=True, the ALE's frame limit (108,000 frames) game_over and truncated (no terminal:
      learning bootstraps from the last frame's value).
    """

    kind = "image"
    observation_dtype = np.uint8

    def __init__(self, env_id: str, seed: int, frame_skip: int = 4, noop_max: int = 30,
                 life_loss_terminal: bool = True, frame_size: int = ATARI_FRAME_SIZE,
                 vector_env_rules: bool = False, window: bool = False):
        spec = registered_spec(env_id)
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
        # With `window`, ale-py's human render mode shows the game (and plays its sound) at the ROM's own frame
        # rate; screen() reads the colour screen from the ALE either way.
        if window:
            draw_sdl_windows_in_software()
        base = gym_make(env_id, frameskip=1, render_mode="human" if window else "rgb_array", obs_type="grayscale")
        self.action_names: list[str] = list(base.unwrapped.get_action_meanings())
        if self.action_names[0] != "NOOP":  # Backgammon, VideoCheckers: no action that does nothing
            noop_max = 0  # their random starts come from sticky actions alone
        if vector_env_rules and "FIRE" in self.action_names:
            base = FireFrameOnReset(base, self.action_names.index("FIRE"))
        self._env = gym.wrappers.AtariPreprocessing(
            base, noop_max=noop_max, frame_skip=frame_skip, screen_size=frame_size,
            terminal_on_life_loss=False, grayscale_obs=True, grayscale_newaxis=True, scale_obs=False)
        self._ale = base.unwrapped.ale
        self.observation_shape = (frame_size, frame_size, 1)
        self.seconds_per_step = frame_skip / ATARI_FRAMES_PER_SECOND  # GIFs play at the game's speed
        self.num_actions = len(self.action_names)
        self.life_loss_terminal = life_loss_terminal
        self.fires_on_reset = (not vector_env_rules and self.action_names[:2] == ["NOOP", "FIRE"]
                               and self.num_actions >= 3)
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
