#!/usr/bin/env python
"""How does train.py learn an Atari game (or any gymnasium image env)? Trains once for a time budget and
reports the curve.

    python benchmarks/learn_atari.py --game Pong --minutes 60 [--seed 0] [--target 18] [-- extra train.py flags]
    python benchmarks/learn_atari.py --game Breakout --minutes 180 --window 100 --target 100
    python benchmarks/learn_atari.py --game Breakout --minutes 90 --window 100 --target 100 --out DIR --resume
    python benchmarks/learn_atari.py --env-id VizdoomDeadlyCorridor-v1 --minutes 30 --random-episodes 20

--resume continues the run in --out for --minutes more (a long budget in legs): the curve is the whole
run's, its minutes counted across legs (train.py keeps the wall clock in the checkpoint).

The game is `ALE/<Game>-v5` (sticky actions, repeat_action_probability 0.25) unless --env-id names
another id. Scores are the true game scores from progress.csv (whole games, unclipped). Prints the
curve as the mean score of the last --window games against wall time, agent steps and emulator
frames (agent steps x the frame skip), then the best mean and when it was first reached, and when the
mean first reached --target. Then the mean at 1M, 2.5M and 5M agent steps beside the published anchors'
(benchmarks/atari_anchors.py: Dopamine's agents and RLlib's A2C at the same agent steps), and every 10
minutes. --random-episodes plays that many games with uniformly random actions after training, for the
baseline.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.atari_anchors import ANCHOR_CURVES, WINDOW, at_mark, window_means  # noqa: E402
from benchmarks.learn_scenarios import random_policy_score  # noqa: E402
from benchmarks.trainer_child import run_trainer  # noqa: E402
from doom_a3c.run.summaries import moving_mean, read_progress  # noqa: E402


MILESTONES = (1_000_000, 2_500_000, 5_000_000)  # agent steps
# The published runs' scores at those agent steps: benchmarks/atari_anchors.py says where each comes from
# (Dopamine's agents with sticky actions as the v5 ids, RLlib's A2C on v4 without) and draws the whole curves.
ANCHORS = {game: {who: {steps: at_mark(curve, steps) for steps in MILESTONES} for who, curve in curves.items()}
           for game, curves in ANCHOR_CURVES.items()}


def train_command(env_id: str, seed: int, out: str, minutes: float, resume: bool = False,
                  extra: list[str] = ()) -> list[str]:
    """The train.py command line of one run into `out` (minutes 0: no time limit; `extra` flags go last, so they
    can add a budget of steps or override these)."""
    return [sys.executable, os.path.join(ROOT, "train.py"), "--scenario", env_id, "--seed", str(seed),
            "--max-minutes", f"{minutes:g}", "--model-dir", out, "--frames-dir", os.path.join(out, "frames"),
            "--log-every-seconds", "60", *(["--resume"] if resume else []), *extra]


def mean_at(curve: list[tuple[float, int, float]], index: int, at: float) -> tuple[float, int, float] | None:
    """The curve's first point whose field `index` (0: wall seconds, 1: agent steps) is at least `at`."""
    return next((point for point in curve if point[index] >= at), None)


def milestone_lines(curve: list[tuple[float, int, float]], windows: list[float | None], game: str,
                    name: str) -> list[str]:
    """The mean at each milestone of agent steps, and the mean of the games of the last WINDOW steps before it
    (the anchors' measure), with the anchors' scores there; then the mean at every 10 minutes."""
    lines = []
    for steps in MILESTONES:
        point = mean_at(curve, 1, steps)
        anchors = ", ".join(f"{who} {scores[steps]:g}" for who, scores in ANCHORS.get(game, {}).items()
                            if scores.get(steps) is not None)
        ours = f"{point[2]:.1f} (at {point[0] / 60:.1f} min)" if point else "not reached"
        if (last_window := at_mark(windows, steps)) is not None:
            ours += f", {last_window:.1f} over the games of the last {WINDOW / 1e6:g}M steps"
        lines.append(f"{name} at {steps / 1e6:g}M agent steps: {ours}" + (f"; {anchors}" if anchors else ""))
    minutes = 10
    while (point := mean_at(curve, 0, minutes * 60)) is not None:
        lines.append(f"{name} at {minutes} min: {point[2]:.1f} ({point[1]:,} agent steps)")
        minutes += 10
    return lines


