"""Every shipped scenario resolves to the config it resolved to when tests/fixtures/shipped_configs.json was written:
a change of code that moves a default, a preset's value or what a .cfg gives (a preset folder not found, say) fails
here, naming the scenario and the fields. A change of defaults made on purpose rewrites the file:

    python tests/run/test_shipped_configs.py --write
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import sys

if __name__ == "__main__":  # run as a script: the package and tests/support.py from the checkout
    sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))]

from doom_a3c.envs.doom.scenario_files import shipped_scenario_names
from doom_a3c.run.presets import PRESETS_DIR
from doom_a3c.run.resolve import resolve_new_run

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "shipped_configs.json")
MODEL_DIR = "/tmp/doom_a3c_shipped_configs/models"  # never written: resolving a config writes nothing
VIZDOOM = "<vizdoom scenarios>"


def cases() -> dict[str, dict]:
    """Label -> the flags given: every shipped single-player scenario on its preset, two on the defaults alone, and
    a gymnasium id of each kind. The worker count is given, so the file is the same on any number of cores."""
    given = {name: {"scenario": name} for name in shipped_scenario_names()}
    given.update({f"{name} --no-preset": {"scenario": name, "preset": False}
                  for name in ("defend_the_center", "health_gathering")})
    given.update({name: {"scenario": name} for name in ("ALE/Pong-v5", "ALE/Breakout-v5", "CartPole-v1",
                                                           "VizdoomBasic-v1")})
    return {label: {**flags, "model_dir": MODEL_DIR, "workers": 2} for label, flags in given.items()}


def resolved(flags: dict) -> dict:
    """The config a fresh run with these flags saves, with ViZDoom's install folder named, not spelt out."""
    import vizdoom

    with contextlib.redirect_stdout(io.StringIO()):  # the preset's values, said as a run starts
        config = json.loads(resolve_new_run(flags).to_json())
    config["scenario_path"] = config["scenario_path"].replace(vizdoom.scenarios_path, VIZDOOM)
    if (image := config.get("frame_background_image")) is not None:  # a measurement, not a default: its shape only
        config["frame_background_image"] = f"{len(image)} rows of {len(image[0])} greys"
    return config


def test_the_presets_folder_is_found_and_holds_the_shipped_presets():
    assert (PRESETS_DIR / "basic.toml").is_file() and (PRESETS_DIR / "defaults" / "doom.toml").is_file(), PRESETS_DIR


def test_every_shipped_scenario_resolves_to_the_recorded_config():
    with open(FIXTURE) as handle:
        recorded = json.load(handle)
    given = cases()
    assert sorted(given) == sorted(recorded), "scenarios added or gone: rewrite the file (--write)"
    for label, flags in given.items():
        config = resolved(flags)
        keys = sorted(set(config) | set(recorded[label]))
        changed = {key: (recorded[label].get(key), config.get(key)) for key in keys
                   if config.get(key) != recorded[label].get(key)}
        assert not changed, f"{label}: (recorded, now) {changed}"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/run/test_shipped_configs.py --write")
    configs = {label: resolved(flags) for label, flags in cases().items()}
    with open(FIXTURE + ".tmp", "w") as handle:
        json.dump(configs, handle, indent=1, sort_keys=True)
        handle.write("\n")
    os.replace(FIXTURE + ".tmp", FIXTURE)
    print(f"wrote {len(configs)} configs to {FIXTURE}")
