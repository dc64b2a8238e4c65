#!/usr/bin/env python
"""The peer on deathmatch_simple: Leandro Kieliger's recipe as a user of his would run it instead of ours.
Stable-Baselines3 PPO against 8 bots on his arena, with his frame preprocessing, network, reward shaping and bot
curriculum, frame skip 4, 2 games; training matches and evaluations written in train.py's formats.

    python benchmarks/peer_kieliger.py --seed 0 --minutes 30 --out /tmp/kieliger-seed0

Where each value comes from (github lkiel/rl-doom, MIT licence, copyright (c) 2021 lkiel; this file is written
apart from his code, following its values; the map and its licence are in tests/fixtures/deathmatch_simple/):

- `standalone_examples/common/envs.py`: the host's arguments (HOST_ARGS); `removebots` and 8 `addbot`s at each
  match's start; `respawn_player()` after a step that leaves the player dead; the game's reward, the frags gained;
  the frame (`default_frame_processor`): the 320x240 RGB screen less its top 40 rows and 4 columns each side,
  halved with INTER_AREA to 100x156x3; PPO with `ActorCriticCnnPolicy` and his weight initialisation
  (`init_model`).
- `standalone_examples/common/utils.py`: the actions, every combination of the .cfg's six buttons but none with both
  of MOVE_LEFT/MOVE_RIGHT or TURN_LEFT/TURN_RIGHT, ATTACK alone, no no-op: 18.
- `standalone_examples/common/models.py`: the network (`CustomCNN`): LayerNorm of the input, then three bias-free
  convolutions 32x8/4, 64x4/2, 64x3/1 each followed by LayerNorm and LeakyReLU, a bias-free dense layer of 128 with
  LayerNorm and LeakyReLU; SB3's default heads for a non-NatureCNN extractor on top (64-64 tanh for the policy and
  for the value); every convolution and dense weight of the policy re-drawn Kaiming-normal (a=0.1, fan_in).
- `standalone_examples/Curriculum and Shaping.ipynb`: PPO's settings (3 epochs, 4,096-step rollouts per game,
  minibatch 32, Adam at 1e-4, SB3's defaults otherwise: gamma 0.99, GAE 0.95, clip 0.2, no entropy bonus,
  value coefficient 0.5, gradient norm 0.5), 2 games (`vec_env_with_bots_curriculum(2, ...)`), frame skip 4,
  8 bots; the shaping (ShapingWeights) added to the frags gained; the curriculum (`DoomWithBotsCurriculum`):
  every game starts at level 0 (`pukename change_difficulty 0`, the map's ACS script: bots' speed and health 10%),
  and a game moves up one level when the mean shaped return of its last 10 matches passes 5, 10, 15, 20, 25 at
  levels 0-4 (the window then empties); each game has its own level.

What this script does its own way, or where his notebook and his code differ:

- Standing still pays -5e-4 a step, as his code does (`_compute_distance_reward` returns minus the moving reward);
  the notebook's table and its unused `penalty_factor_distance` say -2.5e-3: `--still-penalty 2.5e-3` plays that.
- Every shaping variable counts from its value at the match's start. His wrapper carried the last match's ammunition
  and damage counts over to the next (its first step paid the difference of ammunition); his notebook notes that
  the engine keeps the damage count over episodes, so only the ammunition of a match's first step differs.
- Each match starts with `new_episode()`, then `removebots`, the 8 `addbot`s and the level (doom_a3c measured that
  bots enter at a level told after their `addbot`s, at the map's own 5 if told before); his reset sent `removebots`
  and the `addbot`s before `new_episode()` and the level after it.
- A match's end is terminal for PPO (his gym `done`), not a truncation.
- Evaluation: every --eval-every-minutes of wall time from the start and once at the end, --eval-episodes (4)
  matches in a game of its own against full-strength bots (level 5), no shaping, actions sampled from the policy,
  as doom_a3c's deathmatch evaluation plays (his `EvalCallback` played 5 matches every 32,768 agent steps, greedy:
  `--eval-deterministic`). It runs in the training loop, between two agent steps, and its time counts in the wall
  time of training (doom_a3c evaluates in a thread beside its workers): a 4-match evaluation is about 5,250 agent
  steps of one game.
- The budget is wall time (--minutes), not his 3M agent steps; the clock starts when PPO starts learning, after its
  games and network are built. Training stops at the first agent step past the budget: an update under way ends
  first (3 epochs of 256 minibatches over a rollout of 8,192 agent steps took about 70 s on 2 cores, after about
  35 s of playing it), then the final evaluation plays. The rows' wall_s say when each thing happened.

Outputs in --out, in train.py's formats (doom_a3c/run/summaries.py) so that the same readers read both:
progress.csv, a row a training match (wall_s, env_steps: agent steps of 4 tics summed over the games, episode,
worker: the game, reward: the game's own score, the frags, never the shaped return; length: agent steps; frags,
deaths, frags_per_minute of game time, place among the 9 players, bot_level the match was played at), and eval.csv
(wall_s and env_steps at the evaluation's start, episodes, mean, std, min, max of the frags a match).

PyTorch and Stable-Baselines3 are not this project's dependencies, and this file imports nothing from doom_a3c (no
TensorFlow): give it an environment of its own, e.g. /tmp/peer, installing a CPU build of PyTorch first
(`torch==2.13.0` where a CPU wheel lies on disk; PyPI's default is a multi-GB CUDA build), then the rest, which
must leave that torch in place:
    python3 -m venv /tmp/peer
    /tmp/peer/bin/pip install torch==2.13.0
    /tmp/peer/bin/pip install stable-baselines3 vizdoom==1.3.2 gymnasium==1.4.0 opencv-python-headless
    /tmp/peer/bin/python benchmarks/peer_kieliger.py --seed 0 --minutes 30 --out /tmp/kieliger-seed0
Ctrl-C or SIGTERM stops it with every game closed (no evaluation at the end; exit 128 + the signal's number).
"""
from __future__ import annotations

