"""The scenario presets (scenarios/<name>.toml; installed: doom_a3c/presets/) and the defaults for maps with none
(scenarios/defaults/doom.toml): found, read with based_on resolved, and their [train] tables checked, names and
values. Read only when a run starts: a checkpoint never reads a preset again.
"""
from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

from doom_a3c.config import TrainConfig, check_values
from doom_a3c.envs.scenario import ATARI, DOOM, scenario_name
from doom_a3c.errors import ConfigError


def _presets_dir() -> Path:
    """The presets: `doom_a3c/presets/` when installed (pyproject.toml maps the checkout's top-level
    `scenarios/` there as package data), `scenarios/` beside the package in a checkout."""
    package = Path(__file__).resolve().parents[1]  # doom_a3c/, above this run/ folder
    installed = package / "presets"
    return installed if installed.is_dir() else package.parent / "scenarios"


PRESETS_DIR = _presets_dir()


# `based_on = "defaults"` in a preset: it starts from scenarios/defaults/doom.toml, what a map with no preset runs.
OWN_MAP_DEFAULTS = "defaults"


def preset_path(name: str) -> Path:
    return PRESETS_DIR / f"{name.replace('/', '_')}.toml"  # ALE/Pong-v5 -> ALE_Pong-v5.toml


def own_map_defaults() -> dict:
    """What a ViZDoom map with no preset of its own runs (`scenarios/defaults/doom.toml`): a folder of its
    own, so that no scenario's name (ViZDoom ships a doom.cfg) can be taken for it."""
    return _read_toml(PRESETS_DIR / "defaults" / "doom.toml")


def _read_toml(path: Path) -> dict:
    with open(path, "rb") as handle:
        return tomllib.load(handle)


def load_preset(name: str, _seen: tuple[str, ...] = ()) -> dict:
    """The preset for a scenario name, {} when there is none. A preset with `based_on = "other"` starts from
    the other scenario's preset (its top level and its [train] table) and overrides what it sets itself, so
    variants of one map (basic_audio, learning, ...) share the measured recipe instead of copying it.
    `based_on = "defaults"` starts from what a map with no preset runs (`scenarios/defaults/doom.toml`): such a
    preset keeps only the facts of its map (its target, a crop, ...) and says so by keeping that key."""
    path = preset_path(name)
    if not path.exists():
        return {}
    preset = _read_toml(path)
    base_name = preset.pop("based_on", None)
    if base_name is None:
        return preset
    if base_name == OWN_MAP_DEFAULTS:
        return _over(own_map_defaults(), {**preset, "based_on": OWN_MAP_DEFAULTS})
    seen = _seen + (name,)
    if base_name in seen:
        raise ConfigError(f"preset {path.name}: based_on = {base_name!r} is a cycle")
    if not preset_path(str(base_name)).exists():
        raise ConfigError(f"preset {path.name}: based_on = {base_name!r} is no such preset")
    return _over(load_preset(str(base_name), seen), preset)


def _over(base: dict, preset: dict) -> dict:
    """`preset` over `base`, top level and [train] table alike. A value the preset sets at its top level (frame_skip,
    reward_scale, ...) also drops the base's [train] value of that name, which would otherwise win over it."""
    return {**base, **preset, "train": {**_not_set_by(preset, base.get("train", {})), **preset.get("train", {})}}


def _not_set_by(preset: dict, train: dict) -> dict:
    """`train` less the values `preset` sets at its top level, which win over a [train] table beneath them."""
    return {key: value for key, value in train.items() if key not in preset}


def preset_name(config: TrainConfig) -> str:
    return scenario_name(config.scenario, config.model_dir)


def scenario_preset(config: TrainConfig) -> dict:
    """The scenario's preset, or {} with --no-preset: the map is then run as a user's own .cfg would be. Its
    top-level values are checked here; its [train] table's in `preset_train_defaults`."""
    if not config.preset:
        return {}
    name = preset_name(config)
    preset = load_preset(name)
    check_values(preset, f"preset for {name} ({preset_path(name).name})")
    return preset


def preset_train_defaults(scenario: str, kind: str, preset: dict,
                          deathmatch: dict | None = None) -> tuple[dict[str, Any], str]:
    """The preset's `[train]` table and where it comes from. Every Atari game first takes
    `scenarios/atari.toml`'s; a ViZDoom map with no preset (a user's own, or --no-preset) takes
    `scenarios/defaults/doom.toml`'s, the defaults measured to learn maps nobody tuned for. A deathmatch host's
    `deathmatch` table (doom.toml's [deathmatch], doom_a3c/run/doom_values.py) has its [train] values between those
    and the map's own preset's."""
    # The files read, the first over the others: a game's own preset, the defaults it is based on, atari.toml.
    files = [preset_path(scenario).name] if preset else []
    if preset and on_own_map_defaults(preset):
        files.append("defaults/doom.toml")
    if kind == ATARI:
        files.append(preset_path(ATARI).name)
    source = f"preset for {scenario} ({' over '.join(files)})"
    defaults = load_preset(ATARI).get("train", {}) if kind == ATARI else {}
    if kind == DOOM and not preset:
        defaults = own_map_defaults().get("train", {})
        source = f"{scenario} has no preset; the defaults for such maps (defaults/doom.toml)"
    if deathmatch and deathmatch.get("train"):
        source += ", a deathmatch host (defaults/doom.toml's [deathmatch.train])"
    # A value the map's preset sets at its top level (cig's frame_skip) wins over the deathmatch table's, as it does
    # over the defaults' [train] (`_over`).
    defaults = {**defaults, **_not_set_by(preset, (deathmatch or {}).get("train", {})), **preset.get("train", {})}
    known = {f.name for f in dataclasses.fields(TrainConfig)} - {"preset"}  # a preset cannot turn itself off
    unknown = sorted(set(defaults) - known)
    if unknown:
        raise ConfigError(f"{source} sets unknown options {unknown}")
    check_values(defaults, source)  # every value, one a flag overrides too: the error names the file
    return defaults, source


def on_own_map_defaults(preset: dict) -> bool:
    """No preset, or one that keeps only the facts of its map over scenarios/defaults/doom.toml."""
    return not preset or preset.get("based_on") == OWN_MAP_DEFAULTS
