"""benchmarks/learn_atari.py's curve maths against hand-computed numbers (no training)."""
import json

from benchmarks.learn_atari import first_reaching, mean_curve, read_frame_skip


def rows(scores):
    return [{"wall_s": 60.0 * (i + 1), "env_steps": 1000 * (i + 1), "reward": s} for i, s in enumerate(scores)]


def test_mean_curve_starts_at_the_window_th_game():
    curve = mean_curve(rows([-21, -19, -5, 1, 21]), window=3)
    # (-21-19-5)/3 = -15, (-19-5+1)/3 = -23/3, (-5+1+21)/3 = 17/3
    assert [point[:2] for point in curve] == [(180.0, 3000), (240.0, 4000), (300.0, 5000)]
    assert [round(point[2], 4) for point in curve] == [-15.0, round(-23 / 3, 4), round(17 / 3, 4)]


def test_first_reaching_the_target():
    curve = mean_curve(rows([0, 10, 20, 18, 30]), window=2)  # means 5, 15, 19, 24
    assert first_reaching(curve, 18) == (240.0, 4000, 19.0)
    assert first_reaching(curve, 25) is None


def test_frames_come_from_the_saved_frame_skip(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"frame_skip": 4, "scenario": "ALE/Pong-v5"}))
    assert read_frame_skip(str(tmp_path)) == 4
