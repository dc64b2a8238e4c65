"""benchmarks/learn_atari.py's curve maths against hand-computed numbers (no training)."""
import json

from benchmarks.atari_anchors import ANCHOR_CURVES, at_mark, table, window_means
from benchmarks.learn_atari import first_reaching, mean_curve, milestone_lines, read_frame_skip


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


def test_milestones_print_the_mean_at_agent_steps_beside_the_anchors_and_every_10_minutes():
    # Games end every 500k agent steps and 6 minutes: means of 2 are 15 (at 1M, 12 min), 25 (1.5M, 18 min),
    # 35 (2M, 24 min), 45 (2.5M, 30 min).
    scores = [10, 20, 30, 40, 50]
    curve = mean_curve([{"wall_s": 360.0 * (i + 1), "env_steps": 500_000 * (i + 1), "reward": s}
                        for i, s in enumerate(scores)], window=2)
    games = [{"wall_s": 360.0 * (i + 1), "env_steps": 500_000 * (i + 1), "reward": s} for i, s in enumerate(scores)]
    lines = milestone_lines(curve, window_means(games), "Breakout", "mean-2")
    # The last 0.25M steps before 1M hold one game (20, ending at 1M); before 2.5M one game (50).
    assert lines[0] == ("mean-2 at 1M agent steps: 15.0 (at 12.0 min), 20.0 over the games of the last 0.25M steps; "
                        "Dopamine DQN (sticky) 6.7, Dopamine C51 (sticky) 13.3, Dopamine Rainbow (sticky) 15.6, "
                        "Dopamine IQN (sticky) 31.6, RLlib A2C (v4, no sticky; mean-100) 23.3")
    assert lines[1].startswith("mean-2 at 2.5M agent steps: 45.0 (at 30.0 min), 50.0 over the games of the last")
    assert lines[1].endswith("RLlib A2C (v4, no sticky; mean-100) 133.7")
    assert lines[2].startswith("mean-2 at 5M agent steps: not reached; Dopamine DQN (sticky) 52.9")
    # The first point at or after 10, 20 and 30 minutes: 12, 24 and 30 min.
    assert lines[3:] == ["mean-2 at 10 min: 15.0 (1,000,000 agent steps)",
                         "mean-2 at 20 min: 35.0 (2,000,000 agent steps)",
                         "mean-2 at 30 min: 45.0 (2,500,000 agent steps)"]
    no_anchors = milestone_lines(curve, window_means(games), "", "mean-2")[0]
    assert no_anchors == "mean-2 at 1M agent steps: 15.0 (at 12.0 min), 20.0 over the games of the last 0.25M steps"


def test_window_means_put_each_game_in_the_quarter_million_steps_it_ended_in():
    games = [{"env_steps": steps, "reward": score}
             for steps, score in [(1, 2), (250_000, 4), (250_001, 10), (400_000, 20), (900_000, 7)]]
    # (0, 250k]: 2 and 4 -> 3; (250k, 500k]: 10 and 20 -> 15; (500k, 750k]: none; (750k, 1M]: 7.
    assert window_means(games) == [3.0, 15.0, None, 7.0]
    assert at_mark(window_means(games), 500_000) == 15.0
    assert at_mark(window_means(games), 2_500_000) is None  # past the curve's end
    assert window_means([]) == []


def test_a_last_window_the_run_only_entered_is_left_out():
    """A run stopped at 1M agent steps logs its last games a few steps past it: they are not (1M, 1.25M]'s mean."""
    games = [{"env_steps": steps, "reward": score}
             for steps, score in [(600_000, 5), (999_000, 7), (1_000_080, 30), (1_000_100, 40)]]
    assert window_means(games) == [None, None, 5.0, 7.0]
    stopped_later = games + [{"env_steps": 1_030_000, "reward": 9}]  # 30k into the window: more than a tenth of it
    assert window_means(stopped_later) == [None, None, 5.0, 7.0, (30 + 40 + 9) / 3]
    assert window_means(games[2:]) == [None, None, None, None, 35.0]  # nothing else to show: kept


def test_the_anchor_table_reads_each_curve_at_the_marks():
    lines = table("Pong", {"ours": [float(i) for i in range(18)]})  # 4.5M steps: the 4M window is index 15
    assert lines[2] == "| ours | 3.0 | 9.0 | 15.0 | - |"
    assert lines[5] == "| Dopamine Rainbow (sticky) | -16.5 | 15.2 | 18.1 | 18.4 |"
    # Every anchor runs to 7M agent steps, one value a quarter million.
    assert all(len(curve) == 28 for curves in ANCHOR_CURVES.values() for curve in curves.values())


def test_anchor_plot_of_a_run_and_one_line_for_a_run_with_no_games(tmp_path, monkeypatch, capsys):
    import sys

    from benchmarks import atari_anchors

    progress = tmp_path / "progress.csv"
    progress.write_text("wall_s,env_steps,episode,worker,reward,length\n1.0,200000,1,0,3,100\n2.0,600000,2,0,5,120\n")
    plot = tmp_path / "pong.png"
    monkeypatch.setattr(sys, "argv", ["atari_anchors.py", "--game", "Pong", "--ours", str(tmp_path),
                                      "--labels", "run", "--out", str(plot)])
    assert atari_anchors.main() == 0
    assert "| doom_a3c run | - | - | - | - |" in capsys.readouterr().out  # 0.6M steps: no mark reached
    assert plot.stat().st_size > 0 and not list(tmp_path.glob("*.tmp.png"))
    monkeypatch.setattr(sys, "argv", ["atari_anchors.py", "--game", "Pong", "--ours", str(tmp_path / "none.csv")])
    assert atari_anchors.main() == 2
    assert capsys.readouterr().err.strip() == f"error: no games in {tmp_path / 'none.csv'}"
