#!/usr/bin/env python
"""How well does train.py learn each ViZDoom scenario in a fixed budget? Trains a list of scenarios one after
another and writes a results table and a grid of learning curves.

    python benchmarks/learn_scenarios.py --minutes 30 --seeds 0 1 2 [--scenarios defend_the_center my_way_home]
        [--no-preset] [--out DIR] [-- extra train.py flags]
    python benchmarks/learn_scenarios.py --minutes 15 --seeds 0 1 2 --scenarios path/to/maze.cfg \
        --target maze=0.9 [--random-policy maze=-0.1]                         # a user's own map
    python benchmarks/learn_scenarios.py --minutes 30 --combine DIR_A DIR_B --out DIR   # seeds run at different times

Default: every single-player scenario ViZDoom ships, each with its preset (`python train.py --scenario NAME`);
`--no-preset` runs them on the defaults alone (`python train.py --scenario NAME --no-preset`). A scenario may also
be a path to a user's own .cfg or .wad: it is labelled by its file name (`maze` for path/to/maze.cfg), and has a
target only where `--target` gives one.
For each scenario and seed: env steps, the final and best mean of the last 100 episodes (the game's own score),
the time at which mean-100 first reached the target (the preset's `target_reward`, or `--target`) and env
steps/s; beside them, the mean score of a uniformly random policy on the same games (`--random-episodes`
episodes, or `--random-policy`), so that "it learns" has a floor to compare with. Writes DIR/results.md,
DIR/results.csv and DIR/curves.png (one panel per scenario: mean-100 against minutes, one line per seed, the
target and the random policy's score dashed).

The summary (in results.md, and as strict JSON in DIR/results_summary.json), as rliable recommends (Agarwal et
al. 2021, google-research/rliable): per scenario, the mean over seeds of the final mean-100 with a 95% percentile
bootstrap interval (fewer than 3 seeds are flagged); across scenarios, the interquartile mean (IQM) of scores
normalised so that the random policy is 0 and the target 1, with a 95% stratified-bootstrap interval (seeds
resampled within each scenario). Runs with and without presets are summarised apart.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import tempfile
from typing import NamedTuple

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.trainer_child import TrainerStopped, run_trainer_checked  # noqa: E402
from doom_a3c.run.summaries import moving_mean, read_progress  # noqa: E402

COLUMNS = ["scenario", "seed", "env_steps", "final_mean100", "best_mean100", "target", "minutes_to_target",
           "steps_per_s", "random_policy", "preset", "source"]
MIN_SEEDS = 3  # fewer seeds: the summary says its intervals are not to be trusted
BOOTSTRAP_REPS = 2000  # rliable's default for interval estimates
CONFIDENCE = 0.95


class ScenarioRun(NamedTuple):
    scenario: str
    seed: int
    env_steps: int
    final_mean100: float
    best_mean100: float
    target: float | None  # the preset's target_reward, or --target's
    minutes_to_target: float | None  # None: not reached (or no target)
    steps_per_s: float
    random_policy: float | None  # mean score of a uniformly random policy; None: not measured
    curve_minutes: np.ndarray  # [episodes]
    curve_mean100: np.ndarray  # [episodes]
    preset: bool = True  # False: trained with --no-preset
    source: str = ""  # the --scenario value given to train.py (a name, or the path to a user's own file)


def summarize_run(scenario: str, seed: int, rows: list[dict[str, float]], target: float | None,
                  random_policy: float | None, preset: bool = True, source: str = "") -> ScenarioRun:
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
                       np.array([r["wall_s"] / 60 for r in rows]), means, preset, source or scenario)


def random_policy_score(scenario: str, episodes: int, seed: int, cache_dir: str, preset: bool = True) -> float:
    """Mean game score of uniformly random actions on the scenario as the run builds it (its preset's actions,
    or the defaults' with `preset=False`)."""
    from doom_a3c.envs.factory import make_environment
    from doom_a3c.run.resolve import resolve_new_run

    given = {"scenario": scenario, "model_dir": cache_dir}
    config = resolve_new_run(given if preset else {**given, "preset": False})
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
    from doom_a3c.envs.doom.scenario_files import shipped_scenario_names

    return shipped_scenario_names()


def preset_target(scenario: str, cache_dir: str = "models") -> float | None:
    """The preset's target_reward for a scenario name or file (a fact of the map, also for --no-preset runs);
    None for a user's own map, which has no preset."""
    from doom_a3c.run.presets import load_preset
    from doom_a3c.envs.scenario import scenario_name

    target = load_preset(scenario_name(scenario, cache_dir)).get("target_reward")
    return None if target is None else float(target)


def has_preset(scenario: str, cache_dir: str = "models") -> bool:
    """Whether train.py finds a preset for the scenario: a user's own map has none, and then runs on
    scenarios/defaults/doom.toml, as a shipped map does with --no-preset (the summary groups them so)."""
    from doom_a3c.run.presets import load_preset
    from doom_a3c.envs.scenario import scenario_name

    return bool(load_preset(scenario_name(scenario, cache_dir)))


def scenario_label(scenario: str) -> str:
    """The name a scenario goes by in the tables and run folders: a shipped name as given, a file by its stem
    (`maze` for path/to/maze.cfg)."""
    if os.sep in scenario or scenario.endswith((".cfg", ".wad")) and os.path.exists(scenario):
        return os.path.splitext(os.path.basename(scenario))[0]
    return scenario


def run_folder(label: str, seed: int, preset: bool) -> str:
    return f"{label}-seed{seed}" if preset else f"{label}-no-preset-seed{seed}"


def parse_assignments(items: list[str], option: str) -> dict[str, float]:
    """`["maze=0.9", "arena=15"]` -> {"maze": 0.9, "arena": 15.0}; ValueError names the bad item."""
    values = {}
    for item in items:
        name, _, value = item.rpartition("=")
        try:
            values[name] = float(value)
        except ValueError:
            name = ""
        if not name:
            raise ValueError(f"{option} {item!r}: expected NAME=NUMBER, e.g. maze=0.9")
    return values


# ---- the summary over seeds and scenarios (rliable's recommendations, in NumPy) -----------------------------------
def normalized_score(score: float, random_policy: float | None, target: float | None) -> float | None:
    """0 at the random policy's score, 1 at the target; None where either is missing or they coincide."""
    if random_policy is None or target is None or target == random_policy or math.isnan(random_policy):
        return None
    return (score - random_policy) / (target - random_policy)


def interquartile_mean(scores: np.ndarray, axis: int | None = None) -> np.ndarray:
    """The mean of the middle 50% of the scores (rliable's `aggregate_iqm`): 25% cut from each end."""
    from scipy.stats import trim_mean

    return trim_mean(scores, proportiontocut=0.25, axis=axis)


def stratified_bootstrap_ci(groups: list[np.ndarray], statistic, reps: int = BOOTSTRAP_REPS,
                            confidence: float = CONFIDENCE, seed: int = 0) -> tuple[float, float]:
    """Percentile interval of `statistic` over resamples in which each group (a scenario's seeds) is resampled
    with replacement within itself, keeping its size (rliable's `StratifiedBootstrap`). `statistic` maps a
    [reps, runs] array (the groups side by side) to [reps]."""
    rng = np.random.default_rng(seed)
    resampled = [np.asarray(g, np.float64)[rng.integers(0, len(g), size=(reps, len(g)))] for g in groups]
    values = statistic(np.concatenate(resampled, axis=1))  # [reps]
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def _mean_rows(scores: np.ndarray) -> np.ndarray:
    return scores.mean(axis=1)


def _iqm_rows(scores: np.ndarray) -> np.ndarray:
    return interquartile_mean(scores, axis=1)


def summarize_suite(runs: list[ScenarioRun], reps: int = BOOTSTRAP_REPS, seed: int = 0) -> dict:
    """Per scenario (and preset or not): seeds, mean final mean-100 and its bootstrap interval, the normalised
    mean; per preset setting: the IQM of normalised scores over every run of the scenarios that have a target
    and a random policy's score, with its stratified-bootstrap interval. Strict-JSON-ready (no NaN)."""
    groups: dict[tuple[str, bool], list[ScenarioRun]] = {}
    for run in runs:
        if not math.isnan(run.final_mean100):
            groups.setdefault((run.scenario, run.preset), []).append(run)
    scenarios, normalized_groups = [], {True: [], False: []}
    for (label, preset), mine in groups.items():
        scores = np.array([run.final_mean100 for run in mine])
        low, high = stratified_bootstrap_ci([scores], _mean_rows, reps, seed=seed)
        target, random_policy = mine[0].target, mine[0].random_policy
        normalized = [normalized_score(s, random_policy, target) for s in scores]
        entry = {"scenario": label, "preset": preset, "seeds": sorted(run.seed for run in mine),
                 "mean": float(scores.mean()), "ci95": [low, high], "target": target, "random_policy": random_policy,
                 "normalized_mean": None if None in normalized else float(np.mean(normalized)),
                 "note": "" if len(mine) >= MIN_SEEDS else f"{len(mine)} seed{'s' * (len(mine) > 1)}: fewer than "
                                                           f"{MIN_SEEDS}, the interval is not to be trusted"}
        scenarios.append(entry)
        if None not in normalized:
            normalized_groups[preset].append(np.array(normalized))
    aggregates = []
    for preset in (True, False):
        included = [e for e in scenarios if e["preset"] == preset and e["normalized_mean"] is not None]
        left_out = [e["scenario"] for e in scenarios if e["preset"] == preset and e["normalized_mean"] is None]
        if not included and not left_out:
            continue
        aggregate = {"preset": preset, "scenarios": [e["scenario"] for e in included], "left_out": left_out,
                     "runs": int(sum(len(g) for g in normalized_groups[preset])), "iqm": None, "ci95": None,
                     "note": ""}
        if included:
            flat = np.concatenate(normalized_groups[preset])
            aggregate["iqm"] = float(interquartile_mean(flat))
            aggregate["ci95"] = list(stratified_bootstrap_ci(normalized_groups[preset], _iqm_rows, reps, seed=seed))
            few = [e["scenario"] for e in included if len(e["seeds"]) < MIN_SEEDS]
            if few:
                aggregate["note"] = f"fewer than {MIN_SEEDS} seeds in {', '.join(few)}: the interval is too narrow"
        aggregates.append(aggregate)
    return {"score": "final mean of the last 100 episodes, the game's own score", "confidence": CONFIDENCE,
            "bootstrap_reps": reps, "min_seeds": MIN_SEEDS, "scenarios": scenarios, "aggregates": aggregates}


def summary_markdown(summary: dict, digits: dict[str, int]) -> list[str]:
    """results.md's summary section: a row per scenario, a line per aggregate."""
    lines = ["", "## Summary over seeds", "",
             f"Per scenario: mean over seeds of the final mean-100, with a {summary['confidence']:.0%} percentile "
             f"bootstrap interval ({summary['bootstrap_reps']:,} resamples of the seeds); normalised: the random "
             "policy's score is 0, the target 1.", "",
             "| scenario | preset | seeds | mean | 95% CI | normalised mean | note |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for e in summary["scenarios"]:
        d = digits.get(e["scenario"], 1)
        normalized = "" if e["normalized_mean"] is None else f"{e['normalized_mean']:.2f}"
        lines.append(f"| {e['scenario']} | {'yes' if e['preset'] else 'no'} | {len(e['seeds'])} | {e['mean']:.{d}f} | "
                     f"[{e['ci95'][0]:.{d}f}, {e['ci95'][1]:.{d}f}] | {normalized} | {e['note']} |")
    for a in summary["aggregates"]:
        which = "with presets" if a["preset"] else "without presets (`--no-preset`)"
        if a["iqm"] is None:
            lines.append(f"\nAcross scenarios {which}: no IQM (no scenario has both a target and a random "
                         f"policy's score; give them with `--target NAME=VALUE`, `--random-policy NAME=VALUE`).")
            continue
        count = len(a["scenarios"])
        text = (f"\nAcross {count} scenario{'s' * (count > 1)} {which}: interquartile mean of the normalised scores "
                f"({a['runs']} run{'s' * (a['runs'] > 1)}) **{a['iqm']:.2f}**, 95% CI [{a['ci95'][0]:.2f}, {a['ci95'][1]:.2f}] "
                f"(stratified bootstrap: seeds resampled within each scenario).")
        if a["left_out"]:
            text += f" Left out (no target or random policy's score): {', '.join(a['left_out'])}."
        if a["note"]:
            text += f" Note: {a['note']}."
        lines.append(text)
    return lines


def _shown(value: float | None, digits: int = 1) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def score_digits(run: ScenarioRun) -> int:
    """Decimals for a run's scores in the Markdown table: 2 where every score is below 10 in size (my_way_home's
    0.975 is not 1.0, predict_position's 0.14 is not 0.1), else 1."""
    scores = [run.final_mean100, run.best_mean100, run.random_policy, run.target]
    return 2 if all(abs(v) < 10 for v in scores if v is not None and not math.isnan(v)) else 1


def write_table(runs: list[ScenarioRun], out: str, minutes: float) -> None:
    """results.csv, results.md (the runs, then the summary) and results_summary.json."""
    with open(os.path.join(out, "results.csv"), "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for run in runs:
            writer.writerow([run.scenario, run.seed, run.env_steps, _shown(run.final_mean100, 3),
                             _shown(run.best_mean100, 3), _shown(run.target, 3), _shown(run.minutes_to_target, 2),
                             _shown(run.steps_per_s, 0), _shown(run.random_policy, 3),
                             "yes" if run.preset else "no", run.source])
    presets = {run.preset for run in runs}
    settings = ("the preset's settings" if presets == {True} else
                "no preset: scenarios/defaults/doom.toml, a user's map or `--no-preset`" if presets == {False} else
                "with the preset, or scenarios/defaults/doom.toml where the preset column says no")
    lines = [f"Each run: {minutes:g} minutes of `python train.py --scenario NAME --seed S` ({settings}); "
             f"scores are the game's own, mean of the last 100 episodes.", "",
             "| scenario | seed | env steps | final mean-100 | best mean-100 | random policy | target | "
             "minutes to target | env steps/s | preset |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for run in runs:
        to_target = _shown(run.minutes_to_target) if run.target is not None else "no target"
        if run.target is not None and run.minutes_to_target is None:
            to_target = "not reached"
        digits = score_digits(run)
        lines.append(f"| {run.scenario} | {run.seed} | {run.env_steps:,} | {_shown(run.final_mean100, digits)} | "
                     f"{_shown(run.best_mean100, digits)} | {_shown(run.random_policy, digits)} | "
                     f"{_shown(run.target, digits)} | {to_target} | {_shown(run.steps_per_s, 0)} | "
                     f"{'yes' if run.preset else 'no'} |")
    summary = summarize_suite(runs)
    lines += summary_markdown(summary, {run.scenario: score_digits(run) for run in runs})
    with open(os.path.join(out, "results.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "results_summary.json"), "w") as handle:
        json.dump(summary, handle, indent=1, allow_nan=False)
        handle.write("\n")


def plot_curves(runs: list[ScenarioRun], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scenarios = list(dict.fromkeys((run.scenario, run.preset) for run in runs))
    columns = min(4, len(scenarios))
    rows = math.ceil(len(scenarios) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3 * rows), squeeze=False)
    for ax, (scenario, preset) in zip(axes.flat, scenarios):
        mine = [run for run in runs if (run.scenario, run.preset) == (scenario, preset)]
        for run in mine:
            ax.plot(run.curve_minutes, run.curve_mean100, label=f"seed {run.seed}")
        if mine[0].random_policy is not None:
            ax.axhline(mine[0].random_policy, color="grey", linestyle=":", label="random policy")
        if mine[0].target is not None:
            ax.axhline(mine[0].target, color="green", linestyle="--", label="target")
        ax.set_title(scenario if preset else f"{scenario} (no preset)")
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
    """The runs of earlier suites, re-read from their results.csv (random policy, target, preset) and each run's
    progress.csv, sorted by scenario, preset first, then seed. A results.csv from before the preset column was
    added holds preset runs only."""
    runs = []
    for folder in folders:
        with open(os.path.join(folder, "results.csv"), newline="") as handle:
            for row in csv.DictReader(handle):
                seed, preset = int(row["seed"]), row.get("preset", "yes") != "no"
                progress = os.path.join(folder, run_folder(row["scenario"], seed, preset), "progress.csv")
                target = float(row["target"]) if row["target"] else None
                random_policy = float(row["random_policy"]) if row["random_policy"] else None
                runs.append(summarize_run(row["scenario"], seed, read_progress(progress), target, random_policy,
                                          preset, row.get("source") or row["scenario"]))
    return sorted(runs, key=lambda run: (run.scenario, not run.preset, run.seed))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0, help="training budget per scenario and seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                        help=f"the summary's intervals need at least {MIN_SEEDS}")
    parser.add_argument("--scenarios", nargs="+", default=None,
                        help="shipped names or paths to your own .cfg/.wad (default: every shipped single-player "
                             "scenario)")
    parser.add_argument("--no-preset", action="store_true",
                        help="train on the defaults alone: train.py --no-preset (the target still comes from the "
                             "preset: it is a fact of the map)")
    parser.add_argument("--target", action="append", default=[], metavar="NAME=VALUE",
                        help="a scenario's target score (NAME as in the table: maze for path/to/maze.cfg); "
                             "overrides the preset's; repeat for several")
    parser.add_argument("--random-policy", action="append", default=[], metavar="NAME=VALUE",
                        help="a scenario's random-policy score, instead of measuring it; repeat for several")
    parser.add_argument("--random-episodes", type=int, default=20,
                        help="episodes of the random-policy baseline (0: none, the column stays empty)")
    parser.add_argument("--out", default=None, help="results and each run's outputs (default: a temporary folder)")
    parser.add_argument("--combine", nargs="+", metavar="DIR", default=None,
                        help="train nothing: one table and one grid from the runs of earlier suites' --out folders")
    args, extra = parser.parse_known_args()
    extra = [e for e in extra if e != "--"]
    try:
        targets = parse_assignments(args.target, "--target")
        random_scores = parse_assignments(args.random_policy, "--random-policy")
    except ValueError as error:
        parser.error(str(error))
    out = args.out or tempfile.mkdtemp(prefix="learn_scenarios_")
    os.makedirs(out, exist_ok=True)
    if args.combine:
        runs = combined_runs(args.combine)
        write_table(runs, out, args.minutes)
        plot_curves(runs, os.path.join(out, "curves.png"))
        print(open(os.path.join(out, "results.md")).read(), end="")
        return 0
    scenarios = args.scenarios or shipped_scenarios()
    labels = [scenario_label(scenario) for scenario in scenarios]
    if len(set(labels)) < len(labels):
        parser.error(f"two scenarios share a name in {labels}: rename one of the files")
    unknown = sorted((set(targets) | set(random_scores)) - set(labels))
    if unknown:
        parser.error(f"--target/--random-policy name no scenario of this suite: {unknown} (names: {labels})")
    cache_dir = os.path.join(out, "cfg")
    runs: list[ScenarioRun] = []
    stopped: TrainerStopped | None = None
    for scenario, label in zip(scenarios, labels):
        preset = not args.no_preset and has_preset(scenario, cache_dir)
        target = targets[label] if label in targets else preset_target(scenario, cache_dir)
        baseline = random_scores.get(label)
        if baseline is None and args.random_episodes > 0:
            baseline = random_policy_score(scenario, args.random_episodes, seed=12_345, cache_dir=cache_dir,
                                           preset=preset)
        for seed in args.seeds:
            run_dir = os.path.join(out, run_folder(label, seed, preset))
            command = [sys.executable, os.path.join(ROOT, "train.py"), "--scenario", scenario, "--seed", str(seed),
                       "--max-minutes", str(args.minutes), "--model-dir", run_dir, "--frames-dir",
                       os.path.join(run_dir, "frames"), "--log-every-seconds", "60",
                       *(["--no-preset"] if args.no_preset else []), *extra]
            print("$", " ".join(command), flush=True)
            try:
                run_trainer_checked(command)
            except TrainerStopped as stop:  # the trainer saved what it ran: summarise it, then stop the suite
                stopped = stop
            run = summarize_run(label, seed, read_progress(os.path.join(run_dir, "progress.csv")), target, baseline,
                                preset, scenario)
            runs.append(run)
            digits = score_digits(run)
            floor = "none" if baseline is None else f"{baseline:.{digits}f}"
            print(f"{label} seed {seed}: final mean-100 {run.final_mean100:.{digits}f} (random policy {floor}), "
                  f"best {run.best_mean100:.{digits}f}, {run.env_steps:,} env steps", flush=True)
            write_table(runs, out, args.minutes)  # after every run: a long suite keeps what it has measured
            if stopped:
                break
        if stopped:
            break
    plot_curves(runs, os.path.join(out, "curves.png"))
    print(f"results: {os.path.join(out, 'results.md')}, {os.path.join(out, 'results_summary.json')}, "
          f"{os.path.join(out, 'results.csv')}, {os.path.join(out, 'curves.png')}")
    if stopped:
        raise stopped
    return 0


if __name__ == "__main__":
    sys.exit(main())
