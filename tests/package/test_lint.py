"""ruff over the whole checkout, with the rules pyproject.toml's [tool.ruff] declares: a lint error fails the suite."""
import subprocess
import sys

import pytest

from support import REPO_ROOT


@pytest.mark.slow  # a process of its own
def test_ruff_finds_nothing():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)
    assert "No module named ruff" not in proc.stderr, "ruff is not installed: pip install -r requirements.txt"
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
