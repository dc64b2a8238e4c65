#!/usr/bin/env python
"""The peer on ViZDoom: Sample Factory's APPO on its own ViZDoom envs (`sf_examples.vizdoom`), 2 workers x 4 envs,
on the CPU, side by side with a doom_a3c run.

    python benchmarks/peer_sample_factory.py --sf-python /tmp/sf/bin/python --seeds 0 --minutes 12
    python benchmarks/peer_sample_factory.py --sf-python /tmp/sf/bin/python --env doom_defend_the_center \
        --minutes 30 --ours /tmp/suite/defend_the_center-seed0

Sample Factory writes no per-episode file. Every 5 s its log prints the env frames so far; its TensorBoard
summaries hold the mean of its last 100 episodes' `true_objective` (the env's own reward before its reward
shaping). This converts that mean to the game's own score (PEER_ENVS says how, per env), counts env steps as
frames / 4 (its frame skip) and wall time from its first frame report (after start-up). `doom_basic` is read
from the log as it grows, so a run can stop once its mean reaches `--threshold`; the other envs run for the
whole budget. With `--ours RUN_DIR` (a train.py model dir run just before, on the same scenario) it
also writes comparison.png (both mean-100 curves against minutes) and prints the ratio of the two at equal
wall time. health_gathering is compared in tics alive per episode: Sample Factory's version of the scenario
pays 0.01 a tic with no death penalty (ViZDoom's own pays 1 a tic and -100 on death), so tics alive is the
unit both runs give exactly.
`doom_battle2` and `doom_two_colors_hard` play maps that Sample Factory ships and ViZDoom does not
(sf_examples/vizdoom/doom/scenarios/, MIT): run ours on copies of its .wad and .cfg files, given as paths
(`--scenario maps/battle2_continuous_turning.cfg`, which its doom_battle2 plays, or a battle2.cfg that is its
battle.cfg with battle2.wad: the same map and score, turning with TURN_LEFT / TURN_RIGHT). Their true_objective
is the game's own score, which our progress.csv holds too: its wrappers add their reward shaping after summing
the engine's reward into it.
`doom_deathmatch_bots` is its deathmatch against 7 bots (ViZDoom's bots.cfg, as our cig's), on dwango5.wad's MAP01
(dwango5_dm_continuous_weap.cfg), not cig.wad, in 4-minute matches: its true_objective is the agent's FRAGCOUNT at
the match's end (frags net of suicides, as our progress.csv's frags), so frags / 4 is frags per minute of game time,
compared with the frags_per_minute of a cig run (10-minute matches). Its envs with cig.wad (doom_dm) play 8 learning
agents against each other, and their true_objective is winning the match (1 or 0), not frags. Its TensorBoard holds
a mean only from 100 episodes on, or from 300 s of training with more than 10: with 4-minute matches, the first after
about 5 minutes.
Sample Factory and PyTorch are not this project's dependencies; put them in an environment of their own
(`pip install torch==2.13.0` first where a CPU build of PyTorch lies on disk: PyPI's default is a CUDA build):
    python -m venv /tmp/sf && /tmp/sf/bin/pip install sample-factory vizdoom==1.3.2
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from learn_basic import Result, headline, summarize  # noqa: E402
from learn_scenarios import scenario_label  # noqa: E402

sys.path.insert(0, ROOT)
from doom_a3c.run.summaries import moving_mean, read_progress  # noqa: E402

FRAME_SKIP = 4  # its envs' env_frameskip: Sample Factory counts frames, we count agent steps
REWARD_SCALE = 0.01  # doom_basic's reward_scaling: its log shows scaled scores
TRUE_OBJECTIVE_TAG = "policy_stats/avg_true_objective"  # its TensorBoard's mean-100 of the unshaped reward
DEATHMATCH_MINUTES = 4.0  # doom_deathmatch_bots' match length: its DoomSpec's timelimit, passed as --timelimit


class PeerEnv(NamedTuple):
    scenario: str  # the same scenario's name for train.py (for its own maps, the .cfg's stem)
    to_game_units: float  # its true_objective x this = the unit below
    # "tics alive": per episode; "frags per minute": of game time, a match's; any other (score, kills): the game's
    # own score, as our progress.csv has it
    unit: str
    flags: tuple[str, ...] = ()  # its command line's flags for this env beyond the common ones


PEER_ENVS = {
    "doom_basic": PeerEnv("basic", 1 / REWARD_SCALE, "score"),
    "doom_defend_the_center": PeerEnv("defend_the_center", 1.0, "score"),
    "doom_defend_the_line": PeerEnv("defend_the_line", 1.0, "score"),
    "doom_my_way_home": PeerEnv("my_way_home", 1.0, "score"),
    "doom_deadly_corridor": PeerEnv("deadly_corridor", 100.0, "score"),  # its reward_scaling 0.01
    "doom_health_gathering": PeerEnv("health_gathering", 100.0, "tics alive"),  # 0.01 a tic alive
    "doom_health_gathering_supreme": PeerEnv("health_gathering_supreme", 100.0, "tics alive"),
    # battle2.wad's map script pays +1 a monster killed (ACS global 0, which ViZDoom returns as the reward; USER2
    # counts the same kills), the .cfg nothing for living or dying. Its true_objective (doom_utils.py's
    # BATTLE_REWARD_SHAPING, true_objective_func None) is that reward's episode sum before the shaping
    # (REWARD_SHAPING_BATTLE: health, ammunition and weapon deltas) and at reward_scaling 1: kills, as DFP counts.
    "doom_battle2": PeerEnv("battle2_continuous_turning", 1.0, "kills"),
    # two_colors_hard.cfg's living_reward 0.01 a tic, no death penalty, in both projects (the same .cfg); its
    # true_objective leaves out DoomGatheringRewardShaping's +1 for each gain of health (the right colour's pickup).
    "doom_two_colors_hard": PeerEnv("two_colors_hard", 1.0, "score"),
    # Deathmatch against 7 bots on dwango5.wad's MAP01; the match ends at --timelimit (+timelimit and the episode
    # timeout, both of game time). Its true_objective: true_objective_frags, FRAGCOUNT at the end; its shaping
    # (REWARD_SHAPING_DEATHMATCH_V0) pays frags, deaths, hits, damage, health, armour, weapons and ammunition.
    "doom_deathmatch_bots": PeerEnv("dwango5_dm_continuous_weap", 1 / DEATHMATCH_MINUTES, "frags per minute",
                                    (f"--timelimit={DEATHMATCH_MINUTES}",)),
}
COMPARE_AT_MINUTES = (5, 10, 15, 20, 25, 30)
STAMP = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")
FRAMES = re.compile(r"Fps is .*Total num frames: (\d+)\.")
REWARD = re.compile(r"Avg episode reward: \[\(0, '(-?[\d.]+)'\)\]")


def parse_log(lines: list[str]) -> list[tuple[float, float, float]]:
    """(wall s since the first frame report, env steps, mean-100 score) for each reward report of the log."""
    start = frames = None
    points = []
    for line in lines:
        stamp = STAMP.search(line)
        if not stamp:
            continue
        when = datetime.datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if match := FRAMES.search(line):
            start = when if start is None else start
            frames = int(match.group(1))
        elif (match := REWARD.search(line)) and frames:  # none before its first frames: no episode yet
            points.append((when - start, frames / FRAME_SKIP, float(match.group(1)) / REWARD_SCALE))
    return points


def training_progress(lines: list[str]) -> tuple[float, float] | None:
    """(wall s since the first frame report, env steps) at the log's last frame report; None before the first.
    Frame reports come every 5 s from the start, reward reports only once an episode has ended (a deathmatch's
    first after minutes), so the budget is counted on these."""
    start = last = None
    for line in lines:
        if (stamp := STAMP.search(line)) and (match := FRAMES.search(line)):
            when = datetime.datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            start = when if start is None else start
            last = (when - start, int(match.group(1)) / FRAME_SKIP)
    return last


def result_of(points: list[tuple[float, float, float]], threshold: float) -> Result:
    if not points:
        return Result(None, float("nan"), float("nan"))
    reached = next(((wall, steps) for wall, steps, mean in points if mean >= threshold), None)
    wall, steps, mean = points[-1]
    return Result(reached, mean, steps / wall if wall > 0 else float("nan"))


def stop_session(proc: subprocess.Popen) -> None:
    """SIGTERM lets Sample Factory shut down; then SIGKILL for what is left of its session: its ViZDoom engines
    and multiprocessing's resource tracker ignore SIGTERM and would outlive it."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def log_start(lines: list[str]) -> float | None:
    """The time (epoch s) of the log's first frame report: the start of training, after start-up."""
    for line in lines:
        if (stamp := STAMP.search(line)) and FRAMES.search(line):
            return datetime.datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
    return None


