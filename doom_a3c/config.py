"""Every hyperparameter of a run, in one typed config that is saved beside each checkpoint.

The command line is generated from the dataclass fields, so a flag, its default and its help text
live in exactly one place. `play.py` and `--resume` read the saved JSON back; only flags given
explicitly on the command line override it (the Sample Factory convention).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any


MIN_FRAME_SIZE = 20  # conv 8x8/4 then 4x4/2 leave a 1x1 map


class ConfigError(ValueError):
    """A user-facing configuration mistake: printed as one line, never as a traceback."""


def _flag(default: Any, help: str, **argparse_kwargs: Any) -> Any:
    return field(default=default, metadata={"help": help, **argparse_kwargs})


@dataclass
class TrainConfig:
    # --- environment ---
    scenario: str = _flag("basic.wad", "what to learn, one of three kinds: a ViZDoom scenario (basic, basic.wad, "
                          "basic.cfg, or a path to your own .cfg/.wad); an Atari game by its ALE id (ALE/Pong-v5, "
                          "ALE/Breakout-v5, any ALE id); a gymnasium env with a vector observation and discrete "
                          "actions (CartPole-v1, Acrobot-v1)")
    frame_skip: int = _flag(0, "game frames per agent step (0 = the preset's value: Doom 4 tics unless its preset "
                            "says otherwise, Atari 4 frames max-pooled; ignored for vector envs)")
    reward_scale: float = _flag(0.0, "multiply game rewards by this for learning (0 = preset value: Doom 0.01 when "
                                "none, 1 for Atari and gymnasium envs)")
    clip_rewards: str = _flag("auto", "clip learning rewards to [-1, 1] (seed 002) after scaling; auto = on for Atari, "
                              "off otherwise. The scores reported in the CSV, TensorBoard and play.py are never clipped",
                              choices=["auto", "on", "off"])
    screen_resolution: str = _flag("RES_160X120", "ViZDoom render resolution; GIFs use it, the network sees "
                                   "--frame-size grey frames")
    frame_size: int = _flag(84, "side in pixels of the square grey frames the network sees, Doom and Atari (the seed's "
                            "84; 42 costs a third of the network's compute per frame)")
    # --- workers ---
    workers: int = _flag(os.cpu_count() or 1, "worker threads (default: one per CPU core)")
    envs_per_worker: int = _flag(4, "environments each worker steps with one batched forward pass")
    env_threads: int = _flag(2, "threads stepping each worker's games (ViZDoom releases the GIL while its engine runs)")
    env_processes: int = _flag(0, "0: each worker's games run in this process (stepped by --env-threads threads); P > 0: "
                               "they run in P child processes per worker, outside this process's GIL (ale-py holds "
                               "the GIL while it emulates). Threaded trainers only: Ray workers are processes already")
    seed: int = _flag(0, "base random seed; worker i uses seed + i")
    trainer: str = _flag("a3c", "'a3c': each worker acts with its own local copy and applies its own gradients; "
                         "'ga3c' (seed 003): --workers runner threads send observations to one predictor that acts "
                         "for all games in one batch, and a trainer thread learns from batches of their rollouts",
                         choices=["a3c", "ga3c"])
    distributed: str = _flag("none", "'none': every worker is a thread of this process; 'ray': A3C workers run as Ray "
                             "actors in their own processes (on this machine or a Ray cluster) and the global network "
                             "in a parameter-server actor (needs `pip install ray`)", choices=["none", "ray"])
    ray_address: str = _flag("", "with --distributed ray: '' starts a local Ray instance for this run (temp files "
                             "under --model-dir); 'auto' or HOST:PORT joins an existing Ray cluster (see README)")
    # --- algorithm ---
    rollout: int = _flag(30, "environment steps per rollout before a gradient update")
    gamma: float = _flag(0.99, "discount factor")
    gae_lambda: float = _flag(1.0, "GAE lambda (1.0 = the seed's plain discounted advantages)")
    normalize_advantages: bool = _flag(False, "scale each update's advantages to mean 0 and std 1 (as PPO "
                                       "implementations do): the policy gradient's size then no longer depends "
                                       "on the reward scale")
    value_coef: float = _flag(0.5, "weight of the value loss")
    policy_coef: float = _flag(1.0, "weight of the policy-gradient loss")
    entropy_coef: float = _flag(0.01, "weight of the entropy bonus")
    clip_norm: float = _flag(40.0, "clip gradients at this global norm")
    optimizer: str = _flag("adam", "shared optimizer", choices=["adam", "rmsprop"])
    learning_rate: float = _flag(3e-4, "optimizer learning rate (the seed used 1e-4 with one game per worker; 4 batched games per worker learn basic.wad fastest with 3e-4, measured against 1e-4, 7e-4 and 1e-3)")
    lstm_size: int = _flag(256, "LSTM cell size")
    no_lstm: bool = _flag(False, "drop the LSTM core: the torso feeds the policy and value heads directly")
    hidden_size: int = _flag(256, "units of the dense layer after the conv torso (images), or of each of the two "
                             "dense layers of the vector torso (vector observations such as CartPole's)")
    separate_networks: bool = _flag(False, "separate actor and critic networks (seed 001): the value head gets its "
                                    "own torso and LSTM instead of sharing the policy's")
    advantage: str = _flag("gae", "advantage estimator: 'gae' (--gae-lambda; lambda 1 = the seed's discounted "
                           "returns) or 'nstep' (n-step targets, --n-step, --n-step-variant; seeds 001 and 003)",
                           choices=["gae", "nstep"])
    n_step: int = _flag(8, "rewards per target with --advantage nstep (1 = one-step TD); seed 003 used 8")
    n_step_variant: str = _flag("max", "where an n-step horizon runs past the rollout end: 'max' uses every reward "
                                "left and bootstraps from the last state; 'zero' treats the missing terms as 0 "
                                "(seed 001's two variants)", choices=["max", "zero"])
    epsilon_start: float = _flag(0.0, "epsilon-greedy on top of the policy (seed 003): probability of a uniformly "
                                 "random action at step 0 (0 with --epsilon-end 0 = off)")
    epsilon_end: float = _flag(0.0, "epsilon reached after --epsilon-decay-steps environment steps, kept after")
    epsilon_decay_steps: int = _flag(0, "environment steps (all workers) of the linear decay from --epsilon-start "
                                     "to --epsilon-end (0 = --epsilon-end from the start)")
    epsilon_spread: str = _flag("same", "final epsilon per worker: 'same' (all --epsilon-end), 'linear' or "
                                "'geometric' (worker 0 ends at --epsilon-end, the last at --epsilon-start; "
                                "seed 003's remark on per-worker exploration)",
                                choices=["same", "linear", "geometric"])
    gradient_mode: str = _flag("clip", "'clip' scales the whole gradient to global norm <= --clip-norm (seed 004); "
                               "'normalize' caps each tensor's average norm at --normalize-norm (seed 002)",
                               choices=["clip", "normalize"])
    normalize_norm: float = _flag(0.1, "per-element norm bound of --gradient-mode normalize (seed 002: 0.1)")
    lr_schedule: str = _flag("constant", "'linear' anneals the learning rate to 0 over --max-steps (A3C paper)",
                             choices=["constant", "linear"])
    frame_norm: str = _flag("standardize", "input frames are scaled to [0, 1]; 'standardize' then gives each frame "
                            "zero mean and unit variance (learns Doom's small targets several times faster), "
                            "'scale' stops there as the seed does", choices=["standardize", "scale"])
    # --- budget and stopping ---
    max_steps: int = _flag(0, "stop after this many environment steps in total (0 = no limit)")
    max_minutes: float = _flag(0.0, "stop after this many minutes of wall time (0 = no limit)")
    target_reward: float = _flag(float("nan"), "stop when the mean unscaled reward of the last 100 episodes reaches this (default: none)")
    # --- outputs ---
    model_dir: str = _flag("models", "checkpoints, config.json, progress.csv, curve PNG and TensorBoard events")
    frames_dir: str = _flag("frames", "GIFs of worker 0's episodes")
    gif_every: int = _flag(25, "record a GIF every N episodes of worker 0 (0 = never)")
    save_every_minutes: float = _flag(2.0, "save a checkpoint at least this often")
    save_every_episodes: int = _flag(250, "also save a checkpoint every N episodes (0 = only by time)")
    keep_checkpoints: int = _flag(3, "numbered checkpoints to keep besides last.ckpt")
    log_every_seconds: float = _flag(5.0, "progress line and TensorBoard loss summaries interval")
    resume: bool = _flag(False, "continue the run saved in --model-dir (weights, optimizer, counters, config)")

    def validate(self) -> "TrainConfig":
        positive = ["workers", "rollout", "envs_per_worker", "env_threads", "lstm_size", "log_every_seconds", "save_every_minutes"]
        for name in positive:
            if getattr(self, name) <= 0:
                raise ConfigError(f"--{name.replace('_', '-')} must be > 0, got {getattr(self, name)}")
        non_negative = ["frame_skip", "reward_scale", "max_steps", "max_minutes", "gif_every",
                        "save_every_episodes", "env_processes", "value_coef", "policy_coef", "entropy_coef", "keep_checkpoints"]
        for name in non_negative:
            if getattr(self, name) < 0:
                raise ConfigError(f"--{name.replace('_', '-')} must be >= 0, got {getattr(self, name)}")
        if not self.learning_rate > 0:
            raise ConfigError(f"--learning-rate must be > 0, got {self.learning_rate}")
        if not self.clip_norm > 0:
            raise ConfigError(f"--clip-norm must be > 0, got {self.clip_norm}")
        if not self.normalize_norm > 0:
            raise ConfigError(f"--normalize-norm must be > 0, got {self.normalize_norm}")
        if self.frame_size < MIN_FRAME_SIZE:
            raise ConfigError(f"--frame-size must be >= {MIN_FRAME_SIZE} (the conv torso's smallest input), "
                              f"got {self.frame_size}")
        if self.hidden_size <= 0:
            raise ConfigError(f"--hidden-size must be > 0, got {self.hidden_size}")
        if self.n_step < 1:
            raise ConfigError(f"--n-step must be >= 1, got {self.n_step}")
        for name in ("epsilon_start", "epsilon_end"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"--{name.replace('_', '-')} must be in [0, 1], got {getattr(self, name)}")
        if self.epsilon_decay_steps < 0:
            raise ConfigError(f"--epsilon-decay-steps must be >= 0, got {self.epsilon_decay_steps}")
        if self.epsilon_spread == "geometric" and not self.epsilon_end > 0:
            raise ConfigError("--epsilon-spread geometric needs --epsilon-end > 0 (e.g. 0.01), or use linear")
        if self.distributed == "ray" and self.trainer == "ga3c":
            raise ConfigError("--distributed ray runs A3C workers (each with its own local copy); "
                              "--trainer ga3c runs in one process: use one or the other")
        if self.lr_schedule == "linear" and not self.max_steps:
            raise ConfigError("--lr-schedule linear anneals to 0 over --max-steps: give --max-steps too")
        if not 0.0 <= self.gamma <= 1.0:
            raise ConfigError(f"--gamma must be in [0, 1], got {self.gamma}")
        if not 0.0 <= self.gae_lambda <= 1.0:
            raise ConfigError(f"--gae-lambda must be in [0, 1], got {self.gae_lambda}")
        return self

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def _parse_bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")


class _OneLineErrorParser(argparse.ArgumentParser):
    """argparse prints usage + error; we want exactly one clear line on stderr."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"error: {message} (see --help)\n")


def build_parser(description: str) -> argparse.ArgumentParser:
    parser = _OneLineErrorParser(description=description,
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    for f in dataclasses.fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        kwargs = {k: v for k, v in f.metadata.items()}
        if f.type in ("bool", bool):
            parser.add_argument(flag, action="store_true", default=argparse.SUPPRESS, help=kwargs["help"])
            continue
        kind = {"int": int, "float": float, "str": str}[f.type if isinstance(f.type, str) else f.type.__name__]
        kwargs["help"] += f" (default: {f.default})"
        parser.add_argument(flag, type=kind, default=argparse.SUPPRESS, **kwargs)
    return parser


def config_from_args(args: argparse.Namespace, base: TrainConfig | None = None) -> TrainConfig:
    """Flags given explicitly override `base` (a saved config when resuming); the rest keep its values."""
    base = base or TrainConfig()
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig) if hasattr(args, f.name)}
    return dataclasses.replace(base, **given)


def explicit_fields(args: argparse.Namespace) -> set[str]:
    return {f.name for f in dataclasses.fields(TrainConfig) if hasattr(args, f.name)}
