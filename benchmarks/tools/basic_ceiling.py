#!/usr/bin/env python
"""How high can a mean-100 on basic.wad go? A scripted player with perfect knowledge of where the monster is.

    python benchmarks/tools/basic_ceiling.py [--episodes 500] [--frame-skips 1 2 4] [--seed 1]

basic.wad scores 101 for the kill minus one point per tic, so a score mostly measures how long the
player strafes before the monster is under the crosshair; the monster's place on the wall is random.
This player reads the monster's screen box from ViZDoom's labels buffer each step and strafes towards
it with the preset's actions (MOVE_LEFT, MOVE_RIGHT, ATTACK) until the crosshair (the screen's centre
column) is inside the box, then shoots. It prints, per frame skip, the mean score, its spread, and the
best and worst mean over any 100 consecutive episodes: what a learning curve's "plateau" can reach.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/tools/ is two below
sys.path.insert(0, ROOT)

from doom_a3c.envs.doom.game import button_names, button_vector  # noqa: E402
from doom_a3c.envs.doom.scenario_files import find_doom_scenario  # noqa: E402
from doom_a3c.run.summaries import moving_mean  # noqa: E402

LEFT, RIGHT, ATTACK = "MOVE_LEFT", "MOVE_RIGHT", "ATTACK"


def aim(box_left: float, box_right: float, crosshair: float) -> str:
    """The scripted choice: shoot when the crosshair is on the monster, else strafe towards it."""
    if box_left <= crosshair <= box_right:
        return ATTACK
    return RIGHT if crosshair < box_left else LEFT


def play(frame_skip: int, episodes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores and lengths (agent steps) of `episodes` games of basic.wad played by `aim`."""
    import vizdoom as vzd

    _, cfg_path = find_doom_scenario("basic.wad", cache_dir=tempfile.gettempdir())  # shipped: nothing written
    game = vzd.DoomGame()
    game.load_config(cfg_path)
    game.set_screen_resolution(vzd.ScreenResolution.RES_160X120)
    game.set_window_visible(False)
    game.set_labels_buffer_enabled(True)
    game.set_seed(seed)
    game.init()
    buttons = button_names(game)
    press = {name: button_vector(buttons, [name]) for name in (LEFT, RIGHT, ATTACK)}
    crosshair = game.get_screen_width() / 2
    scores, lengths = [], []
    for _ in range(episodes):
        game.new_episode()
        steps = 0
        while not game.is_episode_finished():
            monsters = [label for label in game.get_state().labels if label.object_name != "DoomPlayer"]
            choice = ATTACK
            if monsters:
                choice = aim(monsters[0].x, monsters[0].x + monsters[0].width, crosshair)
            game.make_action(press[choice], frame_skip)
            steps += 1
        scores.append(game.get_total_reward())
        lengths.append(steps)
    game.close()
    return np.array(scores), np.array(lengths)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=500)
    parser.add_argument("--frame-skips", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.episodes < 100 or min(args.frame_skips) < 1:
        print("--episodes must be >= 100 and every frame skip >= 1", file=sys.stderr)
        return 2
    print(f"{'frame skip':>10} {'mean':>6} {'std':>5} {'median':>7} {'mean length':>12} "
          f"{'best mean-100':>14} {'worst mean-100':>15}")
    for frame_skip in args.frame_skips:
        scores, lengths = play(frame_skip, args.episodes, args.seed)
        windows = moving_mean(scores, 100)[99:]
        print(f"{frame_skip:>10} {scores.mean():6.1f} {scores.std():5.1f} {np.median(scores):7.0f} "
              f"{lengths.mean():12.1f} {windows.max():14.1f} {windows.min():15.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
