"""What `pip install .` ships, read from pyproject.toml without installing (tests/package/test_install.py installs):
every subpackage of doom_a3c, the presets, the engine leash as an executable, and the same pins as requirements.txt."""
from __future__ import annotations

import os
import re
import tomllib

import pytest

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


def pins(requirements: list[str]) -> dict[str, str]:
    """{name with its extras: version} of `name==version` requirements; a requirement pinned otherwise is an error."""
    found = {}
    for requirement in requirements:
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+(?:\[[A-Za-z0-9_,\-]+\])?)==([A-Za-z0-9_.\-]+)", requirement.strip())
        assert match, f"not pinned with ==: {requirement!r}"
        found[match.group(1).lower()] = match.group(2)
    return found


def test_requirements_txt_pins_what_pyproject_pins():
    """CI installs requirements.txt and users `pip install .[test]`: the two name the same packages at the same
    versions (requirements.txt holds the extras too)."""
    project = pyproject()["project"]
    declared = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
    with open(os.path.join(REPO_ROOT, "requirements.txt")) as handle:
        required = [line for line in (raw.split("#")[0].strip() for raw in handle) if line]
    assert len(required) == len(pins(required)), "a package listed twice in requirements.txt"
    assert pins(required) == pins(declared)


@pytest.mark.parametrize("loose", ["numpy>=2.4", "numpy", "numpy==2.*"])
def test_pins_reads_names_extras_and_versions_and_refuses_a_loose_pin(loose):
    assert pins(["numpy==2.4.6", "gymnasium[atari]==1.4.0"]) == {"numpy": "2.4.6", "gymnasium[atari]": "1.4.0"}
    with pytest.raises(AssertionError, match="not pinned"):
        pins([loose])