def true_objective_points(event_files: list[str], start: float, to_game_units: float) -> list[tuple[float, float, float]]:
    """(wall s since `start`, env steps, mean-100 in game units) from Sample Factory's TensorBoard files."""
    import tensorflow as tf  # only here: reading the peer's event files

    points = []
    for path in event_files:
        for event in _complete_events(tf, path):
            for value in event.summary.value:
                if value.tag == TRUE_OBJECTIVE_TAG:
                    # PyTorch's writer stores simple values; TensorFlow's (the tests') tensors.
                    number = value.simple_value if value.WhichOneof("value") == "simple_value" else float(
                        tf.make_ndarray(value.tensor))
                    points.append((event.wall_time - start, event.step / FRAME_SKIP, number * to_game_units))
    return sorted(points)


def _complete_events(tf, path: str):
    """The file's events up to its last complete record: the peer is stopped at the budget, sometimes while its
    writer is part-way through a record, which TensorFlow's reader raises DataLossError on."""
    events = tf.compat.v1.train.summary_iterator(path)
    while True:
        try:
            yield next(events)
        except (StopIteration, tf.errors.DataLossError):
            return


def event_files(train_dir: str) -> list[str]:
    found = []
    for folder, _, files in os.walk(train_dir):
        found += [os.path.join(folder, f) for f in files if f.startswith("events.out.tfevents")]
    return sorted(found)


