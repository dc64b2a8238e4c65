"""Every setting of a run, in one typed config that is saved whole beside each checkpoint.

The command line is generated from the dataclass fields, so a flag, its default, its help text and the values it
takes (`choices`, `bounds`) live in one place. `TrainConfig.validate` checks those values whatever they come from:
the command line, a preset's [train] table (`check_values`), the Python API or a saved config. Fields whose default
is None ("the preset's") and the environment fields (`env_kind`, `scenario_path`, `actions`, ...) are filled in
once, by doom_a3c/run/resolve.py, when a run starts; from then on the config is complete and concrete, and that is
what the checkpoint and `config.json` hold (strict JSON). `play.py` and `--resume` read it back and never look at a
preset.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import numbers
import os
from dataclasses import dataclass, field
from typing import Any

from doom_a3c.errors import ConfigError

MIN_FRAME_SIZE = 20  # conv 8x8/4 then 4x4/2 leave a 1x1 map
MAX_FRAME_STACK = 16  # 16 84x84 grey frames: 113 KB an observation, 16x the rollouts' and GA3C batches' memory
MAX_BOTS = 15  # ViZDoom's games hold 16 players
# Steps of random play whose frames give each pixel its background (--frame-norm pixel_background): a few of
# Atari's games, at a cost of well under a second when the run starts.
BACKGROUND_STEPS = 512
MAX_SELF_PLAY_OPPONENTS = 7  # with the learner, 8 agents: Sample Factory's deathmatch self-play (doom_multiagent)
ENV_KINDS = ("doom", "atari", "image", "vector")
TRAINERS = ("a3c", "ga3c")
POLICY_HEADS = ("flat", "factorised")
OPTIMIZERS = ("adam", "rmsprop")
RMSPROP_STYLES = ("tf1", "keras")
PRECISIONS = ("auto", "float32", "bfloat16")  # doom_a3c/algo/model/precision.py
# ViZDoom's audio buffer rates (vizdoom.SamplingRate). 11025, the default: the engine's steps/s with it on are 0.89 of
# off on basic_audio (44100: 0.69), and the game's sounds hold their energy below 2 kHz (docs/defaults/audio.md).
AUDIO_SAMPLING_RATES = (11025, 22050, 44100)


@dataclass(frozen=True)
class Bounds:
    """The numbers a field takes: from `low` to `high` (None: no bound), each end included unless it is `open_`.
    `what` names such a number in the message ("a grey level"), `why` says where a bound comes from."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False
    what: str = ""
    why: str = ""

    def contain(self, value: float) -> bool:
        """False for NaN, which no comparison holds for."""
        above = self.low is None or (value > self.low if self.open_low else value >= self.low)
        below = self.high is None or (value < self.high if self.open_high else value <= self.high)
        return bool(above and below)

    def wording(self, whole: bool, named: bool = False) -> str:
        """"in [0, 1]", "> 0" ("a number > 0" when `named`), "a whole number from 1 to 16"."""
        noun = "a whole number" if whole else "a number"
        if self.low is not None and self.high is not None and (whole or self.what):
            text = f"{self.what or noun} from {self.low} to {self.high}"
        else:
            if self.low is not None and self.high is not None:
                text = f"in {'(' if self.open_low else '['}{self.low}, {self.high}{')' if self.open_high else ']'}"
            elif self.low is not None:
                text = f"{'>' if self.open_low else '>='} {self.low}"
            else:
                text = f"{'<' if self.open_high else '<='} {self.high}"
            text = f"{noun} {text}" if named else text
        return text + (f" ({self.why})" if self.why else "")


ABOVE_ZERO = Bounds(0, open_low=True)
AT_LEAST_ZERO = Bounds(0)
AT_LEAST_ONE = Bounds(1)
SHARE = Bounds(0, 1)  # a probability, a discount


def _flag(default: Any, help: str, *, choices: tuple | None = None, bounds: Bounds | None = None,
          shown_default: str | None = None) -> Any:
    """A field with its flag: `choices` or `bounds` are the values it takes (the parser and `validate` read them),
    `shown_default` the default as --help says it when it is resolved otherwise than from the preset."""
    metadata = {"help": help, "choices": choices, "bounds": bounds, "shown_default": shown_default}
    return field(default=default, metadata={key: value for key, value in metadata.items() if value is not None})


