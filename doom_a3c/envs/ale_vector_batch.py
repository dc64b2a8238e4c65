"""A worker's Atari games in ale-py's own vector env (`ale_py.vector_env.AtariVectorEnv`), behind the GameBatch
interface of doom_a3c/envs/batch.py.

The vector env emulates, max-pools, resizes (84x84 grey, cv2's INTER_AREA, as gymnasium's `AtariPreprocessing`) and
stacks the frames of all of a worker's games in C++ threads that release the GIL, so the worker's Python thread and
the other worker's TensorFlow run while it steps. What the project promises of an Atari game and the vector env does
otherwise is done here:

* the true score: its reward clipping is off (learning clips, doom_a3c/algo/learner.py), so `progress.csv` keeps the
  game's own score;
* a lost life ends the learning episode but not the game: its `episodic_life` would reset the whole game, so lives
  are read from `info["lives"]` instead, and the frames before the lost life are zeroed out of the stack, as
  doom_a3c/envs/frame_stack.py clears its stack at a learning terminal;
* a time limit is bootstrapped: the autoreset is SAME_STEP, which hands the last observation of the old game over in
  `info["final_obs"]`;
* sticky actions, the action set and the frame limit are those of the id's own registration (`-v5`: 0.25, where the
  class's own default is 0), the seeds are the worker's, one a game.

It presses FIRE once at a game's start (games that have a FIRE action), not after a lost life as the one-game path
(doom_a3c/envs/gym/atari.py) of older runs did: the agent learns to serve itself
(docs/defaults/atari-defaults.md#ale-pys-vector-env).
Ids it cannot run (an emulator mode or difficulty in the registration) stay on the one-game path:
`vector_env_problem` says why.
"""
from __future__ import annotations

import cv2
import numpy as np

from doom_a3c.envs.batch import BatchStep
from doom_a3c.envs.gym.registry import ATARI_FRAMES_PER_SECOND, registered_spec
from doom_a3c.envs.interface import EnvSpec

# The registration's keyword arguments that AtariVectorEnv takes too (frameskip and obs_type are the run's own).
VECTOR_ENV_KWARGS = {"game", "repeat_action_probability", "full_action_space", "frameskip",
                     "max_num_frames_per_episode", "obs_type"}


def vector_env_problem(env_id: str) -> str:
    """Why ale-py's vector env cannot run this Atari id as registered ("" when it can)."""
    unsupported = sorted(set(registered_spec(env_id).kwargs) - VECTOR_ENV_KWARGS)
    if unsupported:
        return f"its registration sets {', '.join(unsupported)}, which ale-py's vector env does not take"
    return ""


def _action_names(actions) -> list[str]:
    """The action set's names as AtariEnv.get_action_meanings gives them ("NOOP", "FIRE", ...)."""
    import ale_py

    names = {action: name for name, action in ale_py.Action.__members__.items()}
    return [names[action] for action in actions]


class AleVectorBatch:
    """`seeds`' games of one Atari id in one AtariVectorEnv stepped by `threads` C++ threads: frames [84, 84, stack]
    uint8 (the oldest first), as make_environment's games of the same config give them."""

    def __init__(self, env_id: str, seeds: list[int], frame_skip: int, frame_size: int, stack: int,
                 noop_max: int = 30, threads: int = 1):
        from ale_py.vector_env import AtariVectorEnv

        spec = registered_spec(env_id).kwargs
        self._env = AtariVectorEnv(
            spec["game"], len(seeds), num_threads=threads, frameskip=frame_skip, img_height=frame_size,
            img_width=frame_size, stack_num=stack, noop_max=noop_max, grayscale=True, maxpool=True,
            repeat_action_probability=float(spec.get("repeat_action_probability", 0.0)),
            full_action_space=bool(spec.get("full_action_space", False)),
            max_num_frames_per_episode=int(spec.get("max_num_frames_per_episode", 108_000)),
            reward_clipping=False, episodic_life=False, life_loss_info=False, use_fire_reset=True,
            autoreset_mode="SameStep")
        self._seeds = np.asarray(seeds, np.int64)
        self._stack = stack
        self.spec = EnvSpec(int(self._env.single_action_space.n), (frame_size, frame_size, stack),
                            frame_skip / ATARI_FRAMES_PER_SECOND, _action_names(self._env.ale.get_action_set()))
        self._lives = np.zeros(len(seeds), np.int64)
        # Steps since each game's stack last started again (its game's start or a lost life): the older frames
        # of a stack this young are cleared.
        self._age = np.zeros(len(seeds), np.int64)

    def __len__(self) -> int:
        return len(self._seeds)

    def _stacked(self, observations: np.ndarray) -> np.ndarray:
        """[E, stack, H, W] from the vector env -> [E, H, W, stack], the frames older than each stack's start
        zeroed."""
        count, stack, height, width = observations.shape
        if stack == 1:
            stacked = observations.reshape(count, height, width, 1).copy()
        else:
            # cv2.merge interleaves the planes a sixth as slowly as NumPy's transposed copy (0.08 against 0.46 ms
            # for 12 games of 4 frames): the trainer's thread holds the GIL while it copies.
            stacked = np.empty((count, height, width, stack), np.uint8)
            for frames, out in zip(observations, stacked):
                cv2.merge(list(frames), dst=out)
        for i in np.flatnonzero(self._age < stack - 1):
            stacked[i, :, :, :stack - 1 - self._age[i]] = 0
        return stacked

    def reset(self) -> np.ndarray:
        """Every game from its seed (the same seeds, the same games)."""
        observations, info = self._env.reset(seed=self._seeds)
        self._lives[:] = info["lives"]
        self._age[:] = 0
        return self._stacked(observations)

    def take_start_failures(self) -> list[tuple[int, str]]:
        return []  # the emulators run in this process: a failure to start raises in reset()

    def step(self, actions: np.ndarray) -> BatchStep:
        observations, rewards, terminated, truncated, info = self._env.step(np.asarray(actions, np.int32))
        game_overs = terminated | truncated
        lives = info["lives"]
        life_lost = (lives < self._lives) & ~game_overs
        self._lives[:] = lives  # a new game's lives where one ended
        self._age += 1
        finals = self._stacked(info["final_obs"]) if truncated.any() else None  # the old game's last stack
        self._age[game_overs | life_lost] = 0
        count = len(self._seeds)
        return BatchStep(self._stacked(observations), rewards.astype(np.float32), terminated | life_lost, game_overs,
                         np.zeros(count, np.float32), np.full(count, "", object), truncated.copy(), finals)

    def screen(self, index: int = 0) -> np.ndarray:
        """The vector env keeps no colour screen: a run that records GIFs plays its game 0 on the one-game path
        (doom_a3c/envs/factory.py)."""
        raise NotImplementedError("ale-py's vector env has no colour screen")

    def record_tics(self, index: int, on: bool) -> float:
        return 0.0

    def step_screens(self, index: int) -> list[np.ndarray]:
        return []

    def close(self) -> None:
        self._env.close()