import argparse
import itertools
import math
import os
import signal
import sys
import time
from collections import deque
from typing import NamedTuple, Sequence

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SCENARIO = os.path.join(ROOT, "tests", "fixtures", "deathmatch_simple", "deathmatch_simple.cfg")

# train.py's columns (doom_a3c.run.summaries: CSV_FIELDS + MATCH_FIELDS + BOT_LEVEL, and EVAL_FIELDS)
PROGRESS_FIELDS = ["wall_s", "env_steps", "episode", "worker", "reward", "length", "frags", "deaths",
                   "frags_per_minute", "place", "bot_level"]
EVAL_FIELDS = ["wall_s", "env_steps", "episodes", "mean", "std", "min", "max"]

HOST_ARGS = ("-host 1 -deathmatch +viz_nocheat 0 +cl_run 1 +name AGENT +colorset 0 +sv_forcerespawn 1 "
             "+sv_respawnprotect 1 +sv_nocrouch 1 +sv_noexit 1")
BOTS = 8
DIFFICULTY_SCRIPT = "change_difficulty"  # the map's ACS script: level 0-5, bots' speed and health 10%-100%
FULL_STRENGTH = 5
LEVEL_THRESHOLDS = (5.0, 10.0, 15.0, 20.0, 25.0)  # the mean shaped return that leaves level 0, 1, 2, 3, 4
CURRICULUM_WINDOW = 10  # matches
CROP_TOP, CROP_SIDES, SCALE = 40, 4, 0.5  # 240x320 screen -> 200x312 -> 100x156
TICS_PER_SECOND = 35
EVAL_SEED_OFFSET = 20_000  # the evaluation game's seed is --seed + this; training game i's, --seed + 1000 i
# Buttons that cancel each other, and those played alone (his utils.py)
EXCLUSIVE_PAIRS = (("MOVE_LEFT", "MOVE_RIGHT"), ("TURN_LEFT", "TURN_RIGHT"), ("MOVE_FORWARD", "MOVE_BACKWARD"))
ALONE = ("ATTACK",)
AMMO_SLOTS = 10  # AMMO0-9, WEAPON0-9


class PPOSettings(NamedTuple):
    """His PPO settings; SB3's defaults for the rest."""

    n_steps: int = 4096  # agent steps per game per rollout
    batch_size: int = 32
    n_epochs: int = 3
    learning_rate: float = 1e-4  # Adam, constant


