"""progress.csv, the learning curve and its moving mean."""
import os

import numpy as np

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
