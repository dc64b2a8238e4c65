"""progress.csv, the learning curve and its moving mean."""
import os

import numpy as np
import pytest

from doom_a3c.config import TrainConfig
from doom_a3c.run.summaries import EVAL_FIELDS, RunLog, append_evaluation, moving_mean, read_progress, trim_evaluations


def test_moving_mean_by_hand():
    # window 3 over 2, 4, 9, 1: [2], [2, 4], [2, 4, 9], [4, 9, 1]
    np.testing.assert_allclose(moving_mean(np.array([2.0, 4.0, 9.0, 1.0]), 3), [2.0, 3.0, 5.0, 14 / 3])
    assert moving_mean(np.array([]), 100).shape == (0,)


def test_run_log_writes_rows_and_curve_and_resumes_them(tmp_path):
    config = TrainConfig(model_dir=str(tmp_path))
    log = RunLog(str(tmp_path), config)
    for episode in range(1, 6):
        log.episode(wall_s=episode * 1.5, env_steps=episode * 10, episode=episode, worker=0,
                    reward=float(episode), length=10, mean_value=0.0)
    log.plot_curve()
    log.episode(wall_s=9.0, env_steps=60, episode=6, worker=1, reward=-2.5, length=3, mean_value=0.0)
    log.plot_curve()  # appending after a plot: the curve's columns were not pinned by the figure
    log.close()
    rows = read_progress(os.path.join(tmp_path, "progress.csv"))
    assert [r["reward"] for r in rows] == [1.0, 2.0, 3.0, 4.0, 5.0, -2.5]
    assert os.path.getsize(os.path.join(tmp_path, "learning_curve.png")) > 0
    # A resume from a checkpoint at episode 4 keeps the first 4 rows, in the CSV and in the curve.
    resumed = RunLog(str(tmp_path), config, resumed_episodes=4)
    assert list(resumed.curve_rewards) == [1.0, 2.0, 3.0, 4.0] and list(resumed.curve_steps) == [10, 20, 30, 40]
    assert resumed.mean_reward() == 2.5
    resumed.close()
    assert len(read_progress(os.path.join(tmp_path, "progress.csv"))) == 4


def test_a_resume_trims_eval_csv_to_the_checkpoint_it_resumes_from(tmp_path):
    # Evaluations at 100, 200 and 300 env steps; a crash after the checkpoint at 250 steps: the one at 300 is
    # dropped (those steps are played again), the others kept as written; a resume at 300 or more keeps all.
    path = str(tmp_path / "eval.csv")
    for steps, mean in ((100, 1.5), (200, -2.0), (300, 7.25)):
        append_evaluation(path, dict(zip(EVAL_FIELDS, (steps / 10, steps, 4, mean, 0.5, mean - 1, mean + 1))))
    trim_evaluations(path, 300)
    assert [r["env_steps"] for r in read_progress(path)] == [100, 200, 300]
    trim_evaluations(path, 250)
    rows = read_progress(path)
    assert [(r["env_steps"], r["mean"], r["min"]) for r in rows] == [(100, 1.5, 0.5), (200, -2.0, -3.0)]
    assert open(path).readline().strip() == ",".join(EVAL_FIELDS)
    trim_evaluations(str(tmp_path / "none.csv"), 0)  # no eval.csv yet: nothing to do
    assert not os.path.exists(tmp_path / "none.csv")


def test_a_deathmatch_run_adds_match_columns_and_others_keep_theirs(tmp_path):
    from doom_a3c.run.summaries import CSV_FIELDS, progress_fields

    deathmatch = TrainConfig(model_dir=str(tmp_path), env_kind="doom", game_args="-host 1 -deathmatch", bots=7)
    assert progress_fields(deathmatch) == CSV_FIELDS + ["frags", "deaths", "frags_per_minute", "place"]
    assert progress_fields(TrainConfig(env_kind="doom")) == CSV_FIELDS  # a single-player map
    assert progress_fields(TrainConfig(env_kind="atari", game_args="-deathmatch")) == CSV_FIELDS
    log = RunLog(str(tmp_path), deathmatch)
    assert log.mean_frags_per_minute() != log.mean_frags_per_minute()  # NaN before the first match
    match = {"frags": 3.0, "deaths": 2.0, "frags_per_minute": 0.3, "place": 2.0, "players": 8.0}
    log.episode(wall_s=1.0, env_steps=100, episode=1, worker=0, reward=3.0, length=5250, mean_value=0.0, match=match)
    log.episode(wall_s=2.0, env_steps=200, episode=2, worker=1, reward=-1.0, length=5250, mean_value=0.0,
                match={**match, "frags": -1.0, "frags_per_minute": -0.1, "place": 8.0})
    log.summarise_episodes(200)
    assert log.mean_frags_per_minute() == pytest.approx(0.1)
    log.close()
    path = os.path.join(tmp_path, "progress.csv")
    assert open(path).readline().strip() == "wall_s,env_steps,episode,worker,reward,length,frags,deaths," \
                                            "frags_per_minute,place"
    rows = read_progress(path)
    assert [(r["frags"], r["deaths"], r["frags_per_minute"], r["place"]) for r in rows] == [
        (3.0, 2.0, 0.3, 2.0), (-1.0, 2.0, -0.1, 8.0)]


def test_an_older_progress_csv_resumed_as_a_deathmatch_gets_the_columns_empty(tmp_path):
    """A cig run saved before the match columns: its rows are kept, their new cells empty (NaN when read)."""
    path = os.path.join(tmp_path, "progress.csv")
    with open(path, "w") as handle:
        handle.write("wall_s,env_steps,episode,worker,reward,length\n1.5,10,1,0,2,5250\n")
    deathmatch = TrainConfig(model_dir=str(tmp_path), env_kind="doom", game_args="-host 1 -deathmatch", bots=7)
    log = RunLog(str(tmp_path), deathmatch, resumed_episodes=1)
    log.episode(wall_s=3.0, env_steps=20, episode=2, worker=0, reward=1.0, length=5250, mean_value=0.0,
                match={"frags": 1.0, "deaths": 0.0, "frags_per_minute": 0.1, "place": 1.0, "players": 8.0})
    log.close()
    lines = open(path).read().splitlines()
    assert lines[1] == "1.5,10,1,0,2,5250,,,," and lines[2] == "3,20,2,0,1,5250,1,0,0.1,1"
    rows = read_progress(path)
    assert np.isnan(rows[0]["frags"]) and rows[1]["frags"] == 1.0 and [r["reward"] for r in rows] == [2.0, 1.0]