class ShapingWeights(NamedTuple):
    """What a training step pays beside nothing else: the frags gained plus his shaping."""

    frag: float = 1.0  # a frag gained (a suicide: -1)
    damage: float = 0.01  # a point of damage dealt
    ammo_gain: float = 0.02  # a unit of ammunition picked up (for a weapon held)
    ammo_loss: float = 0.01  # paid negative, a unit used
    health_gain: float = 0.02  # a point of health gained
    health_loss: float = 0.01  # paid negative, a point lost
    armor_gain: float = 0.01  # a point of armour gained (losses pay nothing)
    moved: float = 5e-4  # a step that moved the player more than move_threshold map units
    still: float = 5e-4  # paid negative, a step that did not (his code's; his notebook's table says 2.5e-3)
    move_threshold: float = 3.0


class Readings(NamedTuple):
    """The game variables the shaping reads after a step."""

    frags: float  # FRAGCOUNT
    damage: float  # DAMAGECOUNT: damage dealt, over the whole game
    health: float  # HEALTH (negative once dead)
    armor: float
    x: float
    y: float
    ammo: tuple[float, ...]  # AMMO0-9
    weapons: tuple[float, ...]  # WEAPON0-9: 1 for a weapon held


HIS_SHAPING = ShapingWeights()


def shaped_reward(last: Readings, now: Readings, weights: ShapingWeights = HIS_SHAPING) -> float:
    """One training step's reward from the readings before and after it: frags, damage dealt, the ammunition of the
    weapons held (their net change: picked up less used), health (a dead player's counted as 0), armour gained, and
    whether the player moved more than the threshold."""
    ammo_change = float(np.dot(np.subtract(now.ammo, last.ammo), now.weapons))
    health_change = max(now.health, 0.0) - max(last.health, 0.0)
    moved = math.hypot(now.x - last.x, now.y - last.y) > weights.move_threshold
    return (weights.frag * (now.frags - last.frags)
            + weights.damage * (now.damage - last.damage)
            + weights.ammo_gain * max(ammo_change, 0.0) + weights.ammo_loss * min(ammo_change, 0.0)
            + weights.health_gain * max(health_change, 0.0) + weights.health_loss * min(health_change, 0.0)
            + weights.armor_gain * max(now.armor - last.armor, 0.0)
            + (weights.moved if moved else -weights.still))


def after_respawn(last: Readings, respawned: Readings) -> Readings:
    """What the next changes count from once the player has respawned: the counters (frags, damage) from before the
    death, everything else from the respawned player, at his wrapper's 100 health and no armour."""
    return respawned._replace(frags=last.frags, damage=last.damage, health=100.0, armor=0.0)


def at_match_start(readings: Readings) -> Readings:
    """What a match's changes count from: its first readings, at 100 health and no armour as his wrapper sets."""
    return readings._replace(health=100.0, armor=0.0)


class BotCurriculum:
    """One game's bot level: from `level` up by one when the mean shaped return of its last CURRICULUM_WINDOW
    matches at this level passes LEVEL_THRESHOLDS[level]; FULL_STRENGTH is the top."""

    def __init__(self, level: int = 0):
        self.level = level
        self.returns: deque[float] = deque(maxlen=CURRICULUM_WINDOW)

    def match_ended(self, shaped_return: float) -> bool:
        """Count a finished match; True when the level rose (for the next match)."""
        self.returns.append(shaped_return)
        if (self.level < FULL_STRENGTH and len(self.returns) == CURRICULUM_WINDOW
                and np.mean(self.returns) > LEVEL_THRESHOLDS[self.level]):
            self.level += 1
            self.returns.clear()
            return True
        return False


def legal_actions(buttons: Sequence[str]) -> list[list[float]]:
    """Every on/off combination of `buttons` (the first the most significant) but those holding both buttons of an
    exclusive pair, an ALONE button with any other, or none."""
    actions = []
    for combo in itertools.product((0.0, 1.0), repeat=len(buttons)):
        held = {name for name, on in zip(buttons, combo) if on}
        if not held or any(set(pair) <= held for pair in EXCLUSIVE_PAIRS):
            continue
        if len(held) > 1 and held & set(ALONE):
            continue
        actions.append(list(combo))
    return actions


def observation_shape(height: int, width: int) -> tuple[int, int, int]:
    """The frame his preprocessing makes of a height x width RGB screen."""
    return (round((height - CROP_TOP) * SCALE), round((width - 2 * CROP_SIDES) * SCALE), 3)


