"""benchmarks/atari_suite.py: the scores at the marks, their normalisation and IQM against numbers worked out by hand,
the bootstrap interval, the run subcommand's train.py commands (no training) and the data files."""
import json
import os

import numpy as np
import pytest

from benchmarks import atari_suite
from benchmarks.atari_anchors import ANCHOR_CURVES, DOPAMINE_FILE
from benchmarks.atari_suite import (
    GAMES,
    HUMAN_RANDOM_FILE,
    Run,
    interquartile_mean,
    main,
    markdown,
    read_suite_folder,
    summarize,
)
from doom_a3c.config import build_parser


def write_progress(folder, games):
    """A run folder whose progress.csv holds `games`: (agent steps at the game's end, its score, wall seconds)."""
    os.makedirs(folder, exist_ok=True)
    lines = ["wall_s,env_steps,episode,worker,reward,length"]
    lines += [f"{wall},{steps},{i + 1},0,{score},100" for i, (steps, score, wall) in enumerate(games)]
    with open(os.path.join(folder, "progress.csv"), "w") as handle:
        handle.write("\n".join(lines) + "\n")


@pytest.fixture
def suite(tmp_path):
    # Pong seed 0: the games ending in (750k, 1M] score -15 and -11 (mean -13), in (2.25M, 2.5M] 0 and 4 (mean 2).
    write_progress(tmp_path / "Pong_seed0", [(900_000, -15, 1), (1_000_000, -11, 2), (2_400_000, 0, 3),
                                             (2_500_000, 4, 4)])
    # Breakout: seed 0 stops at 1M with the human score, seed 1 has the random score at 1M and 59.3 at 2.5M.
    write_progress(tmp_path / "Breakout_seed0", [(1_000_000, 30.5, 1)])
    write_progress(tmp_path / "Breakout_seed1", [(800_000, 1.7, 1), (1_000_000, 1.7, 2), (2_500_000, 59.3, 3)])
    # DoubleDunk: one game at 0.5M, so no mark reached.
    write_progress(tmp_path / "DoubleDunk_seed0", [(500_000, -20, 1)])
    return tmp_path


def test_the_table_at_the_marks_and_human_normalised_scores_by_hand(suite):
    summary = summarize(read_suite_folder(str(suite), list(GAMES)))
    at_1m, at_2_5m = summary["marks"]["1M"], summary["marks"]["2.5M"]
    assert summary["games"] == ["DoubleDunk", "Breakout", "Pong"]  # the suite's order
    pong = at_1m["games"]["Pong"]
    assert pong["runs"] == {"seed0": -13.0} and pong["mean"] == -13.0
    assert pong["normalised_mean"] == pytest.approx((-13 + 20.7) / (14.6 + 20.7))  # random -20.7, human 14.6
    assert pong["dopamine"] == {"DQN": -16.6, "C51": -18.9, "Rainbow": -16.5, "IQN": -1.8}  # iteration 3
    breakout = at_1m["games"]["Breakout"]
    assert breakout["runs"] == {"seed0": 30.5, "seed1": 1.7} and breakout["mean"] == pytest.approx(16.1)
    assert breakout["normalised_runs"] == {"seed0": pytest.approx(1.0), "seed1": pytest.approx(0.0)}
    assert breakout["dopamine_normalised"]["DQN"] == pytest.approx((6.7 - 1.7) / (30.5 - 1.7))
    assert at_2_5m["games"]["Pong"]["runs"] == {"seed0": 2.0}
    assert at_2_5m["games"]["Breakout"]["runs"] == {"seed0": None, "seed1": 59.3}
    assert at_2_5m["games"]["Breakout"]["normalised_runs"]["seed1"] == pytest.approx(2.0)
    lines = markdown(summary)
    # each run's agent steps/s: its last row's steps over its wall time (1M in 1 s; 2.5M in 3 s)
    assert breakout["steps_per_second"] == {"seed0": 1_000_000.0, "seed1": pytest.approx(2_500_000 / 3)}
    assert "| Breakout | seed0 30.5 (1,000,000 steps/s), seed1 1.7 (833,333 steps/s) | 16.1 | 6.7 | 13.3 | 15.6 | 31.6 | 0.50 | 0.17 | 0.48 |" in lines
    assert "| Breakout | seed0 - (1,000,000 steps/s), seed1 59.3 (833,333 steps/s) | 59.3 | 21.5 | 47.1 | 41.9 | 102.7 | 2.00 | 0.69 | 1.40 |" in lines
    assert "| DoubleDunk | seed0 - (500,000 steps/s) | - | -20.4 | -23.6 | -22.1 | -19.0 | - | -0.82 | -1.59 |" in lines


