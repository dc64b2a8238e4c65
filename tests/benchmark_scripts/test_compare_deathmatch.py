"""benchmarks/compare_deathmatch.py: the evaluations of two deathmatch runs (eval.csv as train.py and the peer write
it) side by side, the evaluation nearest given minutes and frames against hand numbers, and bad --run values."""
import importlib.util
import os

import pytest

from doom_a3c.run.summaries import append_evaluation

from support import REPO_ROOT


@pytest.fixture(scope="module")
def compare():
    path = os.path.join(REPO_ROOT, "benchmarks", "compare_deathmatch.py")
    spec = importlib.util.spec_from_file_location("compare_deathmatch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_evaluations(folder, rows):
    os.makedirs(folder, exist_ok=True)
    for wall_s, env_steps, mean in rows:
        append_evaluation(str(folder / "eval.csv"), {"wall_s": wall_s, "env_steps": env_steps, "episodes": 4,
                                                     "mean": mean, "std": 0.0, "min": mean, "max": mean})
    return str(folder)


def test_each_runs_evaluation_nearest_the_minutes_and_frames(compare, tmp_path, capsys):
    ours = write_evaluations(tmp_path / "ours", [(600, 300_000, 3.0), (1800, 900_000, 6.5), (3600, 1_800_000, 9.25)])
    peer = write_evaluations(tmp_path / "peer", [(1700, 100_000, 1.0), (3500, 210_000, 2.0)])
    assert compare.main(["--run", f"ours={ours}:6", "--run", f"peer={peer}:4", "--minutes", "30", "60",
                         "--frames", "4e6", "12e6", "--out", str(tmp_path / "figure.png")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| run | 30 min | 60 min | 4M frames | 12M frames |"
    # ours: 900k env steps x 6 = 5.4M frames is nearest 4M (1.8M is 2.2M away), 10.8M nearest 12M
    assert lines[2] == ("| ours | 6.50 (30 min, 5.4M) | 9.25 (60 min, 10.8M) | 6.50 (30 min, 5.4M) "
                        "| 9.25 (60 min, 10.8M) |")
    # the peer: 100k x 4 = 0.4M and 210k x 4 = 0.84M frames, both far below 4M: its last is nearest
    assert lines[3] == ("| peer | 1.00 (28 min, 0.4M) | 2.00 (58 min, 0.8M) | 2.00 (58 min, 0.8M) "
                        "| 2.00 (58 min, 0.8M) |")
    assert (tmp_path / "figure.png").stat().st_size > 10_000


def test_a_run_given_as_its_evaluations_csv_reads_as_its_folder(compare, tmp_path):
    folder = write_evaluations(tmp_path / "ours", [(600, 300_000, 3.0), (1800, 900_000, 6.5)])
    kept = tmp_path / "ours_eval.csv"
    kept.write_bytes((tmp_path / "ours" / "eval.csv").read_bytes())
    assert compare.evaluations(str(kept), 6) == compare.evaluations(folder, 6) == [(10.0, 1.8e6, 3.0),
                                                                                   (30.0, 5.4e6, 6.5)]


@pytest.mark.parametrize("run, problem", [("ours/models:6", "expected LABEL=FOLDER:FRAME_SKIP"),
                                          ("ours=/tmp/x", "expected LABEL=FOLDER:FRAME_SKIP"),
                                          ("ours=/tmp/x:0", "expected LABEL=FOLDER:FRAME_SKIP"),
                                          ("ours={missing}:6", "eval.csv: no such file"),
                                          ("ours={missing}.csv:6", "nothing.csv: no such file")])
def test_a_bad_run_is_one_line_and_exit_2(compare, tmp_path, capsys, run, problem):
    assert compare.main(["--run", run.format(missing=tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert problem in err and err.count("\n") == 1, err
