#!/usr/bin/env python
"""Training throughput of each trainer mode on one scenario, measured one after another in one run.

    python benchmarks/throughput.py [--minutes 1.5] [--modes a3c-e1 a3c-batched ga3c] [-- extra train.py flags]
    python benchmarks/throughput.py --minutes 6 --repeats 3 --modes a3c-no-eval a3c-eval a3c-eval-1min
    python benchmarks/throughput.py --scenario basic_audio --minutes 3 --repeats 2 --modes heard deaf -- \
        --learning-rate 1e-9

The second measures evaluation during training's cost on basic.wad: the modes alternate within each repeat, and
the ratio column is env steps/s with evaluation over without (docs/measuring/evaluation.md). The third measures what
hearing the game costs (docs/defaults/audio.md), on a policy kept untrained so that both play the same game.

Each mode is a real `train.py` run (learning included) in a temporary folder. Reported per mode:
environment steps per second and game frames per second (steps x frame skip) after a warm-up that
excludes start-up and tf.function tracing, the ratio to the first mode, and memory: the resident size
of the trainer and every process under it (game processes; for `ray`, the local Ray instance's own
processes, the worker actors and the parameter server), early in the run (at 25% of it), at its peak and
late (at 90%, before the final save and the shutdown free memory; growth = late / early - 1: a leak shows
as growth that keeps rising with --minutes), and the size at every tenth of the run (the whole series,
one sample a second, in <mode>/rss.csv).
`ray` is `--distributed ray` on a local Ray instance: the same A3C workers, each in its own process,
pushing gradients to a parameter-server process.
Only ratios measured in the same run mean much on a shared machine.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from doom_a3c.run.summaries import read_progress  # noqa: E402

# name -> train.py flags. "a3c-batched" is the scenario's preset (basic.wad: A3C, 42x42 frames x 8 games per
# worker, 10-step rollouts), "ga3c" the same with the GA3C trainer; every mode names its trainer, whatever a preset says;
# "a3c-e1" is the starting recipe (84x84, one game per worker, 30-step rollouts); "a3c-e4-84" the default before the
# preset (84x84, 4 games per worker, 30-step rollouts). "ray" runs A3C workers as Ray actors.
A3C = ["--trainer", "a3c"]
MODES = {
    "a3c-e1": [*A3C, "--envs-per-worker", "1", "--env-threads", "1", "--frame-size", "84", "--rollout", "30"],
    "a3c-e4-84": [*A3C, "--envs-per-worker", "4", "--frame-size", "84", "--rollout", "30"],
    "a3c-batched": A3C,
    "ga3c": ["--trainer", "ga3c"],
    "ray": ["--distributed", "ray"],
    # Evaluation during training's cost (docs/measuring/evaluation.md): the preset without it, with its defaults
    # (every 5 minutes: runs of 6 minutes or more hold one), and every minute (5 times as often: a cost 5 times as
    # easy to see).
    "a3c-no-eval": [*A3C, "--no-evaluate"],
    "a3c-eval": [*A3C, "--evaluate"],
    "a3c-eval-1min": [*A3C, "--evaluate", "--eval-every-minutes", "1"],
    # What hearing costs (docs/defaults/audio.md): basic_audio with its sound and without, the learning rate given
    # tiny (--scenario basic_audio -- --learning-rate 1e-9) so that both play the same untrained game.
    "heard": [*A3C, "--no-evaluate", "--audio"],
    "deaf": [*A3C, "--no-evaluate", "--no-audio"],
}


def children_by_parent() -> dict[int, list[int]]:
    """One scan of /proc: parent pid -> child pids."""
    found: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        found.setdefault(parent, []).append(int(entry))
    return found


def _rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def tree_rss_mib(pid: int) -> float:
    """Resident size of a process and all its descendants (the ViZDoom engines run as child processes; a local
    Ray instance's workers are children of its raylet, itself a child of train.py)."""
    children = children_by_parent()
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += _rss_mib(current)
        todo.extend(children.get(current, []))
    return total


def steps_per_second(rows: list[dict[str, float]], warmup_s: float) -> float:
    """Rate between the first episode that ends after the warm-up and the last one."""
    after = [r for r in rows if r["wall_s"] >= warmup_s]
    if len(after) < 2 or after[-1]["wall_s"] <= after[0]["wall_s"]:
        return float("nan")
    return (after[-1]["env_steps"] - after[0]["env_steps"]) / (after[-1]["wall_s"] - after[0]["wall_s"])


def run_mode(name: str, flags: list[str], args: argparse.Namespace, extra: list[str], out: str,
             root: str = ROOT) -> dict:
    """One train.py run of the checkout in `root` (this one, or another commit's worktree): its rate and memory."""
    run_dir = os.path.join(out, name)
    command = [sys.executable, os.path.join(root, "train.py"), "--scenario", args.scenario,
               "--max-minutes", str(args.minutes), "--model-dir", run_dir, "--frames-dir",
               os.path.join(run_dir, "frames"), "--gif-every", "0", "--log-every-seconds", "30", *flags, *extra]
    print("$", " ".join(command), flush=True)
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, cwd=root)
    start = time.time()
    samples: list[tuple[float, float]] = []
    while process.poll() is None:
        samples.append((time.time() - start, tree_rss_mib(process.pid)))
        time.sleep(1.0)
    if process.returncode != 0:
        raise SystemExit(f"error: mode {name} exited with {process.returncode}")
    with open(os.path.join(run_dir, "config.json")) as handle:
        config = json.load(handle)
    frame_skip = config["frame_skip"]  # the saved config is resolved: the preset's value, concrete
    rate = steps_per_second(read_progress(os.path.join(run_dir, "progress.csv")), args.warmup)
    with open(os.path.join(run_dir, "rss.csv"), "w") as handle:  # the whole series, to see a trend
        handle.write("wall_s,rss_mib\n" + "".join(f"{t:.1f},{m:.1f}\n" for t, m in samples))
    live = [m for t, m in samples if m > 0]
    return {"mode": name, "steps_per_s": rate, "frames_per_s": rate * frame_skip,
            "rss_early_mib": rss_at(samples, 0.25), "rss_peak_mib": max(live, default=float("nan")),
            "rss_late_mib": rss_at(samples, 0.9), "rss_deciles": [rss_at(samples, k / 10) for k in range(1, 10)]}