def mean_curve(rows: list[dict[str, float]], window: int = 10) -> list[tuple[float, int, float]]:
    """(wall_s, env_steps, mean of the last `window` scores) at every episode from the window-th on."""
    means = moving_mean(np.array([r["reward"] for r in rows]), window)
    return [(rows[i]["wall_s"], int(rows[i]["env_steps"]), float(means[i])) for i in range(window - 1, len(rows))]


def read_frame_skip(run_dir: str) -> int:
    """Emulator frames per agent step, from the run's saved config."""
    with open(os.path.join(run_dir, "config.json")) as handle:
        return int(json.load(handle)["frame_skip"])


def first_reaching(curve: list[tuple[float, int, float]], target: float) -> tuple[float, int, float] | None:
    """The first point of the curve whose mean is at least `target`, or None."""
    return next((point for point in curve if point[2] >= target), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", default="Pong", help="ALE game name: Pong, Breakout, SpaceInvaders, ...")
    parser.add_argument("--env-id", default=None, help="full gymnasium id instead (default ALE/<game>-v5)")
    parser.add_argument("--minutes", type=float, required=True, help="training time budget")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--points", type=int, default=20, help="rows of the printed curve")
    parser.add_argument("--window", type=int, default=10, help="games in the moving mean (10 for Pong, 100 for Breakout)")
    parser.add_argument("--target", type=float, default=None, help="report when the moving mean first reached this")
    parser.add_argument("--out", default=None, help="run folder (default: a temporary folder)")
    parser.add_argument("--random-episodes", type=int, default=0,
                        help="after training, also play this many games with uniformly random actions (a baseline)")
    parser.add_argument("--resume", action="store_true", help="continue the run in --out for --minutes more")
    args, extra = parser.parse_known_args()
    extra = [e for e in extra if e != "--"]
    env_id = args.env_id or f"ALE/{args.game}-v5"
    if args.resume and not (args.out and os.path.exists(os.path.join(args.out, "config.json"))):
        parser.error("--resume needs --out naming a run folder with a config.json")
    out = args.out or tempfile.mkdtemp(prefix=f"learn_{args.game.lower()}_")
    command = train_command(env_id, args.seed, out, args.minutes, args.resume, extra)
    print("$", " ".join(command), flush=True)
    started = time.time()
    returncode = run_trainer(command)
    if returncode != 0:
        print(f"train.py exited with {returncode}", file=sys.stderr)
        return returncode
    rows = read_progress(os.path.join(out, "progress.csv"))
    print(f"{env_id}: {len(rows)} games in {time.time() - started:.0f} s "
          f"({int(rows[-1]['env_steps']) if rows else 0:,} agent steps)")
    frame_skip = read_frame_skip(out)
    name = f"mean-{args.window}"
    curve = mean_curve(rows, args.window)
    if not curve:
        print(f"fewer than {args.window} games finished: no {name} yet")
        return 0
    print(f"{'minutes':>8} {'agent steps':>12} {'frames':>12} {name + ' score':>15}")
    stride = max(1, len(curve) // args.points)
    for wall, steps, mean in curve[::stride] + ([curve[-1]] if (len(curve) - 1) % stride else []):
        print(f"{wall / 60:8.1f} {steps:12,} {steps * frame_skip:12,} {mean:15.1f}")

    def when(point: tuple[float, int, float]) -> str:
        return f"{point[0] / 60:.1f} min ({point[1]:,} agent steps, {point[1] * frame_skip:,} frames)"

    best = max(curve, key=lambda point: point[2])
    print(f"best {name} {best[2]:.1f}, first reached at {when(best)}; final {name} {curve[-1][2]:.1f}")
    if args.target is not None:
        reached = first_reaching(curve, args.target)
        print(f"{name} >= {args.target:g}: " + (f"first at {when(reached)}" if reached else "not reached"))
    for line in milestone_lines(curve, window_means(rows), args.game if not args.env_id else "", name):
        print(line)
    if args.random_episodes:
        random_mean = random_policy_score(env_id, args.random_episodes, args.seed, out)
        print(f"uniformly random actions: mean {random_mean:.1f} over {args.random_episodes} games")
    print(f"outputs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
