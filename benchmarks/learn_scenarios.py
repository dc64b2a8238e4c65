#!/usr/bin/env python
"""How well does train.py learn each ViZDoom scenario in a fixed budget? Trains a list of scenarios one after
another and writes a results table and a grid of learning curves.

    python benchmarks/learn_scenarios.py --minutes 30 --seeds 0 1 [--scenarios defend_the_center my_way_home]
        [--out DIR] [-- extra train.py flags]
    python benchmarks/learn_scenarios.py --minutes 30 --combine DIR_A DIR_B --out DIR   # seeds run in two sittings

Default: every single-player scenario ViZDoom ships, each with its preset (`python train.py --scenario NAME`).
For each scenario and seed: env steps, the final and best mean of the last 100 episodes (the game's own score),
the time at which mean-100 first reached the preset's `target_reward` (if it has one) and env steps/s; beside
them, the mean score of a uniformly random policy on the same games (`--random-episodes` episodes), so that
"it learns" has a floor to compare with. Writes DIR/results.md, DIR/results.csv and DIR/curves.png (one panel
per scenario: mean-100 against minutes, one line per seed, the target and the random policy's score dashed).
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import tempfile
from typing import NamedTuple

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.trainer_child import TrainerStopped, run_trainer_checked  # noqa: E402
from doom_a3c.summaries import moving_mean, read_progress  # noqa: E402

COLUMNS = ["scenario", "seed", "env_steps", "final_mean100", "best_mean100", "target", "minutes_to_target",
           "steps_per_s", "random_policy"]


class ScenarioRun(NamedTuple):
    scenario: str
    seed: int
    env_steps: int
    final_mean100: float
    best_mean100: float
    target: float | None  # the preset's target_reward
    minutes_to_target: float | None  # None: not reached (or no target)
    steps_per_s: float
    random_policy: float  # mean score of a uniformly random policy
    curve_minutes: np.ndarray  # [episodes]
    curve_mean100: np.ndarray  # [episodes]


def summarize_run(scenario: str, seed: int, rows: list[dict[str, float]], target: float | None,
                  random_policy: float) -> ScenarioRun:
    """One run's figures from its progress.csv rows. Mean-100 counts only once 100 episodes have ended
    (before that, the best is taken over the episodes so far)."""
    rewards = np.array([r["reward"] for r in rows], np.float64)
    means = moving_mean(rewards, 100) if len(rows) else np.zeros(0)
    full = means[99:] if len(means) >= 100 else means
    reached = None
    if target is not None:
        hit = next((i for i in range(99, len(rows)) if means[i] >= target), None)
        reached = rows[hit]["wall_s"] / 60 if hit is not None else None
    steps = int(rows[-1]["env_steps"]) if rows else 0
    wall = rows[-1]["wall_s"] if rows else 0.0
    return ScenarioRun(scenario, seed, steps, float(means[-1]) if len(means) else math.nan,
                       float(full.max()) if len(full) else math.nan, target, reached,
                       steps / wall if wall > 0 else math.nan, random_policy,
                       np.array([r["wall_s"] / 60 for r in rows]), means)


def random_policy_score(scenario: str, episodes: int, seed: int, cache_dir: str) -> float:
    """Mean game score of uniformly random actions on the scenario as its preset builds it."""
    from doom_a3c.env_batch import make_environment
    from doom_a3c.resolve import resolve_new_run

    config = resolve_new_run({"scenario": scenario, "model_dir": cache_dir})
    env = make_environment(config, seed=seed)
    rng = np.random.default_rng(seed)
    scores = []
    try:
        for _ in range(episodes):
            env.reset()
            total, game_over = 0.0, False
            while not game_over:
                step = env.step(int(rng.integers(env.num_actions)))
                total, game_over = total + step.reward, step.game_over
            scores.append(total)
    finally:
        env.close()
    return float(np.mean(scores))


def shipped_scenarios() -> list[str]:
    from doom_a3c.scenarios import shipped_scenario_names

    return shipped_scenario_names()


def preset_target(scenario: str) -> float | None:
    from doom_a3c.scenarios import load_preset

    target = load_preset(scenario).get("target_reward")
    return None if target is None else float(target)


def _shown(value: float | None, digits: int = 1) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def score_digits(run: ScenarioRun) -> int:
    """Decimals for a run's scores in the Markdown table: 2 where every score is below 10 in size (my_way_home's
    0.975 is not 1.0, predict_position's 0.14 is not 0.1), else 1."""
    scores = [run.final_mean100, run.best_mean100, run.random_policy, run.target]
    return 2 if all(abs(v) < 10 for v in scores if v is not None and not math.isnan(v)) else 1


