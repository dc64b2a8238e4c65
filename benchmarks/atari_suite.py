#!/usr/bin/env python
"""A suite of Atari games x seeds, scored the way the literature scores them: at equal agent steps beside
Dopamine's four agents, human-normalised, and the interquartile mean over games with a bootstrap interval.

    python benchmarks/atari_suite.py run --out DIR --agent-steps 2500000 [--games Pong Breakout] [--seeds 0 1 2]
        [--minutes M] [-- extra train.py flags]
    python benchmarks/atari_suite.py report DIR [--games ...]
    python benchmarks/atari_suite.py report --curves Pong=RUN/progress.csv Breakout=other.csv --out DIR

The games (default): Atari-5 (BattleZone, DoubleDunk, NameThisGame, Phoenix, Qbert: Aitchison, Sweetser and
Hutter, ICML 2023, the five whose scores best predict the 57-game median) and Breakout and Pong, as
`ALE/<Game>-v5` (sticky actions).

`run` trains each game x seed one after another through train.py (benchmarks/learn_atari.py's command) into
DIR/<Game>_seed<k>/, for --agent-steps (train.py --max-steps; an agent step is 4 frames) or --minutes or both
(the first reached ends the run). A run that ended by its budget leaves DIR/<Game>_seed<k>/suite_run.json and is
skipped the next time; one that was stopped part-way is resumed (train.py --resume) to the same budget, so a
killed suite goes on where it stopped. A failed run is reported and the suite goes on to the next. The report is
written after every run.

`report` (or the end of `run`) writes DIR/suite.md, DIR/suite.json and DIR/suite.png:
- per game, at 1M and 2.5M agent steps: our score per seed (with its run's agent steps/s) and their mean, on
  Dopamine's measure (the mean score of the whole games ending in the last 250k agent steps before the mark:
  benchmarks/atari_anchors.py), beside
  Dopamine's DQN, C51, Rainbow and IQN at the same steps (benchmarks/data/dopamine_sticky.json);
- human-normalised scores, (score - random) / (human - random), with the standard random and human scores
  (benchmarks/data/atari_human_random.json, which names its source);
- the interquartile mean (IQM) of the human-normalised scores of every run over the games, with a 95% stratified
  bootstrap interval (runs resampled within each game, as rliable; a fixed seed, so the output is reproducible),
  beside the IQM of Dopamine's DQN and Rainbow over the same games (their per-game means of 5 runs);
- a plot: each game's human-normalised curve, ours and Dopamine's, and the IQM curve.
A game none of whose runs reached a mark shows "-" there and is left out of that mark's IQM, with a note.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import NamedTuple

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.atari_anchors import (  # noqa: E402
    DATA_DIR,
    DOPAMINE_AGENTS,
    DOPAMINE_FILE,
    WINDOW,
    at_mark,
    window_means,
)
from benchmarks.learn_atari import train_command  # noqa: E402
from benchmarks.learn_scenarios import interquartile_mean, stratified_bootstrap_ci  # noqa: E402
from benchmarks.trainer_child import run_trainer  # noqa: E402
from doom_a3c.run.summaries import read_progress  # noqa: E402

ATARI_5 = ("BattleZone", "DoubleDunk", "NameThisGame", "Phoenix", "Qbert")
GAMES = ATARI_5 + ("Breakout", "Pong")
MARKS = (1_000_000, 2_500_000)  # agent steps
IQM_BESIDE = ("DQN", "Rainbow")  # Dopamine's agents whose IQM stands beside ours
AGENT_COLOURS = {"DQN": "C0", "C51": "C1", "Rainbow": "C2", "IQN": "C3"}  # the same in every panel; ours from C4
HUMAN_RANDOM_FILE = os.path.join(DATA_DIR, "atari_human_random.json")
DONE_FILE = "suite_run.json"  # written into a run's folder once train.py ended it by its budget
BOOTSTRAP_REPS = 2000  # rliable's default
BOOTSTRAP_SEED = 0


class UserError(Exception):
    """A mistake in the command line or the folders named: one line on stderr, exit status 2."""


class Budget(NamedTuple):
    agent_steps: int  # 0: none
    minutes: float  # 0: none


class Run(NamedTuple):
    game: str
    label: str  # "seed0", or the curve file's name
    windows: list[float | None]  # the mean score of the games ending in each 250k agent steps
    steps_per_second: float | None = None  # the run's agent steps over its wall time: what a setting costs


def agent_steps_per_second(rows: list[dict]) -> float | None:
    """The run's last progress row's agent steps over its wall time (None: no row)."""
    return rows[-1]["env_steps"] / rows[-1]["wall_s"] if rows and rows[-1]["wall_s"] > 0 else None


def mark_name(steps: int) -> str:
    return f"{steps / 1e6:g}M"


# ---- the published numbers ----------------------------------------------------------------------------------------
def load_json(path: str) -> dict:
    with open(path) as handle:
        return json.load(handle)


def human_normalised(score: float, game: str, human_random: dict) -> float:
    """0 at the random agent's score, 1 at the human tester's."""
    random, human = human_random["games"][game]["random"], human_random["games"][game]["human"]
    return (score - random) / (human - random)


def check_games(games: list[str]) -> list[str]:
    unknown = [game for game in games if game not in GAMES]
    if unknown:
        raise UserError(f"unknown game {unknown[0]!r}: the suite knows {', '.join(GAMES)}")
    return games


# ---- run: each game x seed through train.py -----------------------------------------------------------------------
def run_folder(out: str, game: str, seed: int) -> str:
    return os.path.join(out, f"{game}_seed{seed}")


def finished(run_dir: str, budget: Budget) -> bool:
    """Whether train.py already ended this run by this budget."""
    path = os.path.join(run_dir, DONE_FILE)
    return os.path.exists(path) and load_json(path).get("budget") == budget._asdict()


def trained_minutes(run_dir: str) -> float:
    """Minutes the run has trained (its progress.csv's last game: train.py keeps the clock across legs)."""
    rows = read_progress(os.path.join(run_dir, "progress.csv"))
    return rows[-1]["wall_s"] / 60 if rows else 0.0


def suite_command(game: str, seed: int, run_dir: str, budget: Budget, extra: list[str]) -> list[str]:
    """train.py for one run: new, or resumed to the same budget when an earlier leg left a checkpoint."""
    resume = os.path.exists(os.path.join(run_dir, "config.json"))
    minutes = budget.minutes
    if resume and minutes:  # --max-minutes counts each leg: give the leg what is left of the budget
        minutes = max(minutes - trained_minutes(run_dir), 0.01)
    steps = ["--max-steps", str(budget.agent_steps)] if budget.agent_steps else []
    return train_command(f"ALE/{game}-v5", seed, run_dir, minutes, resume, [*steps, *extra])


def run_suite(games: list[str], seeds: list[int], budget: Budget, out: str, extra: list[str],
              trainer=run_trainer) -> int:
    """Train every game x seed not yet finished, writing the report after each; 1 if a run failed, else 0."""
    failed = 0
    for game in games:
        for seed in seeds:
            run_dir = run_folder(out, game, seed)
            if finished(run_dir, budget):
                print(f"{game} seed {seed}: finished before, skipped", flush=True)
                continue
            command = suite_command(game, seed, run_dir, budget, extra)
            print("$", " ".join(command), flush=True)
            returncode = trainer(command)
            if returncode != 0:
                print(f"error: {game} seed {seed}: train.py exited with {returncode}", file=sys.stderr, flush=True)
                failed = 1
                continue
            with open(os.path.join(run_dir, DONE_FILE), "w") as handle:
                json.dump({"game": game, "seed": seed, "budget": budget._asdict()}, handle)
            write_folder_report(out)
    return failed


# ---- report: the scores at the marks, normalised, and their IQM -----------------------------------------------------
def seeds_in_folder(out: str, game: str) -> list[int]:
    """The seeds of `game`'s run folders (<Game>_seed<k>, as `run_folder` names them) in `out`, sorted."""
    names = os.listdir(out) if os.path.isdir(out) else []
    return sorted(int(m.group(1)) for name in names if (m := re.fullmatch(rf"{game}_seed(\d+)", name)))


def games_in_folder(out: str) -> list[str]:
    """The suite's games that have a run folder in `out`, in the suite's order: a suite run a few games at a time
    reports every game run so far, not only the last invocation's."""
    return [game for game in GAMES if seeds_in_folder(out, game)]


def read_suite_folder(out: str, games: list[str]) -> list[Run]:
    """The runs in `out`'s <Game>_seed<k> folders, for `games`, in the order of `games` then seeds."""
    if not os.path.isdir(out):
        raise UserError(f"no folder {out}")
    runs = []
    for game in games:
        for seed in seeds_in_folder(out, game):
            rows = read_progress(os.path.join(run_folder(out, game, seed), "progress.csv"))
            runs.append(Run(game, f"seed{seed}", window_means(rows), agent_steps_per_second(rows)))
    if not runs:
        raise UserError(f"no runs of {', '.join(games)} in {out} (folders named <Game>_seed<k>)")
    return runs


def read_curves(assignments: list[str]) -> list[Run]:
    """Runs from `Game=path` items (a path to a progress.csv, or a run folder holding one)."""
    runs = []
    for item in assignments:
        game, _, path = item.partition("=")
        if not path:
            raise UserError(f"--curves {item!r}: expected GAME=PATH, e.g. Pong=run/progress.csv")
        check_games([game])
        path = os.path.join(path, "progress.csv") if os.path.isdir(path) else path
        if not os.path.exists(path):
            raise UserError(f"no file {path}")
        label = os.path.basename(os.path.dirname(path)) if os.path.basename(path) == "progress.csv" else \
            os.path.splitext(os.path.basename(path))[0]
        rows = read_progress(path)
        runs.append(Run(game, label, window_means(rows), agent_steps_per_second(rows)))
    return runs


def game_at_mark(runs: list[Run], game: str, steps: int, dopamine: dict, human_random: dict) -> dict:
    """One game at one mark: our runs' scores (None: not reached), their mean and Dopamine's, and all normalised."""
    scores = {run.label: at_mark(run.windows, steps) for run in runs if run.game == game}
    reached = [score for score in scores.values() if score is not None]
    mean = float(np.mean(reached)) if reached else None
    theirs = {agent: at_mark(dopamine[game][agent], steps) for agent in DOPAMINE_AGENTS}
    speeds = {run.label: run.steps_per_second for run in runs if run.game == game}
    return {"runs": scores, "mean": mean, "dopamine": theirs, "steps_per_second": speeds,
            "normalised_runs": {label: None if score is None else human_normalised(score, game, human_random)
                                for label, score in scores.items()},
            "normalised_mean": None if mean is None else human_normalised(mean, game, human_random),
            "dopamine_normalised": {agent: human_normalised(score, game, human_random) for agent, score in
                                    theirs.items()}}


def iqm_at_mark(per_game: dict[str, dict]) -> dict:
    """IQM of every run's human-normalised score over the games that reached the mark, its stratified-bootstrap
    interval, and the IQM of Dopamine's per-game means over the same games."""
    groups = {game: [v for v in entry["normalised_runs"].values() if v is not None] for game, entry in
              per_game.items()}
    included = [game for game, values in groups.items() if values]
    result = {"games": included, "left_out": [game for game in per_game if game not in included], "runs": 0,
              "iqm": None, "ci95": None, "dopamine": {agent: None for agent in IQM_BESIDE}}
    if not included:
        return result
    flat = np.concatenate([groups[game] for game in included])
    result["runs"] = len(flat)
    result["iqm"] = float(interquartile_mean(flat))
    low, high = stratified_bootstrap_ci([np.array(groups[game]) for game in included],
                                        lambda scores: interquartile_mean(scores, axis=1), BOOTSTRAP_REPS,
                                        seed=BOOTSTRAP_SEED)
    result["ci95"] = [low, high]
    for agent in IQM_BESIDE:
        result["dopamine"][agent] = float(interquartile_mean(
            np.array([per_game[game]["dopamine_normalised"][agent] for game in included])))
    return result


def summarize(runs: list[Run], dopamine_file: str = DOPAMINE_FILE, human_random_file: str = HUMAN_RANDOM_FILE) -> dict:
    """Everything the report shows, strict-JSON-ready."""
    dopamine, human_random = load_json(dopamine_file), load_json(human_random_file)
    games = list(dict.fromkeys(run.game for run in runs))
    marks = {}
    for steps in MARKS:
        per_game = {game: game_at_mark(runs, game, steps, dopamine["games"], human_random) for game in games}
        marks[mark_name(steps)] = {"agent_steps": steps, "games": per_game, "iqm": iqm_at_mark(per_game)}
    return {"measure": f"mean score of the whole games ending in the last {WINDOW:,} agent steps before the mark",
            "normalised": human_random["normalised"], "bootstrap": {"reps": BOOTSTRAP_REPS, "seed": BOOTSTRAP_SEED},
            "sources": {"dopamine": dopamine["source"], "human_random": human_random["source"]},
            "games": games, "marks": marks}


def shown(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def markdown(summary: dict) -> list[str]:
    """One table per mark, its IQM line and its notes, then the sources."""
    count = len(summary["games"])
    lines = [f"# Atari suite: {count} game{'s' * (count > 1)}", "",
             (f"Scores: the {summary['measure']} (Dopamine's measure); HNS: human-normalised, "
              f"{summary['normalised']}."), ""]
    for name, mark in summary["marks"].items():
        lines += [f"## At {name} agent steps", "",
                  "| game | ours per run | ours | " + " | ".join(DOPAMINE_AGENTS) + " | ours HNS | "
                  + " | ".join(f"{agent} HNS" for agent in IQM_BESIDE) + " |",
                  "| --- |" + " --- |" * (len(DOPAMINE_AGENTS) + 3 + len(IQM_BESIDE))]
        for game, entry in mark["games"].items():
            per_run = ", ".join(f"{label} {shown(score)}{speed_note(entry['steps_per_second'].get(label))}"
                                for label, score in entry["runs"].items())
            lines.append(f"| {game} | {per_run} | {shown(entry['mean'])} | "
                         + " | ".join(shown(entry["dopamine"][agent]) for agent in DOPAMINE_AGENTS)
                         + f" | {shown(entry['normalised_mean'], 2)} | "
                         + " | ".join(shown(entry["dopamine_normalised"][agent], 2) for agent in IQM_BESIDE) + " |")
        lines += ["", iqm_line(mark["iqm"]), ""]
    lines += ["Sources:", f"- Dopamine: {summary['sources']['dopamine']}",
              f"- random and human scores: {summary['sources']['human_random']}"]
    return lines


def speed_note(steps_per_second: float | None) -> str:
    return "" if steps_per_second is None else f" ({steps_per_second:,.0f} steps/s)"


def iqm_line(iqm: dict) -> str:
    if iqm["iqm"] is None:
        return "IQM: no game reached this mark."
    games = len(iqm["games"])
    runs = iqm["runs"]
    text = (f"IQM of the HNS over {games} game{'s' * (games > 1)} ({runs} run{'s' * (runs > 1)}): "
            f"**{iqm['iqm']:.3f}**, 95% CI [{iqm['ci95'][0]:.3f}, {iqm['ci95'][1]:.3f}] "
            "(stratified bootstrap: runs resampled within each game"
            f"{'; one run a game gives no interval' if runs == games else ''}); Dopamine over the same games: "
            + ", ".join(f"{agent} {value:.3f}" for agent, value in iqm["dopamine"].items()) + ".")
    if iqm["left_out"]:
        text += f" Left out (no run reached the mark): {', '.join(iqm['left_out'])}."
    return text


def iqm_curve(runs: list[Run], human_random: dict) -> tuple[list[float], list[float]]:
    """IQM over the runs' human-normalised window scores, at each window in which every run has games (so the
    curve ends with the shortest run, and the runs in it stay the same)."""
    x, y = [], []
    for index in range(min(len(run.windows) for run in runs)):
        if any(run.windows[index] is None for run in runs):
            break
        x.append((index + 1) * WINDOW / 1e6)
        y.append(float(interquartile_mean(np.array([human_normalised(run.windows[index], run.game, human_random)
                                                    for run in runs]))))
    return x, y


def plot(runs: list[Run], path: str, dopamine_file: str = DOPAMINE_FILE,
         human_random_file: str = HUMAN_RANDOM_FILE) -> None:
    """One panel per game (human-normalised score against agent steps: our runs, Dopamine's agents dashed) and
    one of the IQM over games."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dopamine, human_random = load_json(dopamine_file)["games"], load_json(human_random_file)
    games = list(dict.fromkeys(run.game for run in runs))
    columns = 4
    rows = (len(games) + 1 + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3.2 * rows), squeeze=False)
    panels = list(axes.flat)
    horizon = max(len(run.windows) for run in runs)
    for panel, game in zip(panels, games):
        for agent in DOPAMINE_AGENTS:
            curve = dopamine[game][agent][:max(horizon, 4)]
            panel.plot([(i + 1) * WINDOW / 1e6 for i in range(len(curve))],
                       [human_normalised(v, game, human_random) for v in curve], "--", linewidth=1, label=agent,
                       color=AGENT_COLOURS[agent])
        for colour, run in enumerate(r for r in runs if r.game == game):
            points = [((i + 1) * WINDOW / 1e6, human_normalised(v, game, human_random))
                      for i, v in enumerate(run.windows) if v is not None]
            if points:
                panel.plot(*zip(*points), linewidth=2, label=f"ours {run.label}", color=f"C{4 + colour % 6}")
        panel.set_title(game, fontsize=10)
        panel.grid(alpha=0.3)
    iqm_panel = panels[len(games)]
    x, y = iqm_curve(runs, human_random)
    if x:
        iqm_panel.plot(x, y, linewidth=2, label="ours", color="C4")
    for agent in IQM_BESIDE:
        length = max(horizon, 4)
        iqm_panel.plot([(i + 1) * WINDOW / 1e6 for i in range(length)],
                       [float(interquartile_mean(np.array([human_normalised(dopamine[g][agent][i], g, human_random)
                                                           for g in games]))) for i in range(length)],
                       "--", linewidth=1, label=agent, color=AGENT_COLOURS[agent])
    iqm_panel.set_title("IQM over the games", fontsize=10)
    iqm_panel.grid(alpha=0.3)
    iqm_panel.legend(fontsize=7)
    panels[0].legend(fontsize=7)
    for panel in panels[len(games) + 1:]:
        panel.axis("off")
    figure.supxlabel("agent steps (millions; 4 frames each)")
    figure.supylabel("human-normalised score")
    figure.tight_layout()
    temporary = path + ".tmp.png"
    figure.savefig(temporary, dpi=80)
    plt.close(figure)
    os.replace(temporary, path)


def write_report(runs: list[Run], out: str) -> list[str]:
    """suite.md, suite.json and suite.png in `out`; returns the markdown lines."""
    os.makedirs(out, exist_ok=True)
    summary = summarize(runs)
    lines = markdown(summary)
    with open(os.path.join(out, "suite.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "suite.json"), "w") as handle:
        json.dump(summary, handle, indent=1, allow_nan=False)
    plot(runs, os.path.join(out, "suite.png"))
    return lines


def write_folder_report(out: str) -> list[str]:
    """The report of every game run so far in a suite's folder, written into it."""
    return write_report(read_suite_folder(out, games_in_folder(out)), out)


# ---- the command line -----------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="train each game x seed not yet finished, then report every game in the folder")
    run.add_argument("--out", required=True, help="the suite's folder: one run folder per game and seed, the report")
    run.add_argument("--games", nargs="+", default=list(GAMES), help=f"default: {' '.join(GAMES)}")
    run.add_argument("--seeds", type=int, nargs="+", default=[0])
    run.add_argument("--agent-steps", type=int, default=0, help="budget per run in agent steps (train.py --max-steps)")
    run.add_argument("--minutes", type=float, default=0.0, help="budget per run in minutes of training")
    report = commands.add_parser("report", help="the report of a suite's folder, or of given curves")
    report.add_argument("folder", nargs="?", default=None, help="a suite's folder (its <Game>_seed<k> runs)")
    report.add_argument("--games", nargs="+", default=list(GAMES), help="only these games of the folder")
    report.add_argument("--curves", nargs="+", default=None, metavar="GAME=PATH",
                        help="progress.csv files (or run folders) instead of a suite's folder; a game may repeat")
    report.add_argument("--out", default=None, help="where to write the report (default: the folder)")
    return parser


def main(argv: list[str] | None = None, trainer=run_trainer) -> int:
    args, extra = build_parser().parse_known_args(argv)
    extra = [e for e in extra if e != "--"]
    try:
        if args.command == "run":
            check_games(args.games)
            if args.agent_steps <= 0 and args.minutes <= 0:
                raise UserError("run needs a budget: --agent-steps N or --minutes M (or both)")
            status = run_suite(args.games, args.seeds, Budget(args.agent_steps, args.minutes), args.out, extra, trainer)
            print("\n".join(write_folder_report(args.out)))
            return status
        if extra:
            raise UserError(f"unknown arguments for report: {' '.join(extra)}")
        if args.curves:
            runs, out = read_curves(args.curves), args.out or args.folder
            if not out:
                raise UserError("report --curves needs --out DIR for its files")
        elif args.folder:
            runs, out = read_suite_folder(args.folder, check_games(args.games)), args.out or args.folder
        else:
            raise UserError("report needs a suite's folder or --curves GAME=PATH ...")
        print("\n".join(write_report(runs, out)))
        print(f"written: {', '.join(os.path.join(out, name) for name in ('suite.md', 'suite.json', 'suite.png'))}")
        return 0
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
