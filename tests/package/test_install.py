"""`pip install .` into a fresh virtual environment, then the installed commands from another folder: --help, a
500-step training that finds its preset and leashes its engines, and play on its checkpoint.

The venv sees the site-packages of the Python running the tests through a .pth file (TensorFlow and friends are not
downloaded again; `--system-site-packages` would show the base interpreter's instead, which in a virtual environment
has none of them), and the package is built the way a user's `pip install .` builds it: in pip's isolated build
environment, with the setuptools pyproject.toml asks for, whatever setuptools and wheel the test's Python holds (a
fresh Python 3.11 has setuptools 65.5, and wheel 0.46+ no longer provides `bdist_wheel`: a build without isolation
failed there). What it checks is the package itself: its modules, presets, engine leash and console scripts."""
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from support import REPO_ROOT

pytestmark = pytest.mark.slow
SOURCES = ("doom_a3c", "scenarios", "pyproject.toml", "README.md", "requirements.txt")


def run(command, cwd, timeout=300):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TF_CPP_MIN_LOG_LEVEL")}
    return subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    base = tmp_path_factory.mktemp("install")
    source = base / "source"  # a copy: the build writes build/ and *.egg-info beside the sources
    source.mkdir()
    for name in SOURCES:
        path = os.path.join(REPO_ROOT, name)
        if os.path.isdir(path):
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, source / name)
    proc = run([sys.executable, "-m", "venv", base / "venv"], base)
    assert proc.returncode == 0, proc.stderr
    venv_python = base / "venv" / "bin" / "python"
    proc = run([venv_python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], base)
    assert proc.returncode == 0, proc.stderr
    # After the venv's own site-packages on sys.path: the installed doom_a3c comes first, the dependencies after.
    Path(proc.stdout.strip(), "test_python_packages.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    proc = run([venv_python, "-m", "pip", "install", "--no-deps", "-q", "--disable-pip-version-check", source], base)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return base / "venv"


def test_the_installed_package_is_the_one_imported_and_carries_its_data(venv, tmp_path):
    proc = run([venv / "bin" / "python", "-c", "import doom_a3c, doom_a3c.run.presets as s, doom_a3c.envs.engine as d; "
                "print(doom_a3c.__file__); print(s.PRESETS_DIR); print(d.ENGINE_LEASH)"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    package, presets, leash = proc.stdout.split()
    assert package.startswith(str(venv)) and presets.startswith(str(venv)) and presets.endswith("doom_a3c/presets")
    tomls = lambda folder: sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*.toml"))  # noqa: E731
    assert tomls(presets) == tomls(os.path.join(REPO_ROOT, "scenarios"))  # defaults/doom.toml too
    assert os.access(leash, os.X_OK)  # ViZDoom runs it as its engine binary


def test_installed_commands_train_and_play_from_another_folder(venv, tmp_path):
    train, play = venv / "bin" / "doom-a3c-train", venv / "bin" / "doom-a3c-play"
    proc = run([train, "--help"], tmp_path)
    assert proc.returncode == 0 and "--max-steps" in proc.stdout and "--video" in proc.stdout, proc.stderr
    proc = run([train, "--scenario", "basic.wad", "--max-steps", 500, "--workers", 1, "--envs-per-worker", 2,
                "--gif-every", 0, "--log-every-seconds", 1, "--no-evaluate"], tmp_path)  # spares a final evaluation
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "preset for basic (basic.toml)" in proc.stdout
    assert "stopped: reached --max-steps 500" in proc.stdout
    assert "setpriv" not in proc.stderr  # the installed engine leash works
    assert (tmp_path / "models" / "last.ckpt.index").is_file()
    proc = run([play, "--model", "models/last.ckpt", "--out", "out", "--episodes", 1, "--video", "mp4"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "out" / "episode_001.mp4").is_file() and (tmp_path / "out" / "results.json").is_file()