def preprocess(screen: np.ndarray) -> np.ndarray:
    """His frame: the RGB screen's top rows and side columns cut, halved (area averaging)."""
    import cv2

    return cv2.resize(screen[CROP_TOP:, CROP_SIDES:-CROP_SIDES], None, fx=SCALE, fy=SCALE,
                      interpolation=cv2.INTER_AREA)


def match_report(frags: float, deaths: float, tics: float, player_frags: Sequence[float]) -> dict[str, float]:
    """progress.csv's match columns: frags, deaths, frags a minute of game time, and the place (1 + the players with
    more frags; `player_frags` holds every player's, the agent's among them)."""
    minutes = tics / TICS_PER_SECOND / 60.0
    return {"frags": float(frags), "deaths": float(deaths),
            "frags_per_minute": float(frags / minutes) if minutes > 0 else 0.0,
            "place": float(1 + sum(1 for other in player_frags if other > frags))}


# ---- train.py's CSV formats ----------------------------------------------------------------------------------------

def csv_cell(value: float) -> str:
    """A value as train.py writes it: whole numbers without a point, others to 4 places, NaN empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(int(value)) if float(value).is_integer() else f"{value:.4f}".rstrip("0")


class ProgressLog:
    """progress.csv, a row a training match, flushed as it is written."""

    def __init__(self, path: str):
        self._handle = open(path, "w", newline="")
        self._handle.write(",".join(PROGRESS_FIELDS) + "\n")
        self._handle.flush()

    def match(self, wall_s: float, env_steps: int, episode: int, worker: int, length: int,
              report: dict[str, float], bot_level: int) -> None:
        """One finished match; its reward is the game's own score, the frags."""
        row = {"wall_s": round(wall_s, 2), "env_steps": env_steps, "episode": episode, "worker": worker,
               "reward": report["frags"], "length": length, **report, "bot_level": bot_level}
        self._handle.write(",".join(csv_cell(row[k]) for k in PROGRESS_FIELDS) + "\n")
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()


