"""Every setting of a run, in one typed config that is saved whole beside each checkpoint.

The command line is generated from the dataclass fields, so a flag, its default and its help text
live in one place. Fields whose default is None ("the preset's") and the environment fields
(`env_kind`, `scenario_path`, `actions`, ...) are filled in once, by doom_a3c/run/resolve.py, when a run
starts; from then on the config is complete and concrete, and that is what the checkpoint and
`config.json` hold (strict JSON). `play.py` and `--resume` read it back and never look at a preset.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

from doom_a3c.errors import ConfigError

MIN_FRAME_SIZE = 20  # conv 8x8/4 then 4x4/2 leave a 1x1 map
MAX_FRAME_STACK = 16  # 16 84x84 grey frames: 113 KB an observation, 16x the rollouts' and GA3C batches' memory
MAX_BOTS = 15  # ViZDoom's games hold 16 players
MAX_SELF_PLAY_OPPONENTS = 7  # with the learner, 8 agents: Sample Factory's deathmatch self-play (doom_multiagent)
ENV_KINDS = ("doom", "atari", "image", "vector")
POLICY_HEADS = ("flat", "factorised")
OPTIMIZERS = ("adam", "rmsprop")
RMSPROP_STYLES = ("tf1", "keras")


PRECISIONS = ("auto", "float32", "bfloat16")  # doom_a3c/algo/model/precision.py


def _flag(default: Any, help: str, **argparse_kwargs: Any) -> Any:
    return field(default=default, metadata={"help": help, **argparse_kwargs})


def _resolved(default: Any, help: str) -> Any:
    """A field filled in from the scenario when the run starts; not a command-line flag."""
    return field(default=default, metadata={"help": help, "flag": False})


@dataclass
class TrainConfig:
    # --- environment ---
    scenario: str = _flag("basic.wad", "what to learn, one of three kinds: a ViZDoom scenario (basic, basic.wad, "
                          "basic.cfg, or a path to your own .cfg/.wad); an Atari game by its ALE id (ALE/Pong-v5, "
                          "any ALE id); a gymnasium env with discrete actions that observes an image or a Dict of one "
                          "image and vectors (VizdoomBasic-v1, or one --env-module registers), or a vector "
                          "(CartPole-v1, Acrobot-v1)")
    env_module: str = _flag("", "a Python module to import before looking --scenario up in gymnasium's registry: the "
                            "one that registers your own env (import it as `python -c 'import MODULE'` would from "
                            "this folder); saved, so play.py and --resume import it again (ViZDoom's Vizdoom* ids "
                            "need none)")
    frame_skip: int | None = _flag(None, "game frames per agent step (default: the preset's; Doom 4 tics, Atari 4 "
                                   "frames max-pooled; image envs 1: the env's own frame skip alone, N > 1 repeats "
                                   "each action N times more; vector envs 1)")
    reward_scale: float | None = _flag(None, "multiply game rewards by this for learning (default: the preset's; "
                                       "Doom 0.01, Atari and gymnasium envs 1)")
    clip_rewards: bool | None = _flag(None, "clip learning rewards to [-1, 1] (seed 002) after scaling (default: "
                                      "the preset's; on for Atari, off otherwise). The scores reported in the "
                                      "CSV, TensorBoard and play.py are never clipped")
    screen_resolution: str = _flag("RES_160X120", "ViZDoom render resolution; GIFs use it, the network sees "
                                   "--frame-size grey frames")
    frame_size: int = _flag(84, "side in pixels of the square grey frames the network sees, Doom and Atari (the seed's "
                            "84; 42 costs a third of the network's compute per frame)")
    color: bool | None = _flag(None, "the network sees RGB frames (3 channels) instead of grey ones: ViZDoom "
                               "scenarios and image envs", shown_default="the preset's, else off")
    frame_stack: int | None = _flag(None, "the network sees the last K preprocessed frames stacked on the channel "
                                    "axis ([84, 84, K] grey, [84, 84, 3K] colour), the older ones zeros at an "
                                    "episode's start and after a lost life: ViZDoom, Atari and image envs (vector "
                                    "envs: 1). Saved, so play.py, --resume and --export stack as trained",
                                    shown_default="the preset's, else 1")
    preset: bool = _flag(True, "take the values the scenario's preset (scenarios/NAME.toml) sets; --no-preset runs a "
                         "shipped scenario exactly as a user's own .cfg: a ViZDoom map then takes "
                         "scenarios/defaults/doom.toml, the values for a map nobody tuned (Atari games keep "
                         "scenarios/atari.toml, the kind's own table)")
    action_set: str | None = _flag(None, "Doom actions: 'preset' (the preset's list, else one action per button), "
                                   "'buttons' (one action per available button), 'combined' (move, turn, strafe and "
                                   "attack at once: one option from each group of the .cfg's buttons, at most "
                                   "64 actions); a delta button (TURN_LEFT_RIGHT_DELTA) offers bins, such as "
                                   "TURN_LEFT_RIGHT_DELTA=-24, a 24-degree left turn a step (envs/doom/action_sets.py)",
                                   choices=["preset", "buttons", "combined"],
                                   shown_default="'preset' when the preset lists actions, else 'buttons'; "
                                                 "'combined' for a map with no preset (defaults/doom.toml)")
    policy_heads: str = _flag("flat", "Doom with --action-set combined: 'flat' (one softmax over all the actions) or "
                              "'factorised' (one categorical head per button group, as Sample Factory's Doom "
                              "policies; the same actions, their joint distribution)", choices=list(POLICY_HEADS))
    fine_turns: bool = _flag(False, "Doom with --action-set combined: the turn group also offers each turn held for "
                             "the first half of the step only (TURN_LEFT/2): a finer turn at the same frame skip (7-14 "
                             "degrees at 8 tics, where a held turn is 28)")
    cfg_variables: bool | None = _flag(None, "Doom: when neither the preset nor the config lists game variables, the "
                                       "network sees those the .cfg lists (available_game_variables: HEALTH, "
                                       "AMMO2...)", shown_default="on for a map without a preset, off under one")
    normalize_variables: bool | None = _flag(None, "Doom, and image envs with vectors beside the image: the network "
                                             "sees its game variables standardised by running means and deviations, "
                                             "shared by all workers and saved in the checkpoint",
                                             shown_default="on for the .cfg's variables and an image env's vectors, "
                                             "off for a preset's hand-scaled ones")
    # --- the environment as resolved when the run started (doom_a3c/run/resolve.py) ---
    env_kind: str = _resolved("", "doom, atari, image or vector")
    scenario_path: str = _resolved("", "Doom: the .cfg the games load (absolute); gymnasium: the env id")
    actions: list = _resolved(None, "each action as the list of buttons it holds down (Doom; a delta button's bin "
                              "as BUTTON=VALUE), or the game's action name (gymnasium)")
    action_heads: list = field(default_factory=list, metadata={
        "flag": False, "help": "with --policy-heads factorised: each head as the names of its options (option 0 "
        "'(none)' or, for the left-over buttons' head, '(combination)'; doom_a3c/envs/doom/action_sets.py); [] = flat"})
    crop: list = _resolved(None, "fractions of the Doom screen cut off (top, bottom, left, right) before downsampling")
    game_args: str = _resolved("", "extra ViZDoom engine arguments (multiplayer maps)")
    bots: int | None = _flag(None, "bots added at each Doom episode start (0-15). On a map whose preset hosts no "
                             "deathmatch (a user's own .wad with player starts and its .cfg) it also makes the game "
                             "a deathmatch host (scenarios/defaults/doom.toml's [deathmatch]: its host arguments, "
                             "+1 a frag and its learning-only shaping)", shown_default="the preset's, else 0")
    self_play: bool = _flag(False, "ViZDoom multiplayer maps (cig): every training game is a match against "
                            "--self-play-opponents copies of the policy, frozen snapshots of the global network "
                            "(the latest, or an earlier one), each in its own engine joining the learner's, beside "
                            "the --bots; only the learner's experience trains (docs/guide/self-play.md)")
    self_play_opponents: int = _flag(1, f"with --self-play: opponents in each match (1: a duel, up to "
                                     f"{MAX_SELF_PLAY_OPPONENTS})")
    self_play_snapshot_minutes: float = _flag(5.0, "with --self-play: a match that starts when the latest snapshot "
                                              "of the global network is older than this first adds a new one to "
                                              "the opponents' pool (the latest and up to 4 older ones)")
    frag_reward: float = _resolved(0.0, "reward per frag (deathmatch maps, whose cfg defines none)")
    game_variables: list = field(default_factory=list, metadata={
        "flag": False, "help": "Doom game variables the network sees beside the pixels, each [name, scale] "
        "(HEALTH x 0.01...), or an image env's Dict vectors, element by element ([\"gamevariables[0]\", 1.0]...); "
        "[] = pixels only"})
    reward_shaping: list = field(default_factory=list, metadata={
        "flag": False, "help": "Doom learning bonus per change of a game variable, each [name, reward per unit] or "
        "[name, per unit gained, per unit lost]; added to the learning reward only, never to the reported score; "
        "[] = off"})
    exploration_reward: float = _resolved(0.0, "Doom learning bonus for each map cell the player first enters in an "
                                          "episode (episodic count-based exploration); never in the reported score; "
                                          "0 = off")
    exploration_cell: float = _resolved(0.0, "side of those cells in map units (a corridor is about 64-128)")
    bootstrap_timeout: bool = _resolved(False, "Doom: the scenario's episode timeout is a time limit, not a terminal "
                                        "state: learning bootstraps from the value of the last frame (gymnasium and "
                                        "Atari time limits always do); false treats it as terminal")
    # --- workers ---
    workers: int = _flag(os.cpu_count() or 1, "worker threads (default: one per CPU core)")
    envs_per_worker: int = _flag(4, "environments each worker steps with one batched forward pass")
    env_threads: int = _flag(2, "threads stepping each worker's games, or each game process's (ViZDoom releases the GIL "
                             "while its engine runs)")
    env_processes: int | None = _flag(None, "0: each worker's games run in this process (stepped by --env-threads "
                                      "threads); P > 0: they run in P child processes per worker, outside this "
                                      "process's GIL (ale-py holds it while it emulates), where a game that stops "
                                      "answering can be killed and replaced (--game-timeout) (default: the preset's; "
                                      "ViZDoom 2, gymnasium 0)")
    ale_vector: bool | None = _flag(None, "Atari: each worker's games run in ale-py's own vector env (emulation, "
                                    "max-pooling, resizing and frame stack in C++ threads outside the GIL, "
                                    "--env-threads of them a worker); --no-ale-vector: one gymnasium env a game, "
                                    "the path of runs trained before it (default: on, for every id the vector env "
                                    "can run)")
    game_timeout: float = _flag(30.0, "watchdog: a game process whose call (start, step, reset, close) has not "
                                "returned within this many seconds is killed with its engines and replaced, its "
                                "games' unfinished episodes dropped, as for a crashed game (with --env-processes > 0; "
                                "a healthy game answers in milliseconds)")
    max_game_restarts: int = _flag(5, "a game that dies or raises is closed and restarted with a fresh seed, its "
                                   "unfinished episode dropped; more than this many restarts within a minute (all "
                                   "workers together) stop the run with an error and a final checkpoint (0: the "
                                   "first game error stops the run)")
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
    precision: str = _flag("auto", "what the network computes in: 'float32', or 'bfloat16' mixed precision (the conv "
                           "or dense torso, its dense layer and the LSTM's matrix products in bfloat16; weights, "
                           "heads, LSTM state and loss in float32, so a checkpoint is the same either way); 'auto' "
                           "picks float32 until bfloat16 is measured faster (algo/model/precision.py). bfloat16 "
                           "needs a CPU with avx512_bf16 or amx_bf16. The config saves what ran; --resume may change "
                           "it; play.py and --export always run float32", choices=list(PRECISIONS))
    jit_compile: bool = _flag(False, "compile the acting step and the learning step with XLA (tf.function's "
                              "jit_compile): fewer, fused ops, but several seconds of compiling at each network's "
                              "first steps (docs/measuring/speed-and-memory.md)")
    # --- algorithm ---
    rollout: int = _flag(30, "environment steps per rollout before a gradient update")
    gamma: float = _flag(0.99, "discount factor")
    gae_lambda: float = _flag(1.0, "GAE lambda (1.0 = the seed's plain discounted advantages)")
    normalize_advantages: bool = _flag(False, "scale each update's advantages to mean 0 and std 1 (as PPO "
                                       "implementations do): the policy gradient's size then no longer depends "
                                       "on the reward scale")
    normalize_returns: bool = _flag(False, "scale-free learning (DreamerV3): advantages, value targets and the "
                                    "critic's output in units of max(--return-scale-floor, S), S a running 5th-95th "
                                    "percentile range of "
                                    "the rollouts' returns shared by all workers and saved in the checkpoint, so that "
                                    "one set of hyperparameters fits a reward of 1 or 1,000 an episode")
    return_scale_floor: float = _flag(1.0, "with --normalize-returns, the least S divides by (in learning-reward "
                                      "units): DreamerV3's 1 leaves a small sparse reward as it is; below it, a "
                                      "map whose returns span 0.05 is learnt at the size of one whose span 500")
    value_coef: float = _flag(0.5, "weight of the value loss")
    policy_coef: float = _flag(1.0, "weight of the policy-gradient loss")
    entropy_coef: float = _flag(0.01, "weight of the entropy bonus")
    entropy_target: float = _flag(0.0, "F > 0: the entropy weight grows above --entropy-coef while the policy's "
                                  "entropy is below F times that of a uniform policy, and sinks back to it above "
                                  "(one-sided automatic temperature: doom_a3c/algo/entropy_target.py); 0: fixed weight")
    clip_norm: float = _flag(40.0, "clip gradients at this global norm")
    optimizer: str = _flag("adam", "the one optimizer every worker's gradient goes through (its statistics shared, as "
                           "the A3C paper's shared RMSProp); fixed for a run: --resume cannot change it",
                           choices=list(OPTIMIZERS))
    rmsprop_decay: float = _flag(0.99, "--optimizer rmsprop: decay of the running mean square of the gradient "
                                 "(TensorFlow 1's decay, Keras' rho; the A3C paper and A2C: 0.99)")
    rmsprop_epsilon: float = _flag(1e-5, "--optimizer rmsprop: added to the mean square inside the square root, "
                                   "w -= lr * g / sqrt(ms + eps) (A2C: 1e-5; --rmsprop-style keras needs a larger "
                                   "one, such as the 0.1 it had before the Atari recipe)")
    rmsprop_style: str = _flag("tf1", "--optimizer rmsprop: 'tf1' starts the mean square at 1, as TensorFlow 1's "
                               "RMSPropOptimizer did for the A3C paper and A2C (first updates about lr * g); 'keras' "
                               "is Keras 3's RMSprop, which starts it at 0 (first updates about 10 lr * sign(g) with "
                               "a small epsilon). Both put epsilon inside the root; doom_a3c/algo/optimizers.py",
                               choices=list(RMSPROP_STYLES))
    learning_rate: float = _flag(3e-4, "optimizer learning rate (the seed used 1e-4 with one game per worker; 4 "
                                 "batched games per worker learn basic.wad fastest with 3e-4)")
    lstm_size: int = _flag(256, "LSTM cell size")
    lstm: bool = _flag(True, "the LSTM core; --no-lstm feeds the torso to the policy and value heads directly")
    hidden_size: int = _flag(256, "units of the dense layer after the conv torso (images), or of each of the two "
                             "dense layers of the vector torso (vector observations such as CartPole's)")
    weight_init: str = _flag("glorot", "initial weights: 'glorot' (the seed's; policy and value heads' columns scaled "
                             "to norm 0.01 and 1) or 'orthogonal' (gain sqrt(2) in the torso, 1 in the LSTM, 0.01 and 1 "
                             "in the policy and value heads, as the A2C and PPO Atari baselines)",
                             choices=["glorot", "orthogonal"])
    activation: str = _flag("elu", "the torso's activation: 'elu' (the seed's) or 'relu' (the Atari baselines'; on "
                            "Breakout ELU learnt about a fifth as fast: docs/defaults/atari-defaults.md)",
                            choices=["elu", "relu"])
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
    lr_schedule: str = _flag("constant", "'linear' anneals the learning rate to 0 over the run's budget (A3C paper): "
                             "lr * (1 - f), f the larger of env steps / --max-steps and training time / "
                             "--max-minutes, over the budgets given, so it reaches 0 when the first one ends the run. "
                             "--max-minutes counts each leg of a --resume'd run: the time budget is then the time "
                             "trained before it plus --max-minutes, and the rate goes on from the share of it spent; a "
                             "preset's linear with neither budget given runs as constant",
                             choices=["constant", "linear"])
    frame_norm: str = _flag("standardize", "input frames are scaled to [0, 1]; 'standardize' then gives each frame "
                            "zero mean and unit variance (learns Doom's small targets several times faster), "
                            "'scale' stops there as the seed does, 'background' then subtracts the game's "
                            "background grey (--frame-background): Atari and image envs",
                            choices=["standardize", "scale", "background"])
    frame_background: float | None = _flag(None, "the grey level (0-255) --frame-norm background subtracts, so that "
                                           "the game's background is 0; measured when a run starts (the most "
                                           "common pixel value of its first frame) and saved with it")
    # --- budget and stopping ---
    max_steps: int = _flag(0, "stop after this many environment steps in total (0 = no limit)")
    max_minutes: float = _flag(0.0, "stop after this many minutes of wall time (0 = no limit); counted from the "
                               "start of each leg: a --resume'd run trains this long again")
    target_reward: float | None = _flag(None, "stop when the mean unscaled reward of the last 100 episodes reaches "
                                        "this (default: never)")
    # --- evaluation during training (doom_a3c/run/periodic_evaluation.py) ---
    evaluate: bool = _flag(True, "evaluate the policy while it trains, in a thread of its own: every "
                           "--eval-every-minutes and once more at the end of the run (not after Ctrl-C or SIGTERM), "
                           "--eval-episodes whole episodes on games of their own, seeded apart from training's, "
                           "scored as the game scores them; results in eval.csv and TensorBoard's Eval/*, the best "
                           "evaluation's weights in best.ckpt. A3C and GA3C; off with --distributed ray")
    eval_every_minutes: float = _flag(5.0, "minutes between evaluations. 5 with --eval-episodes 10 keeps the cost "
                                      "small: on basic.wad the evaluator's episodes are about 0.1 percent of the env "
                                      "steps training takes in 5 minutes (docs/measuring/evaluation.md has the "
                                      "measurement)")
    eval_episodes: int = _flag(10, "episodes per evaluation (SB3's EvalCallback plays 5); each evaluation game plays "
                               "its share, so that short episodes are not favoured. min(this, --envs-per-worker) "
                               "games play them side by side")
    eval_greedy: bool = _flag(True, "evaluate the most likely action at each step (as SB3's EvalCallback does by "
                              "default: the policy without the sampling noise); --no-eval-greedy samples, as "
                              "training and play.py do")
    # --- outputs ---
    model_dir: str = _flag("models", "checkpoints, config.json, progress.csv, curve PNG and TensorBoard events")
    frames_dir: str = _flag("frames", "GIFs of worker 0's episodes")
    gif_every: int = _flag(25, "record a GIF every N episodes of worker 0 (0 = never)")
    video: str = _flag("gif", "format of those recordings: gif, mp4 (H.264, through imageio-ffmpeg) or both",
                       choices=["gif", "mp4", "both"])
    video_tics: bool = _flag(False, "ViZDoom: those recordings show every game tic, not one frame per agent step "
                                    "(smoother; on basic.wad it cost the trainer about 13 percent of its env steps/s); "
                                    "play.py always shows every tic")
    save_every_minutes: float = _flag(2.0, "save a checkpoint at least this often")
    save_every_episodes: int = _flag(250, "also save a checkpoint every N episodes (0 = only by time)")
    keep_checkpoints: int = _flag(3, "numbered checkpoints to keep besides last.ckpt")
    log_every_seconds: float = _flag(5.0, "progress line and TensorBoard loss summaries interval")
    resume: bool = _flag(False, "continue the run saved in --model-dir (weights, optimizer, counters, config)")

    def validate(self) -> "TrainConfig":
        """Check the user's values (ConfigError naming the flag); returns the config itself."""
        positive = ["workers", "rollout", "envs_per_worker", "env_threads", "lstm_size", "log_every_seconds",
                    "save_every_minutes", "hidden_size", "eval_every_minutes", "eval_episodes"]
        for name in positive:
            if not getattr(self, name) > 0:  # NaN fails too
                raise ConfigError(f"--{flag_name(name)} must be > 0, got {getattr(self, name)}")
        non_negative = ["max_steps", "max_minutes", "gif_every", "save_every_episodes",
                        "value_coef", "policy_coef", "entropy_coef", "keep_checkpoints", "epsilon_decay_steps",
                        "max_game_restarts"]
        for name in non_negative:
            if getattr(self, name) < 0:
                raise ConfigError(f"--{flag_name(name)} must be >= 0, got {getattr(self, name)}")
        for name in ("frame_skip", "reward_scale"):  # None: the preset's, filled in by doom_a3c/run/resolve.py
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ConfigError(f"--{flag_name(name)} must be > 0, got {value}")
        if self.bots is not None and (type(self.bots) is not int or not 0 <= self.bots <= MAX_BOTS):
            raise ConfigError(f"--bots must be a whole number from 0 to {MAX_BOTS} (ViZDoom's 16 players, the "
                              f"agent one of them), got {self.bots!r}")
        if type(self.self_play_opponents) is not int or not 1 <= self.self_play_opponents <= MAX_SELF_PLAY_OPPONENTS:
            raise ConfigError(f"--self-play-opponents must be a whole number from 1 to {MAX_SELF_PLAY_OPPONENTS}, "
                              f"got {self.self_play_opponents!r}")
        if not self.self_play_snapshot_minutes > 0:  # NaN fails too
            raise ConfigError(f"--self-play-snapshot-minutes must be > 0, got {self.self_play_snapshot_minutes}")
        if self.env_processes is not None and self.env_processes < 0:
            raise ConfigError(f"--env-processes must be >= 0, got {self.env_processes}")
        if not self.game_timeout > 0:
            raise ConfigError(f"--game-timeout must be > 0, got {self.game_timeout}")
        for name in ("learning_rate", "clip_norm", "normalize_norm", "return_scale_floor"):
            if not getattr(self, name) > 0:  # NaN fails too
                raise ConfigError(f"--{flag_name(name)} must be > 0, got {getattr(self, name)}")
        stack = self.frame_stack  # None: the preset's; a preset's value is checked here too
        if stack is not None and (type(stack) is not int or not 1 <= stack <= MAX_FRAME_STACK):
            raise ConfigError(f"--frame-stack must be a whole number from 1 to {MAX_FRAME_STACK}, "
                              f"got {self.frame_stack!r}")
        if self.frame_size < MIN_FRAME_SIZE:
            raise ConfigError(f"--frame-size must be >= {MIN_FRAME_SIZE} (the conv torso's smallest input), "
                              f"got {self.frame_size}")
        if self.frame_background is not None and not 0.0 <= self.frame_background <= 255.0:  # NaN fails too
            raise ConfigError(f"--frame-background must be a grey level from 0 to 255, got {self.frame_background}")
        if not 0.0 <= self.entropy_target < 1.0:
            raise ConfigError(f"--entropy-target must be in [0, 1) (a share of the uniform policy's entropy), "
                              f"got {self.entropy_target}")
        if self.n_step < 1:
            raise ConfigError(f"--n-step must be >= 1, got {self.n_step}")
        for name in ("epsilon_start", "epsilon_end", "gamma", "gae_lambda"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"--{flag_name(name)} must be in [0, 1], got {getattr(self, name)}")
        if self.epsilon_spread == "geometric" and not self.epsilon_end > 0:
            raise ConfigError("--epsilon-spread geometric needs --epsilon-end > 0 (e.g. 0.01), or use linear")
        if self.target_reward is not None and not math.isfinite(self.target_reward):
            raise ConfigError(f"--target-reward must be a finite number, got {self.target_reward}")
        if self.policy_heads not in POLICY_HEADS:  # the Python API has no argparse choices
            raise ConfigError(f"--policy-heads must be one of {', '.join(POLICY_HEADS)}, got {self.policy_heads!r}")
        if self.distributed == "ray" and self.trainer == "ga3c":
            raise ConfigError("--distributed ray runs A3C workers (each with its own local copy); "
                              "--trainer ga3c runs in one process: use one or the other")
        if self.lr_schedule == "linear" and not (self.max_steps or self.max_minutes):
            raise ConfigError("--lr-schedule linear anneals to 0 over the run's budget: give --max-steps or "
                              "--max-minutes too")
        if self.optimizer not in OPTIMIZERS:  # the Python API has no argparse choices
            raise ConfigError(f"--optimizer must be one of {', '.join(OPTIMIZERS)}, got {self.optimizer!r}")
        if self.rmsprop_style not in RMSPROP_STYLES:
            raise ConfigError(f"--rmsprop-style must be one of {', '.join(RMSPROP_STYLES)}, got {self.rmsprop_style!r}")
        if self.precision not in PRECISIONS:  # the Python API has no argparse choices
            raise ConfigError(f"--precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if not 0.0 <= self.rmsprop_decay < 1.0:  # NaN fails too
            raise ConfigError(f"--rmsprop-decay must be in [0, 1), got {self.rmsprop_decay}")
        if not (self.rmsprop_epsilon > 0 and math.isfinite(self.rmsprop_epsilon)):
            raise ConfigError(f"--rmsprop-epsilon must be a finite number > 0, got {self.rmsprop_epsilon}")
        return self

    def is_resolved(self) -> bool:
        """True once the scenario's values are filled in (doom_a3c/run/resolve.py): nothing left to look up."""
        return (self.env_kind in ENV_KINDS and bool(self.scenario_path) and bool(self.actions)
                and all(getattr(self, name) is not None for name in ("frame_skip", "reward_scale", "clip_rewards",
                                                                 "env_processes", "ale_vector")))

    def plays_deathmatch(self) -> bool:
        """A ViZDoom deathmatch host (cig, or --bots on a user's map): its episodes are matches, reported with the
        agent's frags, deaths, frags a minute and place."""
        return self.env_kind == "doom" and "-deathmatch" in self.game_args.split()

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        """Strict JSON (no NaN or Infinity): jq, JavaScript and every other reader accept it."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        """The fields this version knows; unknown keys are ignored (a newer or older config)."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def flag_name(field_name: str) -> str:
    return field_name.replace("_", "-")


def is_flag(f: dataclasses.Field) -> bool:
    return f.metadata.get("flag", True)


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse prints usage + error; a user error must be exactly one clear line on stderr."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"error: {message} (see --help)\n")


def _value_type(annotation: str):
    base = annotation.replace(" | None", "")
    return {"int": int, "float": float, "str": str, "bool": bool}[base]


def build_parser(description: str) -> argparse.ArgumentParser:
    """One flag per config field. Nothing has a parser default (SUPPRESS): the flags a user gave are exactly
    the attributes the parsed namespace has, so presets and saved configs can tell them apart."""
    parser = OneLineErrorParser(description=description)
    for f in dataclasses.fields(TrainConfig):
        if not is_flag(f):
            continue
        kwargs = dict(f.metadata)
        help_text = kwargs.pop("help")
        shown_default = kwargs.pop("shown_default", None)  # a default resolved otherwise than from the preset
        kind = _value_type(f.type if isinstance(f.type, str) else f.type.__name__)
        shown = shown_default or ("the preset's" if f.default is None else f.default)
        if kind is bool:
            parser.add_argument("--" + flag_name(f.name), action=argparse.BooleanOptionalAction,
                                default=argparse.SUPPRESS, help=f"{help_text} (default: {shown})")
        else:
            parser.add_argument("--" + flag_name(f.name), type=kind, default=argparse.SUPPRESS,
                                help=f"{help_text} (default: {shown})", **kwargs)
    return parser


def given_values(args: argparse.Namespace) -> dict[str, Any]:
    """The flags given on the command line, by field name."""
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig) if hasattr(args, f.name)}
