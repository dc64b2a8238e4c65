"""--bot-curriculum through a run: the flags it is refused with, the coordinator that moves the level from the
finished matches (a line of the log, progress.csv's bot_level, TensorBoard's Match/Bot Level), the runners that pass
a move to their games, the checkpoint that keeps the level for --resume, and a short run on deathmatch_simple."""
import dataclasses
import glob
import os

import numpy as np
import pytest

from doom_a3c.algo.model.actor_critic import LSTMState
from doom_a3c.algo.rollout import GameRunner
from doom_a3c.config import TrainConfig
from doom_a3c.envs.batch import EnvBatch
from doom_a3c.envs.interface import EnvSpec
from doom_a3c.errors import ConfigError
from doom_a3c.modes.build import build_global
from doom_a3c.run.coordinator import Coordinator
from doom_a3c.run.summaries import read_progress
from doom_a3c.runtime.checkpoint import read_checkpoint
from doom_a3c.runtime.state import EpisodeResult, RunState

from support import REPO_ROOT, CountingEnv, read_rows, run_in_process, small_config, spec

DEATHMATCH_SIMPLE_CFG = os.path.join(REPO_ROOT, "tests", "fixtures", "deathmatch_simple", "deathmatch_simple.cfg")
HOST = "-host 1 -deathmatch"


def test_the_flags_it_is_refused_with(tmp_path):
    with pytest.raises(ConfigError, match="--bot-curriculum runs with threads"):
        TrainConfig(bot_curriculum=True, distributed="ray").validate()
    with pytest.raises(ConfigError, match="--self-play's matches"):
        TrainConfig(bot_curriculum=True, self_play=True).validate()
    with pytest.raises(ConfigError, match="--curriculum-matches must be >= 1, got 0"):
        TrainConfig(curriculum_matches=0).validate()
    with pytest.raises(ConfigError, match="--curriculum-frags must be > 0"):
        TrainConfig(curriculum_frags=0.0).validate()
    resolved = small_config(tmp_path, bot_curriculum=True, env_processes=0, ale_vector=False)
    with pytest.raises(ConfigError, match="needs a deathmatch with bots, and fake plays none"):
        resolved.validate()  # a single-player map
    with pytest.raises(ConfigError, match="needs a deathmatch with bots"):
        dataclasses.replace(resolved, game_args=HOST, bots=0).validate()
    dataclasses.replace(resolved, game_args=HOST, bots=8).validate()


def test_a_map_with_no_bots_is_one_line(capsys):
    result = run_in_process("train.py", capsys, "--scenario", "basic.wad", "--bot-curriculum")
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["error: --bot-curriculum needs a deathmatch with bots, and basic.wad plays "
                                          "none: give --bots N (a map of your own then hosts a deathmatch)"]


def deathmatch_config(tmp_path, **overrides) -> TrainConfig:
    values = dict(model_dir=str(tmp_path), env_kind="doom", game_args=HOST, bots=8, bot_curriculum=True,
                  curriculum_matches=3, curriculum_frags=5.0, evaluate=False)
    return TrainConfig(**{**values, **overrides})


def match(frags: float, level: float | None) -> dict:
    report = {"frags": frags, "deaths": 2.0, "frags_per_minute": frags / 2.5, "place": 3.0, "players": 9.0}
    return report if level is None else {**report, "bot_level": level}


def test_the_coordinator_moves_the_level_from_the_matches_and_reports_it(tmp_path, capsys):
    import tensorflow as tf

    run = RunState()
    run.counters.bot_level = 0  # where build_global starts a fresh curriculum run
    coordinator = Coordinator(deathmatch_config(tmp_path), type("Backend", (), {"run": run})())
    # Three matches at level 0 average 6 frags; one of them ended before its game was told a level.
    for frags, level in ((9, 0.0), (30, None), (3, 0.0), (6, 0.0), (1, 0.0)):
        run.episodes.put(EpisodeResult(0, frags, 100, 0.0, None, match=match(frags, level)))
    coordinator._log_episodes()
    assert run.counters.bot_level == 1
    assert capsys.readouterr().out.splitlines() == [
        "bot curriculum: level 1 of 5 (mean 6.0 frags a match over the last 3)"]
    # The match at level 0 after the move, and matches at level 1 under the bar, move nothing.
    for frags, level in ((20, 0.0), (4, 1.0), (5, 1.0), (5, 1.0)):
        run.episodes.put(EpisodeResult(0, frags, 100, 0.0, None, match=match(frags, level)))
    coordinator._log_episodes()
    assert run.counters.bot_level == 1 and capsys.readouterr().out == ""
    coordinator.log.close()
    assert open(tmp_path / "progress.csv").readline().strip().endswith(",frags_per_minute,place,bot_level")
    levels = [row["bot_level"] for row in read_progress(str(tmp_path / "progress.csv"))]
    assert np.array_equal(levels, [0, np.nan, 0, 0, 0, 0, 1, 1, 1], equal_nan=True)  # the level each was played at
    levels = [value.simple_value or tf.make_ndarray(value.tensor).item()
              for path in glob.glob(str(tmp_path / "tensorboard" / "events.*"))
              for event in tf.compat.v1.train.summary_iterator(path) for value in event.summary.value
              if value.tag == "Match/Bot Level"]
    assert levels == [0.0, pytest.approx(0.75)]  # each batch's mean level: its matches' that had one