def write_table(runs: list[ScenarioRun], out: str, minutes: float) -> None:
    with open(os.path.join(out, "results.csv"), "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for run in runs:
            writer.writerow([run.scenario, run.seed, run.env_steps, _shown(run.final_mean100, 3),
                             _shown(run.best_mean100, 3), _shown(run.target, 3), _shown(run.minutes_to_target, 2),
                             _shown(run.steps_per_s, 0), _shown(run.random_policy, 3)])
    lines = [f"Each run: {minutes:g} minutes of `python train.py --scenario NAME --seed S` (the preset's settings); "
             f"scores are the game's own, mean of the last 100 episodes.", "",
             "| scenario | seed | env steps | final mean-100 | best mean-100 | random policy | target | "
             "minutes to target | env steps/s |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for run in runs:
        to_target = _shown(run.minutes_to_target) if run.target is not None else "no target"
        if run.target is not None and run.minutes_to_target is None:
            to_target = "not reached"
        digits = score_digits(run)
        lines.append(f"| {run.scenario} | {run.seed} | {run.env_steps:,} | {_shown(run.final_mean100, digits)} | "
                     f"{_shown(run.best_mean100, digits)} | {_shown(run.random_policy, digits)} | "
                     f"{_shown(run.target, digits)} | {to_target} | {_shown(run.steps_per_s, 0)} |")
    with open(os.path.join(out, "results.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")


def plot_curves(runs: list[ScenarioRun], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenarios = list(dict.fromkeys(run.scenario for run in runs))
    columns = min(4, len(scenarios))
    rows = math.ceil(len(scenarios) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3 * rows), squeeze=False)
    for ax, scenario in zip(axes.flat, scenarios):
        mine = [run for run in runs if run.scenario == scenario]
        for run in mine:
            ax.plot(run.curve_minutes, run.curve_mean100, label=f"seed {run.seed}")
        ax.axhline(mine[0].random_policy, color="grey", linestyle=":", label="random policy")
        if mine[0].target is not None:
            ax.axhline(mine[0].target, color="green", linestyle="--", label="target")
        ax.set_title(scenario)
        ax.set_xlabel("minutes")
        ax.set_ylabel("mean-100 score")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(scenarios):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    tmp = f"{path}.tmp-{os.getpid()}"
    fig.savefig(tmp, format="png", dpi=80)
    plt.close(fig)
    os.replace(tmp, path)


def combined_runs(folders: list[str]) -> list[ScenarioRun]:
    """The runs of earlier suites, re-read from their results.csv (random policy, target) and each run's
    progress.csv, in the order given."""
    runs = []
    for folder in folders:
        with open(os.path.join(folder, "results.csv"), newline="") as handle:
            for row in csv.DictReader(handle):
                seed = int(row["seed"])
                progress = os.path.join(folder, f"{row['scenario']}-seed{seed}", "progress.csv")
                target = float(row["target"]) if row["target"] else None
                runs.append(summarize_run(row["scenario"], seed, read_progress(progress), target,
                                          float(row["random_policy"])))
    return sorted(runs, key=lambda run: (run.scenario, run.seed))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0, help="training budget per scenario and seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--scenarios", nargs="+", default=None, help="default: every shipped single-player scenario")
    parser.add_argument("--random-episodes", type=int, default=20, help="episodes of the random-policy baseline")
    parser.add_argument("--out", default=None, help="results and each run's outputs (default: a temporary folder)")
    parser.add_argument("--combine", nargs="+", metavar="DIR", default=None,
                        help="train nothing: one table and one grid from the runs of earlier suites' --out folders")
    args, extra = parser.parse_known_args()
    extra = [e for e in extra if e != "--"]
    out = args.out or tempfile.mkdtemp(prefix="learn_scenarios_")
    os.makedirs(out, exist_ok=True)
    if args.combine:
        runs = combined_runs(args.combine)
        write_table(runs, out, args.minutes)
        plot_curves(runs, os.path.join(out, "curves.png"))
        print(open(os.path.join(out, "results.md")).read(), end="")
        return 0
    runs: list[ScenarioRun] = []
    stopped: TrainerStopped | None = None
    for scenario in args.scenarios or shipped_scenarios():
        baseline = random_policy_score(scenario, args.random_episodes, seed=12_345, cache_dir=os.path.join(out, "cfg"))
        for seed in args.seeds:
            run_dir = os.path.join(out, f"{scenario}-seed{seed}")
            command = [sys.executable, os.path.join(ROOT, "train.py"), "--scenario", scenario, "--seed", str(seed),
                       "--max-minutes", str(args.minutes), "--model-dir", run_dir, "--frames-dir",
                       os.path.join(run_dir, "frames"), "--log-every-seconds", "60", *extra]
            print("$", " ".join(command), flush=True)
            try:
                run_trainer_checked(command)
            except TrainerStopped as stop:  # the trainer saved what it ran: summarise it, then stop the suite
                stopped = stop
            run = summarize_run(scenario, seed, read_progress(os.path.join(run_dir, "progress.csv")),
                                preset_target(scenario), baseline)
            runs.append(run)
            digits = score_digits(run)
            print(f"{scenario} seed {seed}: final mean-100 {run.final_mean100:.{digits}f} (random policy "
                  f"{baseline:.{digits}f}), best {run.best_mean100:.{digits}f}, {run.env_steps:,} env steps", flush=True)
            write_table(runs, out, args.minutes)  # after every run: a long suite keeps what it has measured
            if stopped:
                break
        if stopped:
            break
    plot_curves(runs, os.path.join(out, "curves.png"))
    print(f"results: {os.path.join(out, 'results.md')}, {os.path.join(out, 'results.csv')}, "
          f"{os.path.join(out, 'curves.png')}")
    if stopped:
        raise stopped
    return 0


if __name__ == "__main__":
    sys.exit(main())
