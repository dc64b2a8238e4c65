"""Does every Atari game go through both of its paths? Builds, resets and plays random actions in each game, one game
at a time (play.py's and GIFs' path) and two in ale-py's vector env (training's).

    python benchmarks/tools/atari_games.py [--steps 300] [--games ALE/Pong-v5 ALE/Qbert-v5 ...]

By default every registered `ALE/*-v5` id (104 with ale-py 0.12). Each game is resolved and built as train.py
does it (doom_a3c/run/resolve.py, then make_environment). Prints one line per game (actions, colour screen shape,
games finished, seconds) and, at the end, the ids that failed; exits 1 if any did.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/tools/ is two below
sys.path.insert(0, ROOT)

from doom_a3c.config import TrainConfig  # noqa: E402
from doom_a3c.envs.factory import make_env_batch, make_environment  # noqa: E402
from doom_a3c.envs.gym.registry import registered_atari_ids  # noqa: E402
from doom_a3c.run.resolve import resolve_environment  # noqa: E402


def play_random(env_id: str, steps: int, seed: int = 0) -> str:
    """One line about the game after `steps` random actions; raises whatever the game raises."""
    start = time.perf_counter()
    config = resolve_environment(TrainConfig(scenario=env_id))
    vector = play_batch(config, steps, seed)
    environment = make_environment(config, seed=seed)
    try:
        observation = environment.reset()
        if observation.shape != (84, 84, 1) or observation.dtype != np.uint8:
            raise ValueError(f"observation {observation.shape} {observation.dtype}, expected (84, 84, 1) uint8")
        rng = np.random.default_rng(seed)
        games = 0
        for _ in range(steps):
            if environment.step(int(rng.integers(environment.num_actions))).game_over:
                games += 1
                environment.reset()
        screen = environment.screen()
        if screen.ndim != 3 or screen.shape[2] != 3:
            raise ValueError(f"screen {screen.shape}, expected colour (H, W, 3)")
        return (f"{environment.num_actions} actions, screen {screen.shape[0]}x{screen.shape[1]}, {games} games "
                f"finished; {vector}; {time.perf_counter() - start:.1f} s")
    finally:
        environment.close()


def play_batch(config: TrainConfig, steps: int, seed: int) -> str:
    """Two games of the id as a training worker steps them (ale-py's vector env unless the id cannot run there)."""
    batch = make_env_batch(config, [seed, seed + 1])
    try:
        observations = batch.reset()
        if observations.shape != (2, 84, 84, 1) or observations.dtype != np.uint8:
            raise ValueError(f"batch observations {observations.shape} {observations.dtype}, expected (2, 84, 84, 1)")
        rng = np.random.default_rng(seed)
        games = sum(int(batch.step(rng.integers(batch.spec.num_actions, size=2)).game_overs.sum())
                    for _ in range(steps))
        return f"{'vector env' if config.ale_vector else 'one env a game'}: {games} games finished"
    finally:
        batch.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=300, help="random agent steps per game")
    parser.add_argument("--games", nargs="+", help="ids to check (default: every ALE/*-v5 id)")
    args = parser.parse_args()
    games = args.games or registered_atari_ids()
    failed = []
    for env_id in games:
        try:
            print(f"ok   {env_id}: {play_random(env_id, args.steps)}", flush=True)
        except Exception as error:  # noqa: BLE001 - report every game, then fail at the end
            failed.append(env_id)
            print(f"FAIL {env_id}: {type(error).__name__}: {error}", flush=True)
    print(f"{len(games) - len(failed)} of {len(games)} games ok" + (f"; failed: {' '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