def sf_command(sf_python: str, env: str, seed: int, out: str, workers: int, envs: int) -> list[str]:
    """Sample Factory's training command for one seed, its train dir `out`."""
    return [sf_python, "-m", "sf_examples.vizdoom.train_vizdoom", f"--env={env}", f"--experiment=seed{seed}",
            f"--train_dir={out}", f"--num_workers={workers}", f"--num_envs_per_worker={envs}", "--device=cpu",
            f"--seed={seed}", *PEER_ENVS[env].flags]


def run_seed(sf_python: str, seed: int, minutes: float, threshold: float, out: str, workers: int, envs: int,
             env: str = "doom_basic") -> Result:
    log_path = os.path.join(out, f"seed{seed}.log")
    command = sf_command(sf_python, env, seed, out, workers, envs)
    print("$", " ".join(command), flush=True)
    with open(log_path, "w") as log:
        # A session of its own: its workers and their ViZDoom engines all go with one killpg.
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + minutes * 60 + 120  # 2 minutes for its start-up, which the times leave out
    points: list = []
    progress = None
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(2)
            with open(log_path, errors="replace") as log:
                lines = log.readlines()
            points, progress = parse_log(lines), training_progress(lines)
            if (progress and progress[0] >= minutes * 60) or (
                    env == "doom_basic" and points and points[-1][2] >= threshold):
                break
    finally:
        stop_session(proc)
    if env != "doom_basic":  # the log's mean holds its reward shaping or scaling: the true objective instead
        with open(log_path, errors="replace") as log:
            start = log_start(log.readlines())
        points = [] if start is None else true_objective_points(
            event_files(os.path.join(out, f"seed{seed}")), start, PEER_ENVS[env].to_game_units)
    with open(os.path.join(out, f"seed{seed}_mean100.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["wall_s", "env_steps", "mean100"])
        writer.writerows(points)
    result = result_of(points, threshold)
    if progress and not points:  # no mean yet (a deathmatch's first comes after minutes): the speed from the log
        result = result._replace(rate=progress[1] / progress[0] if progress[0] > 0 else float("nan"))
    label = f"peer (Sample Factory) seed {seed}"
    # --threshold is basic.wad's 80: other scenarios report their final mean in their own unit instead.
    if env == "doom_basic":
        said = headline(label, result, threshold)
    elif points:
        said = f"{label}: final mean-100 {shown(result.final, PEER_ENVS[env].unit)} ({PEER_ENVS[env].unit})"
    else:
        said = f"{label}: no mean-100 in its TensorBoard yet ({TRUE_OBJECTIVE_TAG})"
    steps = points[-1][1] if points else progress[1] if progress else 0
    print(f"{said}; {int(steps):,} env steps at {result.rate:,.0f} env steps/s", flush=True)
    return result


def shown(value: float, unit: str) -> str:
    """A mean as printed: frags a minute, a few a minute at most, to 0.01; scores and tics to 0.1."""
    return f"{value:,.2f}" if unit == "frags per minute" else f"{value:,.1f}"


def our_curve(run_dir: str, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """(minutes, mean-100 in `unit`) at each episode of a train.py run."""
    rows = read_progress(os.path.join(run_dir, "progress.csv"))
    if unit == "frags per minute":  # a deathmatch run's column; empty in rows written before the column was
        rows = [r for r in rows if not np.isnan(r.get("frags_per_minute", float("nan")))]
        values = np.array([r["frags_per_minute"] for r in rows], np.float64)
    elif unit == "tics alive":
        with open(os.path.join(run_dir, "config.json")) as handle:
            frame_skip = json.load(handle)["frame_skip"]
        values = np.array([r["length"] * frame_skip for r in rows], np.float64)  # the last step may hold fewer tics
    else:
        values = np.array([r["reward"] for r in rows], np.float64)
    return np.array([r["wall_s"] / 60 for r in rows]), moving_mean(values, 100)


def lacks_match_column(run_dir: str) -> bool:
    """The run's progress.csv exists and has no frags_per_minute column: not a deathmatch run."""
    path = os.path.join(run_dir, "progress.csv")
    if not os.path.exists(path):
        return False
    with open(path, newline="") as handle:
        return "frags_per_minute" not in next(csv.reader(handle), [])


def value_at(minutes: np.ndarray, means: np.ndarray, at: float) -> float | None:
    """The curve's last value at or before `at` minutes (None: nothing yet, or the run ended before)."""
    if not len(minutes) or minutes[-1] < at - 0.5:
        return None
    index = np.searchsorted(minutes, at, side="right") - 1
    return float(means[index]) if index >= 0 else None


def chart_title(ours_dir: str, env: str) -> str:
    """The comparison chart's title: the map both ran, or each side's where ours ran another copy (battle2's plain
    turning beside Sample Factory's continuous-turning .cfg)."""
    theirs = PEER_ENVS[env].scenario
    with open(os.path.join(ours_dir, "config.json")) as handle:
        scenario = json.load(handle).get("scenario") or theirs
    ours = scenario_label(scenario)  # a shipped name, or a user's .cfg by its stem
    return theirs if ours == theirs else f"{ours} (doom_a3c) beside {theirs} (Sample Factory)"


def compare(ours_dir: str, env: str, peer_points: list[tuple[float, float, float]], out: str) -> list[tuple]:
    """Print and return (minute, ours, peer, ours / peer) at equal wall time; plot both curves."""
    unit = PEER_ENVS[env].unit
    minutes, means = our_curve(ours_dir, unit)
    peer_minutes = np.array([p[0] / 60 for p in peer_points])
    peer_means = np.array([p[2] for p in peer_points])
    rows = []
    for at in COMPARE_AT_MINUTES:
        ours, peer = value_at(minutes, means, at), value_at(peer_minutes, peer_means, at)
        if ours is not None and peer is not None:
            rows.append((at, ours, peer, ours / peer if peer else float("nan")))
            print(f"{at:>3} min: doom_a3c {shown(ours, unit)}, Sample Factory {shown(peer, unit)} ({unit}): "
                  f"ratio {rows[-1][3]:.2f}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4))
    axes.plot(minutes, means, label="doom_a3c (A3C)")
    axes.plot(peer_minutes, peer_means, label="Sample Factory (APPO)")
    axes.set_xlabel("minutes of training (2 cores)")
    axes.set_ylabel(f"mean of the last 100 episodes ({unit})")
    axes.set_title(chart_title(ours_dir, env))
    axes.legend()
    figure.tight_layout()
    figure.savefig(os.path.join(out, "comparison.png"), dpi=100)
    plt.close(figure)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sf-python", required=True, help="a Python with sample-factory and vizdoom installed")
    parser.add_argument("--env", default="doom_basic", choices=sorted(PEER_ENVS), help="Sample Factory's env name")
    parser.add_argument("--ours", default=None, help="a train.py model dir on the same scenario, to compare with")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--minutes", type=float, default=12.0, help="training budget per seed")
    parser.add_argument("--threshold", type=float, default=80.0,
                        help="doom_basic: stop once its mean-100 reaches this")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--envs-per-worker", type=int, default=4)
    parser.add_argument("--out", default=None, help="train dir and logs (default: a temporary folder)")
    args = parser.parse_args()
    if args.ours and PEER_ENVS[args.env].unit == "frags per minute" and lacks_match_column(args.ours):
        parser.error(f"--ours {args.ours}: its progress.csv has no frags_per_minute column; give a deathmatch run "
                     "(train.py --scenario cig)")
    out = args.out or tempfile.mkdtemp(prefix="peer_sf_")
    os.makedirs(out, exist_ok=True)
    results = [run_seed(args.sf_python, seed, args.minutes, args.threshold, out, args.workers, args.envs_per_worker,
                        args.env) for seed in args.seeds]
    if args.env == "doom_basic":
        summarize("peer (Sample Factory APPO, benchmarks/peer_sample_factory.py)", results, args.threshold,
                  args.minutes)
    if args.ours:
        with open(os.path.join(out, f"seed{args.seeds[-1]}_mean100.csv"), newline="") as handle:
            peer_points = [tuple(float(v) for v in row) for row in list(csv.reader(handle))[1:]]
        compare(args.ours, args.env, peer_points, out)
        print(f"curves: {os.path.join(out, 'comparison.png')}")
    print(f"outputs: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
