#!/usr/bin/env python
"""The precision and XLA speed table: default training's env steps/s with each way of running the network, against
a base commit, back to back.

    python benchmarks/tools/network_speed.py --base 01f8852 --minutes 2 --repeats 2 \
        --scenarios basic.wad ALE/Breakout-v5 --variants float32 bfloat16 jit bfloat16+jit

Each run is a real `train.py --scenario S --max-minutes M` of the scenario's defaults (learning included); the
base commit's runs come from a `git worktree` of it in a temporary folder, with no extra flag (it may predate
them). Runs alternate (base, then each variant, per scenario, per repeat) so that a drift of the machine's speed
falls on all of them alike. env steps/s is counted between the first game that ends after the warm-up and the
last (benchmarks/throughput.py's rule). Reported: the median over repeats, the spread (min-max) and the ratio of
medians to the base's.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/tools/ is two below
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from throughput import run_mode  # noqa: E402

# variant -> train.py flags of this checkout (--precision and --jit-compile)
VARIANTS = {
    "float32": ["--precision", "float32"],
    "bfloat16": ["--precision", "bfloat16"],
    "jit": ["--precision", "float32", "--jit-compile"],
    "bfloat16+jit": ["--precision", "bfloat16", "--jit-compile"],
}


def run_train(root: str, scenario: str, flags: list[str], args: argparse.Namespace, out: str, name: str) -> float:
    """One train.py run of `root`'s checkout (benchmarks/throughput.py's run_mode); its env steps/s after the warm-up."""
    run_args = argparse.Namespace(scenario=scenario, minutes=args.minutes, warmup=args.warmup)
    rate = run_mode(name, flags, run_args, [], out, root=root)["steps_per_s"]
    print(f"  {rate:.0f} env steps/s", flush=True)
    return rate


def base_worktree(commit: str, folder: str) -> str:
    path = os.path.join(folder, "base")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", path, commit], check=True,
                   stdout=subprocess.DEVNULL)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="01f8852", help="commit to compare against (its defaults, no flags)")
    parser.add_argument("--scenarios", nargs="+", default=["basic.wad", "ALE/Breakout-v5"])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--minutes", type=float, default=2.0, help="training time of each run")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds left out of the rate (start-up, tracing)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", default=None, help="folder for the runs and network_speed.json")
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="network_speed_")
    os.makedirs(out, exist_ok=True)
    base = base_worktree(args.base, tempfile.mkdtemp(prefix="network_speed_base_"))
    rates: dict[str, dict[str, list[float]]] = {s: {v: [] for v in ["base", *args.variants]} for s in args.scenarios}
    try:
        for repeat in range(args.repeats):
            for scenario in args.scenarios:
                tag = scenario.replace("/", "_")
                rates[scenario]["base"].append(run_train(base, scenario, [], args, out, f"r{repeat}_{tag}_base"))
                for variant in args.variants:
                    rates[scenario][variant].append(run_train(ROOT, scenario, VARIANTS[variant], args, out,
                                                              f"r{repeat}_{tag}_{variant}"))
    finally:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", base], check=False)
    with open(os.path.join(out, "network_speed.json"), "w") as handle:
        json.dump({"base": args.base, "minutes": args.minutes, "rates": rates}, handle, indent=1)
    print(f"\n{args.minutes:g}-minute runs, {args.repeats} repeat(s), {os.cpu_count()} CPU cores; base {args.base}")
    for scenario, by_variant in rates.items():
        base_median = statistics.median(by_variant["base"])
        print(f"\n{scenario}\n{'variant':<16}{'env steps/s (median)':>22}{'min-max':>16}{'x base':>8}")
        for variant, values in by_variant.items():
            median = statistics.median(values)
            print(f"{variant:<16}{median:>22.0f}{f'{min(values):.0f}-{max(values):.0f}':>16}"
                  f"{median / base_median:>8.2f}")
    print(f"outputs: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