def append_evaluation(path: str, wall_s: float, env_steps: int, scores: Sequence[float]) -> dict[str, float]:
    """One evaluation's row of eval.csv (the header first in a new file), on disk when this returns."""
    values = np.asarray(scores, np.float64)
    row = {"wall_s": round(wall_s, 2), "env_steps": env_steps, "episodes": len(values), "mean": float(values.mean()),
           "std": float(values.std()), "min": float(values.min()), "max": float(values.max())}
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as handle:
        if new:
            handle.write(",".join(EVAL_FIELDS) + "\n")
        handle.write(",".join(csv_cell(row[k]) for k in EVAL_FIELDS) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return row


# ---- the game ------------------------------------------------------------------------------------------------------

class Stopped(Exception):
    """SIGTERM arrived."""


class GameError(Exception):
    """A game could not start."""


class DeathmatchGame:
    """One ViZDoom host against BOTS bots on his map, as his DoomWithBotsShaped / DoomWithBotsCurriculum play it.
    `curriculum` sets the bots' level at each match's start and moves it; without one they play at `level`."""

    def __init__(self, scenario: str, frame_skip: int, seed: int, shaping: ShapingWeights | None,
                 curriculum: BotCurriculum | None = None, level: int = FULL_STRENGTH):
        import vizdoom as vzd

        self._vzd = vzd
        game = vzd.DoomGame()
        game.load_config(scenario)
        game.set_window_visible(False)  # his .cfg shows a window
        game.add_game_args(HOST_ARGS)
        game.set_seed(seed % 2**31)
        try:
            game.init()
        except Exception as error:  # the engine's own error types: one line for the user
            raise GameError(f"ViZDoom could not start {scenario}: {error}") from error
        self.game = game
        self.actions = legal_actions([button.name for button in game.get_available_buttons()])
        self.observation_shape = observation_shape(game.get_screen_height(), game.get_screen_width())
        self.frame_skip = frame_skip
        self.shaping = shaping
        self.curriculum = curriculum
        self.fixed_level = level
        variable = vzd.GameVariable
        self._variables = ([variable.FRAGCOUNT, variable.DAMAGECOUNT, variable.HEALTH, variable.ARMOR,
                            variable.POSITION_X, variable.POSITION_Y]
                           + [getattr(variable, f"AMMO{i}") for i in range(AMMO_SLOTS)]
                           + [getattr(variable, f"WEAPON{i}") for i in range(AMMO_SLOTS)])
        self._player_frags = [getattr(variable, f"PLAYER{i}_FRAGCOUNT") for i in range(1, 17)]
        self._last: Readings | None = None
        self._start: Readings | None = None
        self._deaths_at_start = 0.0
        self._tics = 0
        self._shaped_return = 0.0
        self._length = 0
        self._level = level

    @property
    def level(self) -> int:
        return self.curriculum.level if self.curriculum is not None else self.fixed_level

    def _read(self) -> Readings:
        values = [self.game.get_game_variable(v) for v in self._variables]
        return Readings(*values[:6], tuple(values[6:6 + AMMO_SLOTS]), tuple(values[6 + AMMO_SLOTS:]))

    def _frame(self) -> np.ndarray:
        return preprocess(self.game.get_state().screen_buffer)

    def reset(self) -> np.ndarray:
        self.game.new_episode()
        self._level = self.level
        self.game.send_game_command("removebots")
        for _ in range(BOTS):
            self.game.send_game_command("addbot")
        self.game.send_game_command(f"pukename {DIFFICULTY_SCRIPT} {self._level}")
        self._start = self._read()
        self._last = at_match_start(self._start)
        self._deaths_at_start = self.game.get_game_variable(self._vzd.GameVariable.DEATHCOUNT)
        self._tics = self._length = 0
        self._shaped_return = 0.0
        return self._frame()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, dict]:
        """(frame, reward: shaped in training, the frags gained without shaping, match over, info); a finished
        match's info holds its report ("match"), shaped return and bot level."""
        self.game.make_action(self.actions[action], self.frame_skip)
        self._length += 1
        now, last = self._read(), self._last
        if not self.game.is_episode_finished() and self.game.is_player_dead():
            # respawn_player() plays the tics until the player is back: the match may end during them, and the
            # engine shows no screen after its end (so `finished` is read after it, as his wrapper reads `done`)
            self.game.respawn_player()
            now = self._read()
            last = after_respawn(last, now)
        finished = self.game.is_episode_finished()
        self._tics = self.game.get_episode_time() or self._tics
        reward = shaped_reward(last, now, self.shaping) if self.shaping is not None else now.frags - last.frags
        self._last = now
        self._shaped_return += reward
        if not finished:
            return self._frame(), reward, False, {}
        info = {"match": self._report(now), "shaped_return": self._shaped_return, "bot_level": self._level,
                "length": self._length}
        if self.curriculum is not None and self.curriculum.match_ended(self._shaped_return):
            info["level_rose"] = self.curriculum.level
        return np.zeros(self.observation_shape, np.uint8), reward, True, info

    def _report(self, now: Readings) -> dict[str, float]:
        variable = self._vzd.GameVariable
        players = int(self.game.get_game_variable(variable.PLAYER_COUNT))
        frags = [self.game.get_game_variable(v) for v in self._player_frags[:players]]
        deaths = self.game.get_game_variable(variable.DEATHCOUNT) - self._deaths_at_start
        return match_report(now.frags - self._start.frags, deaths, self._tics, frags)

    def close(self) -> None:
        self.game.close()


# ---- PPO -----------------------------------------------------------------------------------------------------------

def gymnasium_env(game: DeathmatchGame):
    """The game as a gymnasium env for SB3's vector envs (a match's end is terminal, as his gym `done`)."""
    import gymnasium

    class KieligerDeathmatch(gymnasium.Env):
        def __init__(self):
            self.action_space = gymnasium.spaces.Discrete(len(game.actions))
            self.observation_space = gymnasium.spaces.Box(0, 255, game.observation_shape, np.uint8)

        def reset(self, *, seed=None, options=None):
            return game.reset(), {}

        def step(self, action):
            frame, reward, done, info = game.step(int(action))
            return frame, reward, done, False, info

        def close(self):
            game.close()

    return KieligerDeathmatch()


