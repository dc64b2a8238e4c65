#!/usr/bin/env python
"""The CPU time of each part of an A3C worker's learning cycle, without games: what the trainer's own code costs.

    python benchmarks/tools/learner_time.py --scenario /path/to/map.cfg [--calls 200] [--out DIR] \
        [-- extra train.py flags]
    python benchmarks/tools/learner_time.py --config models/config.json

The network of the config a fresh `train.py --scenario ... [flags]` resolves (or a run's saved config.json) plays
random frames, one thread in this process: per call, the CPU and wall milliseconds of
- act: the local copy's forward pass for the worker's --envs-per-worker games (a rollout makes rollout + 1 calls,
  the last for the bootstrap values);
- gradient: the processed gradient of one [rollout, games] rollout (targets, the compiled gradient, statistics);
- apply: the shared optimizer's update of the global network;
- sync: the local copy's refresh from the global weights.
Then the cycle's CPU per env step: (act x (rollout + 1) + gradient + apply + sync) / (rollout x games). The games'
own time (the engine, the pipes to their processes) comes on top: benchmarks/throughput.py measures whole runs.
The first calls of each part are left out (tracing). Prints a table and writes DIR/learner_time.json.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from typing import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/tools/ is two below
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from doom_a3c.config import TrainConfig, build_parser, given_values  # noqa: E402
from doom_a3c.run.resolve import resolve_new_run  # noqa: E402

PARTS = ("act", "gradient", "apply", "sync")
WARMUP_CALLS = 3


def observation_shape(config: TrainConfig) -> tuple[int, ...]:
    """A frame (with --frame-stack K, K of them on the channel axis) as a ViZDoom or Atari game of the config
    delivers it."""
    return (config.frame_size, config.frame_size, (3 if config.color else 1) * (config.frame_stack or 1))


def random_observations(config: TrainConfig, rng: np.random.Generator, *batch: int) -> np.ndarray:
    """Random frames [*batch, *frame], as records with the game variables when the config has any."""
    from doom_a3c.envs.interface import observation_dtype

    frames = rng.integers(0, 256, (*batch, *observation_shape(config)), dtype=np.uint8)
    if not config.game_variables:
        return frames
    records = np.empty(batch, observation_dtype(observation_shape(config), len(config.game_variables)))
    records["frame"] = frames
    records["variables"] = rng.normal(size=(*batch, len(config.game_variables))).astype(np.float32)
    return records


def time_calls(call: Callable[[], object], calls: int) -> dict[str, float]:
    """CPU (this process, all threads) and wall milliseconds per call, after WARMUP_CALLS untimed ones."""
    for _ in range(WARMUP_CALLS):
        call()
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(calls):
        call()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"cpu_ms": 1000 * cpu / calls, "wall_ms": 1000 * wall / calls}


def measure(config: TrainConfig, calls: int) -> dict:
    from doom_a3c.modes.build import configure_threads
    from doom_a3c.algo.learner import GlobalLearner
    from doom_a3c.algo.local_copy import LocalCopy
    from doom_a3c.algo.model.actor_critic import LSTMState, build_actor_critic
    from doom_a3c.algo.rollout import Rollout

    configure_threads(config.workers)
    actions, games, steps = len(config.actions), config.envs_per_worker, config.rollout
    global_net = build_actor_critic(config, actions, observation_shape(config), name="global")
    local = LocalCopy(build_actor_critic(config, actions, observation_shape(config), name="worker_0"), config, games)
    learner = GlobalLearner(config, global_net)
    rng = np.random.default_rng(0)
    observations, starts = random_observations(config, rng, games), np.zeros(games, np.float32)
    zeros = np.zeros((steps, games), np.float32)
    rollout = Rollout(random_observations(config, rng, steps, games),
                      rng.integers(0, actions, (steps, games)).astype(np.int32),
                      rng.normal(size=(steps, games)).astype(np.float32), zeros, zeros, zeros,
                      LSTMState(*local.start_state()), np.zeros(games, np.float32), zeros)
    gradient = local.gradient(rollout)
    timings = {"act": time_calls(lambda: local.act(observations, starts), calls),
               "gradient": time_calls(lambda: local.gradient(rollout), max(1, calls // 5)),
               # A learning rate of 0: the weights stay as they are however many updates are timed.
               "apply": time_calls(lambda: learner.apply(gradient.grads, gradient.finite), max(1, calls // 2)),
               "sync": time_calls(lambda: local.sync(global_net.trainable_variables), calls)}
    cycle = timings["act"]["cpu_ms"] * (steps + 1) + sum(timings[p]["cpu_ms"] for p in PARTS[1:])
    return {"config": {key: getattr(config, key) for key in ("scenario", "envs_per_worker", "rollout", "frame_size",
                                                             "policy_heads", "lstm_size")},
            "actions": actions, "ms_per_call": timings, "cycle_cpu_ms": cycle,
            "cpu_us_per_env_step": 1000 * cycle / (steps * games)}


def load_config(args: argparse.Namespace, train_flags: list[str], model_dir: str) -> TrainConfig:
    if args.config:
        with open(args.config) as handle:
            config = TrainConfig.from_dict(json.load(handle))
    else:
        given = given_values(build_parser("train.py flags").parse_args(train_flags))
        config = resolve_new_run({**given, "scenario": args.scenario, "model_dir": model_dir, "gif_every": 0})
    if config.env_kind not in ("doom", "atari"):  # a gymnasium image env's frames keep their own size
        raise SystemExit(f"error: {config.scenario} is not a ViZDoom or Atari scenario; this script times their "
                         f"networks")
    return dataclasses.replace(config, learning_rate=0.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--scenario", help="what train.py --scenario takes; extra train.py flags after --")
    source.add_argument("--config", help="a run's config.json instead")
    parser.add_argument("--calls", type=int, default=200, help="act and sync calls timed (gradient: a fifth)")
    parser.add_argument("--out", default=None, help="folder for learner_time.json (default: a temporary folder)")
    argv = sys.argv[1:]
    train_flags = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    out = args.out or tempfile.mkdtemp(prefix="learner_time_")
    os.makedirs(out, exist_ok=True)
    report = measure(load_config(args, train_flags, os.path.join(out, "model")), args.calls)
    print(f"{report['config']['scenario']}: {report['actions']} actions ({report['config']['policy_heads']}), "
          f"{report['config']['envs_per_worker']} games x {report['config']['rollout']}-step rollouts")
    print(f"{'part':<10}{'CPU ms/call':>12}{'wall ms/call':>13}")
    for part in PARTS:
        times = report["ms_per_call"][part]
        print(f"{part:<10}{times['cpu_ms']:>12.2f}{times['wall_ms']:>13.2f}")
    print(f"cycle: {report['cycle_cpu_ms']:.1f} ms CPU, {report['cpu_us_per_env_step']:.0f} us per env step "
          f"without the games")
    with open(os.path.join(out, "learner_time.json"), "w") as handle:
        json.dump(report, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