def test_a_game_that_reached_no_mark_is_left_out_of_the_iqm_with_a_note(suite):
    iqm = summarize(read_suite_folder(str(suite), list(GAMES)))["marks"]["1M"]["iqm"]
    assert iqm["games"] == ["Breakout", "Pong"] and iqm["left_out"] == ["DoubleDunk"] and iqm["runs"] == 3
    # Three runs: 25% of 3 cuts none, so the IQM is their mean.
    assert iqm["iqm"] == pytest.approx((1.0 + 0.0 + 7.7 / 35.3) / 3)
    # Dopamine's DQN over the same two games: the mean of its two normalised scores.
    assert iqm["dopamine"]["DQN"] == pytest.approx(((6.7 - 1.7) / 28.8 + (-16.6 + 20.7) / 35.3) / 2)
    assert atari_suite.iqm_line(iqm).endswith("Left out (no run reached the mark): DoubleDunk.")


def test_interquartile_mean_of_eight_values_is_the_mean_of_the_middle_four():
    assert interquartile_mean(np.array([10.0, 1, 2, 3, 4, 5, 6, -100])) == pytest.approx(3.5)  # (2+3+4+5)/4


def test_bootstrap_interval_contains_the_iqm_and_is_reproducible():
    rng = np.random.default_rng(7)
    runs = [Run(game, f"seed{seed}", list(rng.uniform(0, 50, size=4))) for game in ("Breakout", "Pong", "Qbert")
            for seed in range(3)]
    first = summarize(runs)["marks"]["1M"]["iqm"]
    low, high = first["ci95"]
    assert low < first["iqm"] < high  # three seeds a game that disagree: a real interval around the estimate
    assert summarize(runs)["marks"]["1M"]["iqm"] == first  # the same resamples each time


def fake_trainer(calls, returncode=0, games=((2_500_000, 5.0, 60.0),)):
    """Stands for run_trainer: records the command and writes the run's progress.csv and config.json."""
    def trainer(command):
        calls.append(command)
        model_dir = command[command.index("--model-dir") + 1]
        write_progress(model_dir, games)
        with open(os.path.join(model_dir, "config.json"), "w") as handle:
            handle.write("{}")
        return returncode
    return trainer


def no_plot(runs, path):
    with open(path, "wb") as handle:  # the plot is tested with the report: here only the commands
        handle.write(b"png")


def test_run_builds_train_py_commands_and_skips_a_finished_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(atari_suite, "plot", no_plot)
    calls = []
    argv = ["run", "--out", str(tmp_path), "--games", "Pong", "--seeds", "1", "--agent-steps", "2500000",
            "--", "--workers", "1"]
    assert main(argv, trainer=fake_trainer(calls)) == 0
    (command,) = calls
    assert command[command.index("--scenario") + 1] == "ALE/Pong-v5"
    assert command[command.index("--seed") + 1] == "1"
    assert command[command.index("--model-dir") + 1] == str(tmp_path / "Pong_seed1")
    assert command[command.index("--max-steps") + 1] == "2500000"
    assert command[command.index("--max-minutes") + 1] == "0"  # no time limit
    assert command[-2:] == ["--workers", "1"] and "--resume" not in command
    parsed = build_parser("train.py").parse_args(command[2:])  # flags train.py takes
    assert (parsed.max_steps, parsed.max_minutes, parsed.workers) == (2_500_000, 0.0, 1)
    assert json.loads((tmp_path / "Pong_seed1" / "suite_run.json").read_text())["budget"] == {
        "agent_steps": 2_500_000, "minutes": 0.0}
    assert (tmp_path / "suite.md").exists() and (tmp_path / "suite.json").exists()
    assert main(argv, trainer=fake_trainer(calls)) == 0
    assert len(calls) == 1 and "Pong seed 1: finished before, skipped" in capsys.readouterr().out