def feature_extractor_class():
    """His CustomCNN (standalone_examples/common/models.py), for any frame size: the LayerNorm shapes follow it."""
    import torch
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    class KieligerCNN(BaseFeaturesExtractor):
        def __init__(self, observation_space, features_dim: int = 128):
            super().__init__(observation_space, features_dim)
            channels, height, width = observation_space.shape  # [C, H, W]: SB3 transposes image frames
            layers: list[torch.nn.Module] = [torch.nn.LayerNorm([channels, height, width])]
            for filters, kernel, stride in ((32, 8, 4), (64, 4, 2), (64, 3, 1)):
                height, width = (height - kernel) // stride + 1, (width - kernel) // stride + 1
                layers += [torch.nn.Conv2d(channels, filters, kernel, stride, bias=False),
                           torch.nn.LayerNorm([filters, height, width]), torch.nn.LeakyReLU()]
                channels = filters
            self.cnn = torch.nn.Sequential(*layers, torch.nn.Flatten())  # [B, 64 x 9 x 16] at 100x156
            self.linear = torch.nn.Sequential(torch.nn.Linear(channels * height * width, features_dim, bias=False),
                                              torch.nn.LayerNorm(features_dim), torch.nn.LeakyReLU())

        def forward(self, observations: torch.Tensor) -> torch.Tensor:
            return self.linear(self.cnn(observations))

    return KieligerCNN


def reinitialise(policy) -> None:
    """His init_model: every convolution's and dense layer's weights of the policy Kaiming-normal (a=0.1, fan_in),
    over SB3's orthogonal ones; biases stay."""
    import torch

    for module in policy.modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)):
            torch.nn.init.kaiming_normal_(module.weight, a=0.1, mode="fan_in", nonlinearity="leaky_relu")