def test_without_the_curriculum_the_coordinator_moves_nothing(tmp_path, capsys):
    run = RunState()
    coordinator = Coordinator(deathmatch_config(tmp_path, bot_curriculum=False), type("Backend", (), {"run": run})())
    for _ in range(5):
        run.episodes.put(EpisodeResult(0, 9.0, 100, 0.0, None, match=match(9.0, None)))
    coordinator._log_episodes()
    coordinator.log.close()
    assert coordinator.curriculum is None and run.counters.bot_level is None and capsys.readouterr().out == ""
    assert open(tmp_path / "progress.csv").readline().strip().endswith(",frags_per_minute,place")


class StillPolicy:
    def start_state(self):
        return LSTMState(np.zeros((1, 2), np.float32), np.zeros((1, 2), np.float32))

    def act(self, observations, starts):
        return np.zeros((len(observations), 3), np.float32), np.zeros(len(observations), np.float32)

    def value(self, observations, starts):
        return np.zeros(len(observations), np.float32)


class LevelRecordingBatch(EnvBatch):
    def __init__(self, envs):
        super().__init__(envs)
        self.told: list = []
        self.told_before_reset: list | None = None

    def set_bot_level(self, level):
        self.told.append(level)
        super().set_bot_level(level)

    def reset(self):
        self.told_before_reset = list(self.told)
        return super().reset()


def test_the_runners_pass_a_move_to_their_games_at_their_next_rollout():
    run = RunState()
    run.counters.bot_level = 2  # a resumed run's level: the first matches are played at it
    games = LevelRecordingBatch([CountingEnv(0, length=3)])
    runner = GameRunner(0, TrainConfig(reward_scale=1.0), games, StillPolicy(), run, seed=0)
    assert games.told_before_reset == [2]
    runner.collect(2)
    assert games.told == [2]  # no move: nothing told again
    run.counters.bot_level = 3
    runner.collect(2)
    assert games.told == [2, 3]
    # Without the curriculum the games are never told anything.
    plain = LevelRecordingBatch([CountingEnv(0, length=3)])
    GameRunner(0, TrainConfig(reward_scale=1.0), plain, StillPolicy(), RunState(), seed=0).collect(2)
    assert plain.told == []


def test_the_checkpoint_keeps_the_level_for_resume(tmp_path):
    config = small_config(tmp_path, bot_curriculum=True)
    parts = build_global(config, spec())
    assert parts.learner.counters.bot_level == 0  # a fresh curriculum run starts at the weakest bots
    parts.learner.counters.bot_level = 3
    prefix = parts.save(episodes=40, wall_seconds=60.0)
    assert read_checkpoint(prefix).counters["bot_level"] == 3
    assert build_global(config, spec(), resume_prefix=prefix).learner.counters.bot_level == 3
    # Resumed with --no-bot-curriculum: full strength; its checkpoints say the run has no level.
    plain = build_global(dataclasses.replace(config, bot_curriculum=False), spec(), resume_prefix=prefix)
    assert plain.learner.counters.bot_level is None
    assert "bot_level" not in read_checkpoint(plain.save(episodes=41, wall_seconds=61.0)).counters


def test_a_checkpoint_older_than_the_curriculum_restores_and_starts_it_at_level_0(tmp_path):
    from doom_a3c.run.saved_config import upgrade_saved_config

    prefix = os.path.join(REPO_ROOT, "tests", "fixtures", "old_basic_checkpoint", "last.ckpt")
    saved = read_checkpoint(prefix)
    assert "bot_level" not in saved.counters
    config = dataclasses.replace(upgrade_saved_config(saved.config, "the fixture"), model_dir=str(tmp_path))
    game_spec = EnvSpec(saved.num_actions, (20, 20, 1), 4 / 35, [])
    assert build_global(config, game_spec, resume_prefix=prefix).learner.counters.bot_level is None
    curriculum = build_global(dataclasses.replace(config, bot_curriculum=True), game_spec, resume_prefix=prefix)
    assert curriculum.learner.counters.bot_level == 0
    assert int(curriculum.learner.counters.env_steps) == int(saved.counters["env_steps"])  # the rest as saved


@pytest.mark.slow
def test_a_short_run_on_deathmatch_simple_plays_its_matches_at_level_0(tmp_path, monkeypatch, capsys):
    """Half a minute with 3-second matches against 2 bots: the start line, every match at level 0 in progress.csv,
    and the level in the checkpoint."""
    from doom_a3c.run.resolve import resolve_new_run
    from doom_a3c.run.training import train_from_flags

    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini into the working directory
    model = tmp_path / "model"
    flags = {"scenario": DEATHMATCH_SIMPLE_CFG, "bots": 2, "bot_curriculum": True, "model_dir": str(model),
             "frames_dir": str(tmp_path / "frames"), "max_minutes": 0.4, "frame_size": 20, "hidden_size": 16,
             "lstm_size": 8, "workers": 1, "envs_per_worker": 2, "env_threads": 1, "gif_every": 0,
             "log_every_seconds": 60.0, "evaluate": False}
    host_args = resolve_new_run(dict(flags)).game_args.replace("+timelimit 10.0", "+timelimit 0.05")
    assert train_from_flags({**flags, "game_args": host_args}) == 0
    out = capsys.readouterr().out
    assert "bot curriculum: level 0 of 5; up a level when the last 10 matches at one average 5 frags" in out
    rows = read_rows(model / "progress.csv")
    assert rows and all(row["bot_level"] == 0 for row in rows)
    assert read_checkpoint(str(model / "last.ckpt")).counters["bot_level"] == 0