def rss_at(samples: list[tuple[float, float]], fraction: float) -> float:
    """The first live sample at or after `fraction` of the run."""
    total = samples[-1][0] if samples else 0.0
    return next((m for t, m in samples if t >= fraction * total and m > 0), float("nan"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=1.5, help="training time per mode")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds left out of the rate (start-up, tracing)")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--scenario", default="basic.wad")
    parser.add_argument("--repeats", type=int, default=1, help="run the list of modes this many times; medians reported")
    args, extra = parser.parse_known_args()
    extra = [e for e in extra if e != "--"]
    out = tempfile.mkdtemp(prefix="throughput_")
    results: dict[str, list[dict]] = {name: [] for name in args.modes}
    for repeat in range(args.repeats):
        for name in args.modes:
            results[name].append(run_mode(name, MODES[name], args, extra, os.path.join(out, f"r{repeat}")))
    median = {name: {key: statistics.median(r[key] for r in runs) for key in runs[0]
                     if key not in ("mode", "rss_deciles")}
              for name, runs in results.items()}
    base = median[args.modes[0]]["steps_per_s"]
    print(f"\n{args.scenario}, {args.minutes:g} min per mode, {args.repeats} repeat(s), medians; "
          f"{os.cpu_count()} CPU cores")
    print(f"{'mode':<14}{'env steps/s':>12}{'frames/s':>10}{'ratio':>7}{'RSS early':>11}{'peak':>8}{'late':>8}{'growth':>8}")
    for name in args.modes:
        m = median[name]
        growth = m["rss_late_mib"] / m["rss_early_mib"] - 1
        print(f"{name:<14}{m['steps_per_s']:>12.0f}{m['frames_per_s']:>10.0f}{m['steps_per_s'] / base:>7.2f}"
              f"{m['rss_early_mib']:>9.0f}Mi{m['rss_peak_mib']:>6.0f}Mi{m['rss_late_mib']:>6.0f}Mi{growth:>+8.1%}")
    print("\nresident size (MiB) at 10%, 20%, ... 90% of each run (the first repeat; whole series in <mode>/rss.csv)")
    for name in args.modes:
        print(f"{name:<14}" + " ".join(f"{m:6.0f}" for m in results[name][0]["rss_deciles"]))
    print(f"outputs: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
