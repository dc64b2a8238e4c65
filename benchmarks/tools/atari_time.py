#!/usr/bin/env python
"""Where an Atari worker's time goes: the emulator, preprocessing, the forward pass and learning, per agent step.

    python benchmarks/tools/atari_time.py --game Breakout [--rollouts 100] [--train-seconds 90] [--out DIR]
                                    [-- extra train.py flags]

One A3C worker, the trainer's own (`doom_a3c.modes.a3c.A3CWorker`, built by `doom_a3c.modes.build` from the config
a fresh `train.py --scenario ALE/<Game>-v5` resolves: scenarios/atari.toml's 4 games and 20-step rollouts, 84x84 grey,
frame skip 4), plays and learns in this process, one thing at a time: its games are stepped here (not in a child
process) by one thread. Each part is timed around its own calls, so every figure is one core's time:

- emulator: with ale-py's vector env (the default), the whole `AleVectorBatch.step`/`reset`: emulation,
  max-pooling, resizing and stacking in its C++ thread, and the batch's lives and stack-clearing around it; with
  --no-ale-vector, ale-py's own env (made with frameskip=1, gymnasium's thin wrappers around it included) stepped
  `frame skip` times per agent step, with its resets, the no-ops after them, the FIRE presses after a lost life and
  that env's own grey observation of each frame;
- preprocessing (--no-ale-vector only): the rest of doom_a3c's `AtariEnvironment.step`/`reset`: gymnasium's
  `AtariPreprocessing` (the last two screens read, max-pooled and resized) and doom_a3c's lives and FIRE logic;
- forward pass: the acting network on the batch of the worker's games (`LocalCopy.act`, and `.value` for the
  bootstrap values at the end of each rollout);
- learning: `A3CWorker.learn` on each rollout: `GradientStep` (targets and the compiled gradient),
  `GlobalLearner.apply`, and the local copy's sync from the global weights;
- other: the rest of the rollout loop (`GameRunner`'s bookkeeping, action sampling, `EnvBatch`'s copies).

Reported per agent step (one action in one game): the CPU milliseconds of each part (this process's CPU time, all
its threads: a busy machine does not inflate it as it does wall time; the wall milliseconds stand beside it) and its
share of the total; the ceiling that total allows with nothing else running, 1000 / total env steps/s on one core and
twice that on two (one worker a core), and frames/s = env steps/s x frame skip. `process CPU / wall` near 1 on a
quiet machine says the work kept one core busy. The first --warmup-rollouts are left out (tf.function tracing).

`--train-seconds S` then runs train.py itself for S seconds (benchmarks/throughput.py's `run_mode`: the same
resolved config, its games in child processes) and reports its env steps/s and frames/s after --train-warmup
seconds, and their share of the 2-core ceiling. The gap holds what this script leaves out (the pipes to the game
processes, the coordinator, the two workers contending for two cores), not measured apart.
Prints a table and writes DIR/atari_time.json.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import os
import sys
import tempfile
import time
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/tools/ is two below
sys.path.insert(0, ROOT)

from benchmarks.throughput import run_mode  # noqa: E402
from doom_a3c.modes.a3c import a3c_workers  # noqa: E402
from doom_a3c.modes.build import build_thread_run  # noqa: E402
from doom_a3c.errors import ConfigError  # noqa: E402
from doom_a3c.config import TrainConfig, build_parser, given_values  # noqa: E402
from doom_a3c.run.resolve import resolve_new_run  # noqa: E402

PARTS = ("emulator", "preprocessing", "forward pass", "learning", "other")


class Stopwatch:
    """The wall and CPU seconds (this process's, all its threads) spent inside the calls it wraps."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def wrap(self, call: Callable) -> Callable:
        @functools.wraps(call)
        def timed(*args, **kwargs):
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return call(*args, **kwargs)
            finally:
                self.wall += time.perf_counter() - wall
                self.cpu += time.process_time() - cpu
        return timed

    def time_methods(self, target: Any, *names: str) -> None:
        """Time these methods of this one object (an instance attribute shadows the class's method)."""
        for name in names:
            setattr(target, name, self.wrap(getattr(target, name)))


def resolved_config(env_id: str, train_flags: list[str], model_dir: str) -> TrainConfig:
    """The config a fresh `train.py --scenario env_id [train_flags]` resolves, without GIFs (as throughput.py's
    runs) and with a model folder of our own."""
    given = given_values(build_parser("train.py flags").parse_args(train_flags))
    config = resolve_new_run({**given, "scenario": env_id, "model_dir": model_dir, "gif_every": 0})
    if config.env_kind != "atari":
        raise ConfigError(f"{env_id} is not an Atari game; e.g. --game Breakout or --env-id PongNoFrameskip-v4")
    return config


def time_one_worker(config: TrainConfig, rollouts: int, warmup_rollouts: int) -> dict[str, Any]:
    """Worker 0 of a run of `config` plays and learns `warmup_rollouts` + `rollouts` rollouts, its games in this
    process and one thread; returns the CPU and wall milliseconds per agent step of each of PARTS over the last
    `rollouts`."""
    # Sequential: each figure is one core's time, and the nested stopwatches below never overlap across threads.
    in_process = dataclasses.replace(config, env_processes=0, env_threads=1)
    run_parts = build_thread_run(in_process)
    try:
        worker = a3c_workers(run_parts)[0]
        emulator, environment, forward, collect, learn = watches = [Stopwatch() for _ in range(5)]
        if config.ale_vector:
            # ale-py's vector env does it all in C++ (emulation, max-pooling, resizing, the stack); the batch's
            # Python around it (lives, the stack's clearing, the transposition) is counted with it.
            emulator.time_methods(run_parts.games[0], "step", "reset")
            environment = emulator
        else:
            for game in run_parts.games[0].envs:
                # AtariPreprocessing's own env is ale-py's, made with frameskip=1: every emulated frame goes
                # through it.
                emulator.time_methods(game._env.env, "step", "reset")
                environment.time_methods(game, "step", "reset")
        forward.time_methods(worker.local, "act", "value")
        run_collect, run_learn = collect.wrap(worker.runner.collect), learn.wrap(worker.learn)
        worker.sync()
        for _ in range(warmup_rollouts):
            run_learn(run_collect(config.rollout))
        for watch in watches:
            watch.wall = watch.cpu = 0.0
        for _ in range(rollouts):
            run_learn(run_collect(config.rollout))
    finally:
        for games in run_parts.games:
            games.close()
    agent_steps = rollouts * config.rollout * config.envs_per_worker

    def split(clock: str) -> dict[str, float]:
        """Milliseconds per agent step of each part; the stopwatches nest (collect > environment > emulator)."""
        seconds = {"emulator": getattr(emulator, clock),
                   "preprocessing": getattr(environment, clock) - getattr(emulator, clock),
                   "forward pass": getattr(forward, clock), "learning": getattr(learn, clock),
                   "other": getattr(collect, clock) - getattr(environment, clock) - getattr(forward, clock)}
        return {part: 1000 * s / agent_steps for part, s in seconds.items()}

    return {"agent_steps": agent_steps, "cpu_ms_per_agent_step": split("cpu"), "wall_ms_per_agent_step": split("wall"),
            "cpu_per_wall": (collect.cpu + learn.cpu) / (collect.wall + learn.wall)}


def ceiling(total_ms: float, frame_skip: int, cores: int) -> dict[str, float]:
    """Env steps/s and frames/s that `total_ms` of one core's time per agent step allows on `cores` cores."""
    steps = cores * 1000 / total_ms
    return {"env_steps_per_s": steps, "frames_per_s": steps * frame_skip}


def print_table(report: dict[str, Any]) -> None:
    c = report["config"]
    print(f"\n{report['game']}: {c['envs_per_worker']} games x {c['rollout']}-step rollouts, {c['frame_size']}x"
          f"{c['frame_size']}, frame skip {c['frame_skip']}; {report['agent_steps']:,} agent steps timed, "
          f"process CPU / wall {report['cpu_per_wall']:.2f}")
    print(f"{'part':<15}{'CPU ms/agent step':>18}{'share':>8}{'wall ms':>9}")
    for part in PARTS:
        print(f"{part:<15}{report['cpu_ms_per_agent_step'][part]:>18.3f}{report['shares'][part]:>8.0%}"
              f"{report['wall_ms_per_agent_step'][part]:>9.3f}")
    print(f"{'total':<15}{report['total_cpu_ms']:>18.3f}{1:>8.0%}{report['total_wall_ms']:>9.3f}")
    for cores, rates in report["ceiling"].items():
        print(f"ceiling on {cores} core(s): {rates['env_steps_per_s']:,.0f} env steps/s, "
              f"{rates['frames_per_s']:,.0f} frames/s")
    if report["train"]:
        t = report["train"]
        print(f"train.py for {t['seconds']:g} s (after {t['warmup_s']:g} s): {t['env_steps_per_s']:,.0f} env steps/s, "
              f"{t['frames_per_s']:,.0f} frames/s, {t['share_of_2_core_ceiling']:.0%} of the 2-core ceiling")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", default="Breakout", help="ALE game name: Breakout, Pong, ...")
    parser.add_argument("--env-id", default=None, help="full gymnasium id instead (default ALE/<game>-v5)")
    parser.add_argument("--rollouts", type=int, default=100, help="rollouts timed")
    parser.add_argument("--warmup-rollouts", type=int, default=3, help="rollouts left out first (tracing)")
    parser.add_argument("--train-seconds", type=float, default=0.0, help="then run train.py this long (0: not)")
    parser.add_argument("--train-warmup", type=float, default=20.0, help="seconds of that run left out of its rate")
    parser.add_argument("--out", default=None, help="folder for atari_time.json (default: a temporary folder)")
    args, train_flags = parser.parse_known_args()
    train_flags = [f for f in train_flags if f != "--"]
    env_id = args.env_id or f"ALE/{args.game}-v5"
    out = args.out or tempfile.mkdtemp(prefix="atari_time_")
    os.makedirs(out, exist_ok=True)
    try:
        config = resolved_config(env_id, train_flags, os.path.join(out, "worker_model"))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    report = {"game": env_id, "config": {k: getattr(config, k) for k in
                                         ("workers", "envs_per_worker", "rollout", "frame_skip", "frame_size")},
              **time_one_worker(config, args.rollouts, args.warmup_rollouts)}
    report["total_cpu_ms"] = sum(report["cpu_ms_per_agent_step"].values())
    report["total_wall_ms"] = sum(report["wall_ms_per_agent_step"].values())
    report["shares"] = {p: ms / report["total_cpu_ms"] for p, ms in report["cpu_ms_per_agent_step"].items()}
    report["ceiling"] = {cores: ceiling(report["total_cpu_ms"], config.frame_skip, cores) for cores in (1, 2)}
    report["train"] = None
    if args.train_seconds > 0:
        run_args = argparse.Namespace(scenario=env_id, minutes=args.train_seconds / 60, warmup=args.train_warmup)
        rate = run_mode("train", [], run_args, train_flags, out)["steps_per_s"]
        if not math.isfinite(rate):  # under two whole games after the warm-up: progress.csv has no rate yet
            raise SystemExit("error: too few games ended after --train-warmup for a rate; give more --train-seconds")
        report["train"] = {"seconds": args.train_seconds, "warmup_s": args.train_warmup, "env_steps_per_s": rate,
                           "frames_per_s": rate * config.frame_skip,
                           "share_of_2_core_ceiling": rate / report["ceiling"][2]["env_steps_per_s"]}
    print_table(report)
    with open(os.path.join(out, "atari_time.json"), "w") as handle:
        json.dump(report, handle, indent=2)
    print(f"outputs: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