def evaluate(model, game: DeathmatchGame, matches: int, deterministic: bool) -> list[float]:
    """The frags of `matches` whole matches of `game` (full-strength bots, no shaping) played by the policy."""
    scores = []
    for _ in range(matches):
        frame, done, info = game.reset(), False, {}
        while not done:
            action, _ = model.predict(np.transpose(frame, (2, 0, 1)), deterministic=deterministic)  # [C, H, W]
            frame, _, done, info = game.step(int(action))
        scores.append(info["match"]["frags"])
    return scores


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    class OneLineErrors(argparse.ArgumentParser):
        def error(self, message: str) -> None:  # a user error: one line, exit 2
            self.exit(2, f"error: {message} (see --help)\n")

    parser = OneLineErrors(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--minutes", type=float, default=30.0, help="wall-time budget of training")
    parser.add_argument("--out", required=True, help="folder for progress.csv and eval.csv")
    parser.add_argument("--envs", type=int, default=2, help="games side by side (his: 2)")
    parser.add_argument("--frames-per-step", "--frame-skip", dest="frame_skip", type=int, default=4,
                        help="tics each agent step plays (his: 4)")
    parser.add_argument("--eval-every-minutes", type=float, default=5.0)
    parser.add_argument("--eval-episodes", type=int, default=4, help="matches an evaluation plays")
    parser.add_argument("--eval-deterministic", action="store_true",
                        help="evaluate with the most likely action (his EvalCallback's), not sampled ones")
    parser.add_argument("--still-penalty", type=float, default=HIS_SHAPING.still,
                        help="what a step without moving pays, negated (his code: 5e-4; his notebook's table: 2.5e-3)")
    parser.add_argument("--scenario", default=DEFAULT_SCENARIO, help="his deathmatch_simple.cfg (a copy of it)")
    args = parser.parse_args(argv)
    for name in ("minutes", "eval_every_minutes"):
        if not getattr(args, name) > 0:
            parser.error(f"--{name.replace('_', '-')} must be above 0, not {getattr(args, name)}")
    for name in ("envs", "frame_skip", "eval_episodes"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, not {getattr(args, name)}")
    if args.still_penalty < 0:
        parser.error(f"--still-penalty is paid negated: give 0 or more, not {args.still_penalty}")
    if not os.path.isfile(args.scenario):
        parser.error(f"--scenario {args.scenario}: no such file")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        parser.error(f"--out {args.out} is a file, not a folder")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch  # noqa: F401 - SB3's, checked here for the message
        from stable_baselines3 import PPO
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.vec_env import DummyVecEnv, VecTransposeImage
    except ImportError as error:
        print(f"error: the peer needs PyTorch and Stable-Baselines3 ({error}); see this file's docstring",
              file=sys.stderr)
        return 2
    eval_path = os.path.join(args.out, "eval.csv")
    try:
        os.makedirs(args.out, exist_ok=True)
        if os.path.exists(eval_path):
            os.remove(eval_path)  # a fresh run's evaluations only
        log = ProgressLog(os.path.join(args.out, "progress.csv"))
    except OSError as error:
        print(f"error: --out {args.out}: {error.strerror}", file=sys.stderr)
        return 2

    def on_sigterm(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one is enough: the games close in `finally`
        raise Stopped

    signal.signal(signal.SIGTERM, on_sigterm)
    shaping = ShapingWeights(still=args.still_penalty)
    games: list[DeathmatchGame] = []
    eval_game: list[DeathmatchGame] = []  # built at the first evaluation
    stopped_by = None
    try:
        for rank in range(args.envs):
            games.append(DeathmatchGame(args.scenario, args.frame_skip, args.seed + 1000 * rank, shaping,
                                        BotCurriculum(0)))
        envs = VecTransposeImage(DummyVecEnv([lambda game=game: gymnasium_env(game) for game in games]))
        settings = PPOSettings()
        model = PPO("CnnPolicy", envs, seed=args.seed, verbose=0, n_steps=settings.n_steps,
                    batch_size=settings.batch_size, n_epochs=settings.n_epochs, learning_rate=settings.learning_rate,
                    policy_kwargs={"features_extractor_class": feature_extractor_class()}, device="cpu")
        reinitialise(model.policy)
        print(f"peer (Kieliger's PPO): {args.envs} games against {BOTS} bots from level 0, "
              f"{len(games[0].actions)} actions, frames {'x'.join(map(str, games[0].observation_shape))}, "
              f"frame skip {args.frame_skip}, {args.minutes:g} minutes", flush=True)

        def run_evaluation(wall_s: float, env_steps: int) -> None:
            if not eval_game:
                eval_game.append(DeathmatchGame(args.scenario, args.frame_skip, args.seed + EVAL_SEED_OFFSET,
                                                None, level=FULL_STRENGTH))
            scores = evaluate(model, eval_game[0], args.eval_episodes, args.eval_deterministic)
            row = append_evaluation(eval_path, wall_s, env_steps, scores)
            print(f"evaluation at {wall_s / 60:.1f} min, {env_steps:,} env steps: {row['mean']:.2f} frags a match "
                  f"(min {row['min']:g}, max {row['max']:g})", flush=True)

        class Matches(BaseCallback):
            """A progress.csv row per finished match, the evaluations when due, the stop at the budget."""

            def __init__(self):
                super().__init__()
                self.start = time.monotonic()
                self.matches = 0
                self.interval = args.eval_every_minutes * 60
                self.next_evaluation = self.interval

            def seconds(self) -> float:
                return time.monotonic() - self.start

            def _on_step(self) -> bool:
                for worker, info in enumerate(self.locals["infos"]):
                    if "match" not in info:
                        continue
                    self.matches += 1
                    log.match(self.seconds(), self.num_timesteps, self.matches, worker, info["length"],
                              info["match"], info["bot_level"])
                    if "level_rose" in info:
                        print(f"game {worker}: bots at level {info['level_rose']} from {self.num_timesteps:,} env "
                              f"steps ({self.seconds() / 60:.1f} min)", flush=True)
                budget = args.minutes * 60
                if self.next_evaluation <= self.seconds() and self.next_evaluation < budget - 1.0:
                    run_evaluation(self.seconds(), self.num_timesteps)
                    while self.next_evaluation <= self.seconds():  # one that outlasted the interval: the next due
                        self.next_evaluation += self.interval
                return self.seconds() < budget

        callback = Matches()
        model.learn(total_timesteps=10**12, callback=callback)
        wall_s, steps = callback.seconds(), callback.num_timesteps
        run_evaluation(wall_s, steps)
        print(f"peer (Kieliger's PPO): {steps:,} env steps in {wall_s / 60:.1f} min ({steps / wall_s:,.0f} env "
              f"steps/s), {callback.matches} matches, bot levels {[g.level for g in games]}; {args.out}", flush=True)
    except GameError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        stopped_by = signal.SIGINT
    except Stopped:
        stopped_by = signal.SIGTERM
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # closing the games is not to be cut short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for game in games + eval_game:
            game.close()
        log.close()
    if stopped_by is not None:
        print(f"peer: stopped by {signal.Signals(stopped_by).name}; games closed; {args.out}", file=sys.stderr)
        return 128 + stopped_by
    return 0


if __name__ == "__main__":
    sys.exit(main())