def _resolved(default: Any, help: str) -> Any:
    """A field filled in from the scenario when the run starts; not a command-line flag."""
    return field(default=default, metadata={"help": help, "flag": False})


@dataclass
class TrainConfig:
    # --- environment ---
    scenario: str = _flag("basic.wad", "what to learn: a ViZDoom scenario (basic.wad, or your own .cfg/.wad), an Atari "
                          "game by its ALE id (ALE/Pong-v5), or a gymnasium env with discrete actions (CartPole-v1, "
                          "VizdoomBasic-v1)")
    env_module: str = _flag("", "a Python module to import before --scenario is looked up in gymnasium's registry: "
                            "the one that registers your own env; saved, so play.py and --resume import it again")
    frame_skip: int | None = _flag(None, "game frames per agent step (Doom: tics; Atari: frames, max-pooled; image "
                                   "envs: repeats of each action on top of the env's own frame skip)",
                                   bounds=ABOVE_ZERO, shown_default="the preset's: Doom and Atari 4, gymnasium 1")
    reward_scale: float | None = _flag(None, "multiply game rewards by this for learning (reported scores are never "
                                       "scaled)", bounds=ABOVE_ZERO, shown_default="the preset's: Doom 0.01, others 1")
    clip_rewards: bool | None = _flag(None, "clip learning rewards to [-1, 1] after scaling; the scores in the CSV, "
                                      "TensorBoard and play.py are never clipped",
                                      shown_default="the preset's: on for Atari, off otherwise")
    screen_resolution: str = _flag("RES_160X120", "ViZDoom render resolution; GIFs use it, the network sees "
                                   "--frame-size grey frames")
    frame_size: int = _flag(84, "side in pixels of the square frames the network sees, Doom and Atari (42 costs a "
                            "third of 84's network compute per frame); their height with --frame-width",
                            bounds=Bounds(MIN_FRAME_SIZE, why="the conv torso's smallest input"))
    frame_width: int = _flag(0, "ViZDoom and image envs: width in pixels of the frames the network sees, "
                             "--frame-size their height (128 with --frame-size 72: Sample Factory's); 0: square",
                             bounds=Bounds(0, why="0 (square) or at least the conv torso's smallest input"))
    color: bool | None = _flag(None, "the network sees RGB frames (3 channels) instead of grey ones: ViZDoom "
                               "scenarios and image envs", shown_default="the preset's, else off")
    frame_stack: int | None = _flag(None, "the network sees the last K frames stacked on the channel axis (zeros "
                                    "before an episode's start or a lost life): ViZDoom, Atari and image envs",
                                    bounds=Bounds(1, MAX_FRAME_STACK), shown_default="the preset's, else 1")
    preset: bool = _flag(True, "take the values the scenario's preset sets (scenarios/NAME.toml); --no-preset runs a "
                         "shipped map as your own .cfg runs: with scenarios/defaults/doom.toml")
    action_set: str | None = _flag(None, "Doom actions: 'preset' (the preset's list), 'buttons' (one action per "
                                   "button) or 'combined' (move, turn, strafe and attack at once; at most 64 actions)",
                                   choices=("preset", "buttons", "combined"),
                                   shown_default="'preset' if the preset lists actions, else 'buttons'; "
                                                 "'combined' on a map with no preset")
    policy_heads: str = _flag("flat", "Doom with --action-set combined: 'flat' (one softmax over all the actions) or "
                              "'factorised' (one categorical head per button group, as Sample Factory's Doom policies)",
                              choices=POLICY_HEADS)
    fine_turns: bool = _flag(False, "Doom with --action-set combined: the turn group also offers each turn held for "
                             "the first half of the step only, a finer turn at the same frame skip")
    cfg_variables: bool | None = _flag(None, "Doom: when neither the preset nor the config lists game variables, the "
                                       "network sees those the .cfg lists (available_game_variables: HEALTH, "
                                       "AMMO2...)", shown_default="on for a map without a preset, off under one")
    audio: bool | None = _flag(None, "ViZDoom: the network hears the game: each step's sound (every tic the step "
                               "covers, left and right) through a small audio torso beside the pixels; needs the "
                               "system's OpenAL library (Debian: libopenal1)",
                               shown_default="on where the scenario's .cfg enables the audio buffer (basic_audio), "
                                             "else off")
    audio_sampling_rate: int = _flag(11025, "with --audio: the sound's samples a second, one of "
                                     + ", ".join(map(str, AUDIO_SAMPLING_RATES)) + " (ViZDoom's rates)",
                                     bounds=Bounds(AUDIO_SAMPLING_RATES[0], AUDIO_SAMPLING_RATES[-1],
                                                   why="ViZDoom's rates: " + ", ".join(map(str, AUDIO_SAMPLING_RATES))))
    normalize_variables: bool | None = _flag(None, "Doom, and image envs with vectors beside the image: the network "
                                             "sees its game variables standardised by running means and deviations, "
                                             "saved in the checkpoint",
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
    bots: int | None = _flag(None, "bots added at each Doom episode start; on a map whose preset hosts no deathmatch "
                             "they make it a deathmatch host (scenarios/defaults/doom.toml's [deathmatch])",
                             bounds=Bounds(0, MAX_BOTS, why="ViZDoom's 16 players, the agent one of them"),
                             shown_default="the preset's, else 0")
    bot_curriculum: bool = _flag(False, "a deathmatch with bots: training starts against the weakest bots (level 0) "
                                 "and moves up a level, to 5 (full strength), each time --curriculum-matches matches "
                                 "at a level average --curriculum-frags")
    curriculum_matches: int = _flag(10, "with --bot-curriculum: the last matches at a level whose mean frags decide "
                                    "the move up", bounds=AT_LEAST_ONE)
    # 5 frags a match: about 2 a minute in deathmatch_simple's 2.5-minute matches, half the best full-strength bot's
    # 10 a match there, so an agent that reaches it beats most of a level's bots; a bar at the best bot's own would
    # keep it at a level long after it has learnt to win there.
    curriculum_frags: float = _flag(5.0, "with --bot-curriculum: the mean frags a match at a level that moves the "
                                    "bots up one", bounds=ABOVE_ZERO)
    self_play: bool = _flag(False, "ViZDoom multiplayer maps (cig): every training game is a match against "
                            "--self-play-opponents frozen snapshots of the policy, each in an engine of its own "
                            "(docs/guide/self-play.md)")
    self_play_opponents: int = _flag(1, "with --self-play: opponents in each match (1: a duel)",
                                     bounds=Bounds(1, MAX_SELF_PLAY_OPPONENTS))
    self_play_snapshot_minutes: float = _flag(5.0, "with --self-play: a match that starts when the latest snapshot "
                                              "of the global network is older than this first adds a new one to "
                                              "the opponents' pool (the latest and up to 4 older ones)",
                                              bounds=ABOVE_ZERO)
    frag_reward: float = _resolved(0.0, "reward per frag (deathmatch maps, whose cfg defines none)")
    game_variables: list = field(default_factory=list, metadata={
        "flag": False, "help": "Doom game variables the network sees beside the pixels, each [name, scale] "
        "(HEALTH x 0.01...), or an image env's Dict vectors, element by element ([\"gamevariables[0]\", 1.0]...); "
        "[] = pixels only"})
    reward_shaping: list = field(default_factory=list, metadata={
        "flag": False, "help": "Doom learning bonus per change of a game variable, each [name, reward per unit] or "
        "[name, per unit gained, per unit lost]; added to the learning reward only, never to the reported score; "
        "[] = off"})
    movement_shaping: list = field(default_factory=list, metadata={
        "flag": False, "help": "Doom learning bonus for moving, [per step that moved the player more than D map "
        "units, per step that did not (below 0), D]; never in the reported score; [] = off"})
    exploration_reward: float = _resolved(0.0, "Doom learning bonus for each map cell the player first enters in an "
                                          "episode (episodic count-based exploration); never in the reported score; "
                                          "0 = off")
    exploration_cell: float = _resolved(0.0, "side of those cells in map units (a corridor is about 64-128)")
    bootstrap_timeout: bool = _resolved(False, "Doom: the scenario's episode timeout is a time limit, not a terminal "
                                        "state: learning bootstraps from the value of the last frame (gymnasium and "
                                        "Atari time limits always do); false treats it as terminal")
    # --- workers ---
    workers: int = _flag(os.cpu_count() or 1, "worker threads", bounds=ABOVE_ZERO,
                         shown_default="one per CPU core")
    envs_per_worker: int = _flag(4, "environments each worker steps with one batched forward pass", bounds=ABOVE_ZERO)
    env_threads: int = _flag(2, "threads stepping each worker's games, or each game process's (ViZDoom releases the "
                             "GIL while its engine runs)", bounds=ABOVE_ZERO)
    env_processes: int | None = _flag(None, "0: each worker's games run in this process; P > 0: in P child processes "
                                      "per worker, outside its GIL, where a game that stops answering is killed and "
                                      "replaced (--game-timeout)",
                                      bounds=AT_LEAST_ZERO, shown_default="the preset's: ViZDoom 2, gymnasium 0")
    ale_vector: bool | None = _flag(None, "Atari: each worker's games run in ale-py's vector env (emulation and "
                                    "preprocessing in C++ threads outside the GIL); --no-ale-vector: one gymnasium env "
                                    "a game", shown_default="on for every id the vector env can run")
    game_timeout: float = _flag(30.0, "with --env-processes > 0: a game process whose call has not returned within "
                                "this many seconds is killed with its engines and replaced, its unfinished episodes "
                                "dropped", bounds=ABOVE_ZERO)
    max_game_restarts: int = _flag(5, "a game that dies is restarted with a fresh seed, its episode dropped; more than "
                                   "this many restarts within a minute (all workers) stop the run with a final "
                                   "checkpoint", bounds=AT_LEAST_ZERO)
    seed: int = _flag(0, "base random seed; worker i uses seed + i", bounds=AT_LEAST_ZERO)
    trainer: str = _flag("a3c", "'a3c': each worker acts with its own local copy and applies its own gradients; "
                         "'ga3c': one predictor acts for all games in one batch and a trainer thread learns from "
                         "batches of their rollouts", choices=TRAINERS)
    distributed: str = _flag("none", "'none': every worker is a thread of this process; 'ray': A3C workers run as Ray "
                             "actors in their own processes and the global network in a parameter server (pip "
                             "install ray)", choices=("none", "ray"))
    ray_address: str = _flag("", "with --distributed ray: '' starts a local Ray instance for this run (temp files "
                             "under --model-dir); 'auto' or HOST:PORT joins an existing Ray cluster")
    precision: str = _flag("auto", "what the network computes in: 'float32', 'bfloat16' mixed precision (a CPU with "
                           "avx512_bf16 or amx_bf16) or 'auto': float32 until bfloat16 is measured faster; a "
                           "checkpoint is the same either way", choices=PRECISIONS)
    jit_compile: bool = _flag(False, "compile the acting and learning steps with XLA: fewer, fused ops, but seconds of "
                              "compiling at each network's first steps (docs/measuring/speed-and-memory.md)")
    # --- algorithm ---
    rollout: int = _flag(30, "environment steps per rollout before a gradient update", bounds=ABOVE_ZERO)
    gamma: float = _flag(0.99, "discount factor", bounds=SHARE)
    gae_lambda: float = _flag(1.0, "GAE lambda (1.0: plain discounted returns less the value)", bounds=SHARE)
    normalize_advantages: bool = _flag(False, "scale each update's advantages to mean 0 and std 1 (as PPO "
                                       "implementations do): the policy gradient's size then no longer depends "
                                       "on the reward scale")
    normalize_returns: bool = _flag(False, "scale-free learning (DreamerV3): advantages, value targets and the "
                                    "critic in units of a running 5th-95th percentile range of returns, at least "
                                    "--return-scale-floor, saved in the checkpoint")
    return_scale_floor: float = _flag(1.0, "with --normalize-returns: the least scale, in learning-reward units "
                                      "(DreamerV3's 1 leaves a small sparse reward as it is)", bounds=ABOVE_ZERO)
    value_coef: float = _flag(0.5, "weight of the value loss", bounds=AT_LEAST_ZERO)
    policy_coef: float = _flag(1.0, "weight of the policy-gradient loss", bounds=AT_LEAST_ZERO)
    entropy_coef: float = _flag(0.01, "weight of the entropy bonus", bounds=AT_LEAST_ZERO)
    entropy_target: float = _flag(0.0, "F > 0: the entropy weight grows above --entropy-coef while the policy's "
                                  "entropy is below F times a uniform policy's, and sinks back to it above; 0: a fixed "
                                  "weight", bounds=Bounds(0, 1, open_high=True, why="a share of the uniform "
                                                                                   "policy's entropy"))
    clip_norm: float = _flag(40.0, "clip gradients at this global norm", bounds=ABOVE_ZERO)
    enemy_coef: float = _flag(0.0, "ViZDoom: weight of a learning-only target, a head on the torso that predicts from "
                              "the labels buffer whether an enemy is in view (0 = off; play.py never reads it)",
                              bounds=AT_LEAST_ZERO)
    epochs: int = _flag(1, "passes over each rollout (PPO's epochs): 1 is A3C's one update a rollout; K > 1 takes "
                        "K passes of --minibatches updates each, with the clipped surrogate (--clip-ratio)",
                        bounds=AT_LEAST_ONE)
    clip_ratio: float = _flag(0.2, "with --epochs or --minibatches > 1: the policy loss clips the ratio of new to "
                              "acting probabilities to [1 - this, 1 + this] (PPO's clipped surrogate)",
                              bounds=ABOVE_ZERO)
    minibatches: int = _flag(1, "updates per pass over a rollout, each on an equal share of its games (whole "
                             "sequences, so the LSTM replays them from their first step); at most --envs-per-worker",
                             bounds=AT_LEAST_ONE)
    optimizer: str = _flag("adam", "the one optimizer every worker's gradient goes through (its statistics shared, as "
                           "the A3C paper's shared RMSProp); --resume cannot change it", choices=OPTIMIZERS)
    rmsprop_decay: float = _flag(0.99, "--optimizer rmsprop: decay of the running mean square of the gradient "
                                 "(TensorFlow 1's decay, Keras' rho)", bounds=Bounds(0, 1, open_high=True))
    rmsprop_epsilon: float = _flag(1e-5, "--optimizer rmsprop: added to the mean square inside the square root (a "
                                   "larger one, such as 0.1, with --rmsprop-style keras)", bounds=ABOVE_ZERO)
    rmsprop_style: str = _flag("tf1", "--optimizer rmsprop: 'tf1' starts the mean square at 1, as TensorFlow 1's "
                               "RMSProp for the A3C paper; 'keras' at 0, as Keras 3's RMSprop "
                               "(docs/design/algorithm.md#rmsprop)", choices=RMSPROP_STYLES)
    learning_rate: float = _flag(3e-4, "optimizer learning rate", bounds=ABOVE_ZERO)
    lstm_size: int = _flag(256, "LSTM cell size", bounds=ABOVE_ZERO)
    lstm: bool = _flag(True, "the LSTM core; --no-lstm feeds the torso to the policy and value heads directly")
    hidden_size: int = _flag(256, "units of the dense layer after the conv torso (images), or of each of the two "
                             "dense layers of the vector torso (vector observations such as CartPole's)",
                             bounds=ABOVE_ZERO)
    weight_init: str = _flag("glorot", "initial weights: 'glorot' (the policy and value heads' columns scaled to norm "
                             "0.01 and 1) or 'orthogonal' (gain sqrt(2) in the torso, as the A2C and PPO Atari "
                             "baselines)", choices=("glorot", "orthogonal"))
    activation: str = _flag("elu", "the torso's activation: 'elu' or 'relu' (the Atari baselines'; "
                            "docs/defaults/atari-defaults.md)", choices=("elu", "relu"))
    separate_networks: bool = _flag(False, "separate actor and critic networks: the value head gets its own torso and "
                                    "LSTM instead of sharing the policy's")
    advantage: str = _flag("gae", "advantage estimator: 'gae' (--gae-lambda) or 'nstep' (n-step targets: --n-step, "
                           "--n-step-variant)", choices=("gae", "nstep"))
    n_step: int = _flag(8, "rewards per target with --advantage nstep (1: one-step TD)", bounds=AT_LEAST_ONE)
    n_step_variant: str = _flag("max", "where an n-step horizon runs past the rollout's end: 'max' uses every reward "
                                "left and bootstraps from the last state; 'zero' treats the missing terms as 0",
                                choices=("max", "zero"))
    epsilon_start: float = _flag(0.0, "epsilon-greedy on top of the policy: probability of a uniformly random action "
                                 "at step 0 (0 with --epsilon-end 0: off)", bounds=SHARE)
    epsilon_end: float = _flag(0.0, "epsilon reached after --epsilon-decay-steps environment steps, kept after",
                               bounds=SHARE)
    epsilon_decay_steps: int = _flag(0, "environment steps (all workers) of the linear decay from --epsilon-start "
                                     "to --epsilon-end (0: --epsilon-end from the start)", bounds=AT_LEAST_ZERO)
    epsilon_spread: str = _flag("same", "final epsilon per worker: 'same' (all --epsilon-end), 'linear' or "
                                "'geometric' (worker 0 ends at --epsilon-end, the last at --epsilon-start)",
                                choices=("same", "linear", "geometric"))
    gradient_mode: str = _flag("clip", "'clip' scales the whole gradient to global norm <= --clip-norm; 'normalize' "
                               "caps each tensor's average norm at --normalize-norm", choices=("clip", "normalize"))
    normalize_norm: float = _flag(0.1, "per-element norm bound of --gradient-mode normalize", bounds=ABOVE_ZERO)
    lr_schedule: str = _flag("constant", "'linear' anneals the learning rate to 0 over the run's budget, reaching 0 "
                             "when --max-steps or --max-minutes ends the run (docs/design/algorithm.md)",
                             choices=("constant", "linear"))
    frame_norm: str = _flag("standardize", "frames scaled to [0, 1], then 'standardize': zero mean, unit variance; "
                            "'scale': no more; 'background': less the game's background grey; 'pixel_background': "
                            "each pixel less its own (Atari, image envs)",
                            choices=("standardize", "scale", "background", "pixel_background"))
    frame_background: float | None = _flag(None, "the grey level --frame-norm background subtracts, so that the "
                                           "game's background is 0; saved with the run",
                                           bounds=Bounds(0, 255, what="a grey level"),
                                           shown_default="the most common pixel of the run's first frame")
    frame_background_image: list = _resolved(None, "with --frame-norm pixel_background: each pixel's background "
                                             f"grey (0-255), row by row: its median over {BACKGROUND_STEPS} steps "
                                             "of random play when the run started")
    # --- budget and stopping ---
    max_steps: int = _flag(0, "stop after this many environment steps in total (0 = no limit)", bounds=AT_LEAST_ZERO)
    max_minutes: float = _flag(0.0, "stop after this many minutes of wall time (0 = no limit); counted from the "
                               "start of each leg: a --resume'd run trains this long again", bounds=AT_LEAST_ZERO)
    target_reward: float | None = _flag(None, "stop when the mean unscaled reward of the last 100 episodes reaches "
                                        "this", shown_default="never")
    # --- evaluation during training (doom_a3c/run/periodic_evaluation.py) ---
    evaluate: bool = _flag(True, "evaluate the policy while it trains, in a thread of its own, every "
                           "--eval-every-minutes and at the end of the run: eval.csv, TensorBoard's Eval/*, the best "
                           "weights in best.ckpt")
    eval_every_minutes: float = _flag(5.0, "minutes between evaluations (with --eval-episodes 10, about 0.1 percent "
                                      "of basic.wad's env steps; docs/measuring/evaluation.md)", bounds=ABOVE_ZERO)
    eval_episodes: int = _flag(10, "episodes per evaluation, shared among min(this, --envs-per-worker) games so that "
                               "short episodes are not favoured", bounds=ABOVE_ZERO)
    eval_greedy: bool = _flag(True, "evaluate the most likely action at each step (as SB3's EvalCallback does); "
                              "--no-eval-greedy samples, as training and play.py do")
    # --- outputs ---
    model_dir: str = _flag("models", "checkpoints, config.json, progress.csv, curve PNG and TensorBoard events")
    frames_dir: str = _flag("frames", "GIFs of worker 0's episodes")
    gif_every: int = _flag(25, "record a GIF every N episodes of worker 0 (0 = never)", bounds=AT_LEAST_ZERO)
    video: str = _flag("gif", "format of those recordings: gif, mp4 (H.264, through imageio-ffmpeg) or both",
                       choices=("gif", "mp4", "both"))
    video_tics: bool = _flag(False, "ViZDoom: those recordings show every game tic, not one frame per agent step "
                                    "(smoother; it costs the trainer about 13 percent of its env steps/s on basic.wad)")
    save_every_minutes: float = _flag(2.0, "save a checkpoint at least this often", bounds=ABOVE_ZERO)
    save_every_episodes: int = _flag(250, "also save a checkpoint every N episodes (0 = only by time)",
                                     bounds=AT_LEAST_ZERO)
    keep_checkpoints: int = _flag(3, "numbered checkpoints to keep besides last.ckpt", bounds=AT_LEAST_ZERO)
    log_every_seconds: float = _flag(5.0, "progress line and TensorBoard loss summaries interval", bounds=ABOVE_ZERO)
    resume: bool = _flag(False, "continue the run saved in --model-dir (weights, optimizer, counters, config)")

    def validate(self) -> "TrainConfig":
        """Check every value against its field's type, `choices` and `bounds`, then the values that depend on each
        other: ConfigError naming the flag, the value and what it may be. Returns the config itself."""
        for f in dataclasses.fields(self):
            problem = value_problem(f, getattr(self, f.name))
            if problem:
                raise ConfigError(f"{'--' + flag_name(f.name) if is_flag(f) else f.name} {problem}")
        if self.epsilon_spread == "geometric" and not self.epsilon_end > 0:
            raise ConfigError("--epsilon-spread geometric needs --epsilon-end > 0 (e.g. 0.01), or use linear")
        if self.bot_curriculum and self.distributed == "ray":
            raise ConfigError("--bot-curriculum runs with threads (A3C or GA3C), not with --distributed ray yet")
        if self.bot_curriculum and self.self_play:
            raise ConfigError("--bot-curriculum moves the bots of a deathmatch against bots; --self-play's matches "
                              "are against snapshots of the policy: use one or the other")
        if self.bot_curriculum and self.is_resolved() and not (self.plays_deathmatch() and self.bots):
            raise ConfigError(f"--bot-curriculum needs a deathmatch with bots, and {self.scenario} plays none: give "
                              f"--bots N (a map of your own then hosts a deathmatch)")
        if self.distributed == "ray" and self.trainer == "ga3c":
            raise ConfigError("--distributed ray runs A3C workers (each with its own local copy); "
                              "--trainer ga3c runs in one process: use one or the other")
        if self.audio_sampling_rate not in AUDIO_SAMPLING_RATES:
            raise ConfigError(f"--audio-sampling-rate must be one of {', '.join(map(str, AUDIO_SAMPLING_RATES))} "
                              f"(ViZDoom's rates), got {self.audio_sampling_rate}")
        if self.is_resolved() and self.audio and self.env_kind != "doom":
            raise ConfigError(f"--audio: for ViZDoom scenarios (their engine's sound), not {self.scenario} "
                              f"({self.env_kind})")
        if self.is_resolved() and self.enemy_coef > 0 and self.env_kind != "doom":
            raise ConfigError(f"--enemy-coef needs a ViZDoom scenario (its labels buffer says where enemies are); "
                              f"{self.scenario} is {self.env_kind}")
        # A minibatch is whole games, each needs one at least; a preset may set the games, so only once resolved.
        if self.is_resolved() and self.minibatches > self.envs_per_worker:
            raise ConfigError(f"--minibatches must be at most --envs-per-worker ({self.envs_per_worker}): each "
                              f"minibatch takes whole games, got {self.minibatches}")
        image_problem = background_image_problem(self.frame_background_image)
        if image_problem:
            raise ConfigError(f"frame_background_image {image_problem}")
        if self.is_resolved() and self.frame_norm == "pixel_background" and self.frame_background_image is None:
            raise ConfigError("--frame-norm pixel_background needs the frame_background_image measured when the run "
                              "starts; this config has none")
        if self.lr_schedule == "linear" and not (self.max_steps or self.max_minutes):
            raise ConfigError("--lr-schedule linear anneals to 0 over the run's budget: give --max-steps or "
                              "--max-minutes too")
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


KIND_WORDS = {int: "a whole number", float: "a number", bool: "true or false", str: "a string", list: "a list"}


def _value_type(f: dataclasses.Field) -> type:
    """The field's type without its `| None` (annotations are strings here: `from __future__ import annotations`)."""
    annotation = f.type if isinstance(f.type, str) else f.type.__name__
    return {"int": int, "float": float, "str": str, "bool": bool, "list": list}[annotation.replace(" | None", "")]


def _is_kind(value: Any, kind: type) -> bool:
    """A bool is no number here, though Python counts it as one; an int is a float's value (TOML's `1` for 1.0)."""
    if kind is bool:
        return isinstance(value, bool)
    if kind in (int, float):
        number = numbers.Integral if kind is int else numbers.Real
        return isinstance(value, number) and not isinstance(value, bool)
    return isinstance(value, (list, tuple) if kind is list else kind)


def value_problem(f: dataclasses.Field, value: Any) -> str | None:
    """What is wrong with a value for field `f`, as the end of a sentence: "must be one of a3c, ga3c, got 'x'";
    None when nothing is. The one check of a single value, whatever it comes from."""
    if value is None and (f.default is None or "None" in str(f.type)):
        return None  # the preset's, or not resolved yet
    choices = f.metadata.get("choices")
    if choices is not None:
        return None if isinstance(value, str) and value in choices else \
            f"must be one of {', '.join(choices)}, got {value!r}"
    kind = _value_type(f)
    bounds = f.metadata.get("bounds")
    if not _is_kind(value, kind):
        allowed = bounds.wording(whole=kind is int, named=True) if bounds else KIND_WORDS[kind]
        return f"must be {allowed}, got {value!r}"
    if bounds is not None and not bounds.contain(value):
        return f"must be {bounds.wording(whole=kind is int)}, got {value!r}"
    if kind is float and not math.isfinite(value):
        return f"must be a finite number, got {value!r}"
    return None


def background_image_problem(image: Any) -> str | None:
    """What is wrong with a frame_background_image (rows of equal length of greys 0-255), as the end of a sentence;
    None when nothing is, or there is none."""
    if image is None:
        return None
    if not (isinstance(image, (list, tuple)) and image and all(isinstance(row, (list, tuple)) for row in image)
            and len({len(row) for row in image}) == 1 and image[0]):
        return "must be rows of equal length (a list of lists of greys)"
    if not all(_is_kind(grey, int) and 0 <= grey <= 255 for row in image for grey in row):
        return "must hold whole numbers in [0, 255] (greys)"
    return None


def check_values(values: dict[str, Any], where: str) -> None:
    """Values by field name from a file (a preset's [train] table, a saved config): ConfigError naming `where`, the
    field, the value and what it may be, for the first that is wrong. Names of no field are the caller's to judge."""
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    for name, value in values.items():
        problem = value_problem(fields[name], value) if name in fields else None
        if problem:
            raise ConfigError(f"{where}: {name} {problem}")


class OneLineErrorParser(argparse.ArgumentParser):
    """argparse prints usage + error; a user error must be exactly one clear line on stderr."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"error: {message} (see --help)\n")


def build_parser(description: str) -> argparse.ArgumentParser:
    """One flag per config field. Nothing has a parser default (SUPPRESS): the flags a user gave are exactly
    the attributes the parsed namespace has, so presets and saved configs can tell them apart. The parser converts
    types; `TrainConfig.validate` checks the values (choices too), as it does for every other source."""
    parser = OneLineErrorParser(description=description)
    for f in dataclasses.fields(TrainConfig):
        if not is_flag(f):
            continue
        kind = _value_type(f)
        shown = f.metadata.get("shown_default") or ("the preset's" if f.default is None else f.default)
        help_text = f"{f.metadata['help']} (default: {shown})"
        if kind is bool:
            parser.add_argument("--" + flag_name(f.name), action=argparse.BooleanOptionalAction,
                                default=argparse.SUPPRESS, help=help_text)
        else:
            choices = f.metadata.get("choices")
            parser.add_argument("--" + flag_name(f.name), type=kind, default=argparse.SUPPRESS, help=help_text,
                                metavar="{" + ",".join(choices) + "}" if choices else None)
    return parser


def given_values(args: argparse.Namespace) -> dict[str, Any]:
    """The flags given on the command line, by field name."""
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig) if hasattr(args, f.name)}