def test_run_resumes_a_stopped_run_with_what_is_left_of_its_minutes_and_reports_a_failure(tmp_path, capsys,
                                                                                          monkeypatch):
    monkeypatch.setattr(atari_suite, "plot", no_plot)
    # A first leg stopped after 10 minutes: a checkpoint's config.json, no suite_run.json.
    write_progress(tmp_path / "Qbert_seed0", [(100_000, 150.0, 600.0)])
    (tmp_path / "Qbert_seed0" / "config.json").write_text("{}")
    calls = []
    argv = ["run", "--out", str(tmp_path), "--games", "Qbert", "--minutes", "30"]
    assert main(argv, trainer=fake_trainer(calls, returncode=1, games=[(200_000, 175.0, 1200.0)])) == 1
    (command,) = calls
    assert "--resume" in command and "--max-steps" not in command
    assert command[command.index("--max-minutes") + 1] == "20"
    assert "error: Qbert seed 0: train.py exited with 1" in capsys.readouterr().err
    assert not (tmp_path / "Qbert_seed0" / "suite_run.json").exists()  # not finished: the next run resumes it


def test_run_reports_every_game_in_the_folder_not_only_the_games_it_ran(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(atari_suite, "plot", no_plot)
    # Qbert finished in an earlier invocation; this one runs Pong only.
    write_progress(tmp_path / "Qbert_seed1", [(1_000_000, 500.0, 600.0)])
    (tmp_path / "Qbert_seed1" / "suite_run.json").write_text("{}")
    argv = ["run", "--out", str(tmp_path), "--games", "Pong", "--seeds", "1", "--agent-steps", "1000000"]
    assert main(argv, trainer=fake_trainer([], games=[(1_000_000, -13.0, 600.0)])) == 0
    out = capsys.readouterr().out
    assert "# Atari suite: 2 games" in out and "| Qbert | seed1 500.0" in out and "| Pong | seed1 -13.0" in out
    assert "IQM of the HNS over 2 games (2 runs)" in out
    assert list(json.loads((tmp_path / "suite.json").read_text())["games"]) == ["Qbert", "Pong"]


@pytest.mark.parametrize("argv, message", [
    (["run", "--out", "OUT", "--games", "Pongg", "--agent-steps", "10"],
     ("error: unknown game 'Pongg': the suite knows BattleZone, DoubleDunk, NameThisGame, Phoenix, Qbert, "
      "Breakout, Pong")),
    (["run", "--out", "OUT", "--games", "Pong"], "error: run needs a budget: --agent-steps N or --minutes M (or both)"),
    (["report", "OUT/missing"], "error: no folder OUT/missing"),
    (["report", "--curves", "Pong=OUT/none.csv", "--out", "OUT"], "error: no file OUT/none.csv"),
])
def test_a_user_error_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    argv = [item.replace("OUT", str(tmp_path)) for item in argv]
    assert main(argv, trainer=lambda command: pytest.fail("no training on a user error")) == 2
    assert capsys.readouterr().err == message.replace("OUT", str(tmp_path)) + "\n"


def test_report_of_curves_writes_table_json_and_plot(tmp_path, capsys):
    write_progress(tmp_path / "a", [(1_000_000, -13, 1)])
    assert main(["report", "--curves", f"Pong={tmp_path / 'a' / 'progress.csv'}", "--out", str(tmp_path / "r")]) == 0
    assert "| Pong | a -13.0 (1,000,000 steps/s) | -13.0 |" in capsys.readouterr().out
    assert json.loads((tmp_path / "r" / "suite.json").read_text())["marks"]["1M"]["games"]["Pong"]["mean"] == -13.0
    assert (tmp_path / "r" / "suite.png").stat().st_size > 0 and not list((tmp_path / "r").glob("*.tmp.png"))


def test_the_data_files_hold_seven_games_four_agents_and_their_sources():
    with open(DOPAMINE_FILE) as dopamine_file, open(HUMAN_RANDOM_FILE) as human_random_file:
        dopamine, human_random = json.load(dopamine_file), json.load(human_random_file)
    assert set(dopamine["games"]) == set(GAMES) == set(human_random["games"])
    for game in GAMES:
        assert set(dopamine["games"][game]) == {"DQN", "C51", "Rainbow", "IQN"}
        assert all(len(curve) == 40 for curve in dopamine["games"][game].values())
        assert human_random["games"][game]["human"] > human_random["games"][game]["random"]
    assert "google/dopamine" in dopamine["source"] and "dqn_zoo" in human_random["source"]
    # atari_anchors reads its Dopamine curves from the file.
    assert ANCHOR_CURVES["Pong"]["Dopamine Rainbow (sticky)"] == dopamine["games"]["Pong"]["Rainbow"][:28]
    assert human_random["games"]["Qbert"] == {"random": 163.9, "human": 13455.0}
