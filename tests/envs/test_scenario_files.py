"""A user's own scenario files are checked before anything is written or moved: a .wad that is not a WAD, a .cfg
naming a missing WAD, a .cfg whose map its WAD lacks are one line on stderr and exit 2."""
import os
import shutil
import struct
import subprocess
import sys

import pytest

from doom_a3c.envs.doom.scenario_files import check_doom_cfg, shipped_scenario_names, shipped_scenarios_dir
from doom_a3c.envs.doom.wad import wad_lumps, wad_maps
from doom_a3c.errors import ConfigError
from doom_a3c.run.training import train_from_flags

from support import REPO_ROOT


def make_wad(path, lumps, kind=b"PWAD"):
    """A WAD with these (empty) lumps."""
    directory = b"".join(struct.pack("<ii8s", 12, 0, name.encode()) for name in lumps)
    path.write_bytes(struct.pack("<4sii", kind, len(lumps), 12) + directory)
    return path


def test_the_maps_of_a_wad_are_read_from_its_directory(tmp_path):
    wad = make_wad(tmp_path / "two.wad", ["MAP01", "THINGS", "LINEDEFS", "MAP07", "TEXTMAP", "ENDMAP", "TITLEPIC"])
    assert wad_lumps(str(wad))[0] == "MAP01"
    assert wad_maps(str(wad)) == ["MAP01", "MAP07"]
    assert wad_maps(os.path.join(shipped_scenarios_dir(), "basic.wad")) == ["MAP01"]


def test_a_truncated_wad_is_refused(tmp_path):
    wad = make_wad(tmp_path / "cut.wad", ["MAP01", "THINGS"])
    wad.write_bytes(wad.read_bytes()[:-10])
    with pytest.raises(ConfigError, match="truncated WAD"):
        wad_lumps(str(wad))


def test_every_shipped_scenario_passes_the_checks():
    for name in shipped_scenario_names():
        check_doom_cfg(os.path.join(shipped_scenarios_dir(), f"{name}.cfg"))


# ---- train.py on bad files: one line, exit 2, nothing written or moved ---------------------------------------
@pytest.fixture
def previous_run(tmp_path):
    """A model folder holding an earlier run, which a fresh run would move to archive/."""
    model_dir = tmp_path / "models"
    model_dir.mkdir()
    (model_dir / "progress.csv").write_text("wall_s,env_steps,episode,worker,reward,length\n")
    return model_dir


def refused(scenario, model_dir, capsys):
    code = train_from_flags({"scenario": str(scenario), "model_dir": str(model_dir),
                             "frames_dir": str(model_dir.parent / "frames"), "max_steps": 10})
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), lines
    assert sorted(os.listdir(model_dir)) == ["progress.csv"]  # nothing archived, no .cfg generated
    assert not (model_dir.parent / "frames").exists()
    return lines[0]


def test_a_wad_that_is_not_a_wad(tmp_path, previous_run, capsys):
    junk = tmp_path / "junk.wad"
    junk.write_text("garbage")
    line = refused(junk, previous_run, capsys)
    assert "junk.wad is not a WAD file" in line and "IWAD or PWAD" in line


def test_a_wad_without_maps(tmp_path, previous_run, capsys):
    line = refused(make_wad(tmp_path / "textures.wad", ["TEXTURE1", "PNAMES"]), previous_run, capsys)
    assert "holds no map" in line


def test_a_cfg_naming_a_missing_wad(tmp_path, previous_run, capsys):
    cfg = tmp_path / "mine.cfg"
    cfg.write_text("doom_scenario_path = nowhere.wad\navailable_buttons = { ATTACK }\n")
    line = refused(cfg, previous_run, capsys)
    assert "names doom_scenario_path " in line and "nowhere.wad, which does not exist" in line


def test_a_cfg_naming_a_junk_wad(tmp_path, previous_run, capsys):
    (tmp_path / "junk.wad").write_text("garbage")
    cfg = tmp_path / "mine.cfg"
    cfg.write_text("doom_scenario_path = junk.wad\navailable_buttons = { ATTACK }\n")
    assert "is not a WAD file" in refused(cfg, previous_run, capsys)


def test_a_cfg_whose_map_is_not_in_its_wad(tmp_path, previous_run, capsys):
    """MAP02 is in the game's IWAD: the engine would train on it without a word, not on the scenario."""
    shutil.copy(os.path.join(shipped_scenarios_dir(), "basic.wad"), tmp_path / "basic_copy.wad")
    cfg = tmp_path / "mine.cfg"
    cfg.write_text("doom_scenario_path = basic_copy.wad\ndoom_map = map02\navailable_buttons = { ATTACK }\n")
    line = refused(cfg, previous_run, capsys)
    assert "its map MAP02 is not in" in line and "whose maps are MAP01" in line


def test_a_cfg_without_buttons(tmp_path, previous_run, capsys):
    shutil.copy(os.path.join(shipped_scenarios_dir(), "basic.wad"), tmp_path / "basic_copy.wad")
    cfg = tmp_path / "mine.cfg"
    cfg.write_text("doom_scenario_path = basic_copy.wad\n")
    assert "makes no buttons available" in refused(cfg, previous_run, capsys)


@pytest.mark.slow
def test_train_py_refuses_a_junk_wad_as_a_user_meets_it(tmp_path):
    """The issue's case, as a new user runs it: `train.py --scenario junk.wad` trained on some other map."""
    (tmp_path / "junk.wad").write_text("garbage")
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "train.py"), "--scenario", "junk.wad",
                           "--max-steps", "10"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stdout[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "junk.wad is not a WAD file" in lines[0], lines
    assert sorted(os.listdir(tmp_path)) == ["junk.wad"]
