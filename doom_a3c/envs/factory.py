"""How a run's games are made: one game of any kind from a resolved config, and a worker's batch of
them, in this process or in child processes under the watchdog.
"""
from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING, Sequence

from doom_a3c.config import TrainConfig
from doom_a3c.envs.batch import RESTART_SEED_STRIDE, EnvBatch, GameBatch, JoinedBatch
from doom_a3c.envs.frame_stack import stack_frames
from doom_a3c.envs.interface import Environment
from doom_a3c.envs.process_batch import ProcessEnvBatch

if TYPE_CHECKING:
    from doom_a3c.envs.doom.self_play import OpponentPolicy


def make_environment(config: TrainConfig, seed: int, opponents: OpponentPolicy | None = None,
                     window: str | None = None, real_time: bool = False) -> Environment:
    """One game of the resolved config's environment, whichever of the kinds it is, as the network sees it: every
    game of a run (workers' and their child processes', the evaluator's, play.py's, make_env's) is made here, so
    that --frame-stack stacks its frames alike everywhere. With `opponents` (a --self-play worker's game slot) the
    game is a self-play match against them; without, the map's own game (the evaluator's, play.py's). `window`:
    "agent" shows the game in a window as the agent plays it, at the game's own speed (play.py --window);
    "person" (ViZDoom) gives a person at that window the keyboard and mouse instead (play.py --human);
    `real_time` (ViZDoom): no window, but the engine keeps the game's clock, as every engine of a person's match."""
    if config.env_kind == "doom" and opponents is not None:
        from doom_a3c.envs.doom.self_play import SelfPlayGame

        game: Environment = SelfPlayGame(config, seed, opponents)
    elif config.env_kind == "doom":
        from doom_a3c.envs.doom.game import DoomEnvironment

        game = DoomEnvironment(config, seed, window, real_time)
    else:
        from doom_a3c.envs.gym.factory import make_gym_environment

        game = make_gym_environment(config, seed, window is not None)
    return stack_frames(game, config.frame_stack or 1)


def _remade(config: TrainConfig, seeds: Sequence[int], opponents: Sequence[OpponentPolicy] | None, index: int,
            restarts: int) -> Environment:
    return make_environment(config, seed=seeds[index] + RESTART_SEED_STRIDE * restarts,
                            opponents=opponents[index] if opponents else None)


def make_env_batch(config: TrainConfig, seeds: Sequence[int], stop: threading.Event | None = None,
                   recorded: bool = False, opponents: Sequence[OpponentPolicy] | None = None) -> GameBatch:
    """One worker's games: an Atari run's in ale-py's vector env (--ale-vector; `recorded`: game 0's screens make
    GIFs, so it plays on the one-game path, which has them); else built and stepped here by --env-threads threads,
    or with --env-processes P built and stepped in P child processes under the --game-timeout watchdog (`stop`:
    the run's stop flag, which ends any wait for them). A game that fails is restarted unless --max-game-restarts
    is 0. `opponents`: one per game, a --self-play worker's (its games are then matches, in this process)."""
    if config.ale_vector:
        from doom_a3c.envs.ale_vector_batch import AleVectorBatch

        def vector(part: Sequence[int]) -> AleVectorBatch:
            return AleVectorBatch(config.scenario_path, list(part), config.frame_skip, config.frame_size,
                                  config.frame_stack or 1, threads=config.env_threads)

        if not recorded:
            return vector(seeds)
        first = EnvBatch([make_environment(config, seed=seeds[0])])
        return JoinedBatch([first, vector(seeds[1:])]) if len(seeds) > 1 else first
    remake = functools.partial(_remade, config, list(seeds), opponents) if config.max_game_restarts > 0 else None
    if config.env_processes and not opponents:
        return ProcessEnvBatch([functools.partial(make_environment, config, seed=seed) for seed in seeds],
                               config.env_processes, remake, timeout=config.game_timeout, stop=stop,
                               threads=config.env_threads)
    envs = []
    try:
        for i, seed in enumerate(seeds):
            envs.append(make_environment(config, seed=seed, opponents=opponents[i] if opponents else None))
    except BaseException:
        for env in envs:  # the games already started must not outlive a failed build
            env.close()
        raise
    return EnvBatch(envs, threads=config.env_threads, remake=remake)
