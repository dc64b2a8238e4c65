"""What `pip install .` ships, read from pyproject.toml without installing (tests/package/test_install.py installs):
every subpackage of doom_a3c, the presets, and the engine leash as an executable."""
from __future__ import annotations

import os
import tomllib

from support import REPO_ROOT


def pyproject() -> dict:
    with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as handle:
        return tomllib.load(handle)


def test_pyproject_lists_every_subpackage_of_doom_a3c():
    """pyproject lists the packages by hand (the presets come from another folder): a subpackage left out would be
    missing from an install, and only the slow install test would notice."""
    folders = {os.path.relpath(root, REPO_ROOT).replace(os.sep, ".")
               for root, _, files in os.walk(os.path.join(REPO_ROOT, "doom_a3c")) if "__init__.py" in files}
    listed = set(pyproject()["tool"]["setuptools"]["packages"])
    assert "doom_a3c.envs.gym" in folders  # the walk found the subpackages
    assert listed == folders | {"doom_a3c.presets"}


def test_the_engine_leash_ships_beside_the_module_that_starts_it_and_is_executable():
    from doom_a3c.envs.engine import ENGINE_LEASH

    data = pyproject()["tool"]["setuptools"]["package-data"]
    assert ENGINE_LEASH.name in data["doom_a3c.envs"] and ENGINE_LEASH.parent.name == "envs"
    assert os.access(ENGINE_LEASH, os.X_OK), f"{ENGINE_LEASH} is not executable: engines would outlive a killed trainer"
