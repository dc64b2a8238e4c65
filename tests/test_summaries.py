"""progress.csv, the learning curve and its moving mean."""
import os

import numpy as np

from doom_a3c.config import TrainConfig
from doom_a3c.summaries import RunLog, moving_mean, read_progress


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
