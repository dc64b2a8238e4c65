"""A frame stack (--frame-stack K) around any environment with images: the network sees the last K preprocessed
frames side by side on the channel axis, [H, W, K * C] (oldest first, the newest in the last C channels), in front
of its conv torso and LSTM, as CleanRL's `ppo_atari` feeds its 4 frames (gymnasium's `FrameStackObservation`) to
its torso. A record observation (a frame and game variables or sound, doom_a3c/envs/interface.py) stacks its frame only; its
variables and sound are the newest step's (the LSTM keeps what came before).

The stack starts again, zeros and then the new frame, wherever the LSTM state starts again: at reset() and at a
learning terminal (`Step.done`: the game's end, or an Atari life lost while the game goes on), so no frame of a
finished episode reaches the next. A time limit (`Step.truncated`) is no terminal: its observation joins the stack
as it is, since learning bootstraps from its value; the caller resets next.
"""
from __future__ import annotations

import numpy as np

from doom_a3c.config import MAX_FRAME_STACK
from doom_a3c.envs.interface import FRAME, Environment, Step, with_frame_shape
from doom_a3c.errors import ConfigError


class FrameStack:
    """`env` with each observation's frame replaced by the stack of its last `stack` frames; every other attribute
    (screen, reseed, a ViZDoom game's tic recording, ...) is the wrapped game's."""

    def __init__(self, env: Environment, stack: int):
        self.env = env
        self.stack = stack
        height, width, channels = env.observation_shape
        self._channels = channels
        self.observation_shape = (height, width, channels * stack)
        self.num_actions = env.num_actions
        self.action_names = env.action_names
        self.seconds_per_step = env.seconds_per_step
        self._frames = np.zeros(self.observation_shape, np.uint8)  # [H, W, K * C], the oldest frame first
        self._record: np.dtype | None = None  # the stacked record's dtype, once a record observation is seen

    def __getattr__(self, name: str):
        if name == "env":  # not set yet (a half-built or unpickled wrapper): no endless recursion
            raise AttributeError(name)
        return getattr(self.env, name)

    @property
    def record_tics(self) -> bool:
        """ViZDoom's tic-by-tic recording (doom_a3c/envs/batch.py, play.py): an AttributeError, as for the game itself,
        when the wrapped game cannot record tics."""
        return self.env.record_tics

    @record_tics.setter
    def record_tics(self, on: bool) -> None:
        self.env.record_tics = on

    def _clear(self) -> None:
        # Zeros for the older frames, as SB3's VecFrameStack and FrameStackObservation(padding_type="zero") pad
        # (gymnasium's default, "reset", repeats the first frame): an episode's first steps then never look like a
        # scene standing still, so the network can tell "nothing seen yet" from "nothing moved".
        self._frames[...] = 0

    def _push(self, observation: np.ndarray) -> np.ndarray:
        """Shift the stack one frame older, put `observation`'s frame last; the stacked observation (a copy)."""
        is_record = observation.dtype.names is not None
        frame = observation[FRAME] if is_record else observation
        self._frames[..., :-self._channels] = self._frames[..., self._channels:]
        self._frames[..., -self._channels:] = frame
        if not is_record:
            return self._frames.copy()
        if self._record is None:
            self._record = with_frame_shape(observation.dtype, self.observation_shape)
        stacked = np.zeros((), self._record)
        stacked[FRAME] = self._frames
        for name in observation.dtype.names[1:]:  # the variables, the sound and any learning target: the newest
            stacked[name] = observation[name]
        return stacked

    def reset(self) -> np.ndarray:
        observation = self.env.reset()
        self._clear()
        return self._push(observation)

    def step(self, action: int) -> Step:
        step = self.env.step(action)
        # A truncated step's observation (the last of the old game; ViZDoom's repeats its last frame) is valued
        # for the bootstrap with the frames before it, as the network would have seen it: no clearing. A terminal
        # (a lost life or the game's end) starts a new stack with the observation that comes with it.
        if (step.done or step.game_over) and not step.truncated:
            self._clear()
        return step._replace(observation=self._push(step.observation))

    def screen(self) -> np.ndarray:
        return self.env.screen()

    def reseed(self, seed: int) -> None:
        self.env.reseed(seed)

    def close(self) -> None:
        self.env.close()


def stack_frames(env: Environment, stack: int) -> Environment:
    """`env` as the network of a run with --frame-stack `stack` sees it: unchanged for 1. ConfigError (the game
    closed) for a stack of vectors: doom_a3c/run/resolve.py refuses those before any game is made."""
    if stack == 1:
        return env
    if len(env.observation_shape) != 3 or not 1 <= stack <= MAX_FRAME_STACK:
        env.close()
        raise ConfigError(f"--frame-stack {stack}: 1 to {MAX_FRAME_STACK} frames of an image observation [H, W, C], "
                          f"not of {tuple(env.observation_shape)}")
    return FrameStack(env, stack)
