"""The one place a run's config is put together: command line, preset and saved config, merged once.

- A fresh run: the flags given on the command line, over the scenario preset's `[train]` table, over the
  dataclass defaults; then the environment values (kind, .cfg path, action set as button lists, frame
  skip, reward scale, clipping, crop, ...) from the preset's top level, else the defaults of the kind.
- `--resume`: the checkpoint's saved config, with only the flags given on the command line replaced.
- `play.py`: the checkpoint's saved config as it is.

Afterwards every value is concrete (`TrainConfig.is_resolved`), and nothing reads a preset again: an
edited preset never changes what an old checkpoint plays or how it resumes. A checkpoint made before
configs were saved whole has its missing values resolved here once, from today's preset, with a warning.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from typing import Any

from doom_a3c.config import ConfigError, TrainConfig
from doom_a3c.scenarios import (ATARI, DOOM, VECTOR, environment_kind, find_doom_scenario, load_preset,
                                preset_path, scenario_name)

KIND_NAMES = {DOOM: "a ViZDoom scenario", ATARI: "an Atari game", VECTOR: "a vector-observation env"}
# frame skip, reward scale, reward clipping for each kind when the preset does not say
KIND_DEFAULTS = {DOOM: (4, 0.01, False), ATARI: (4, 1.0, True), VECTOR: (1, 1.0, False)}
NO_CROP = [0.0, 0.0, 0.0, 0.0]


def _preset_name(config: TrainConfig) -> str:
    return scenario_name(config.scenario, config.model_dir)


def _preset_train_defaults(scenario: str, kind: str, preset: dict) -> dict[str, Any]:
    """The preset's `[train]` table; every Atari game first takes `scenarios/atari.toml`'s."""
    defaults = load_preset(ATARI).get("train", {}) if kind == ATARI else {}
    defaults = {**defaults, **preset.get("train", {})}
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(defaults) - known)
    if unknown:
        raise ConfigError(f"preset for {scenario} sets unknown options {unknown}")
    return defaults


def _doom_buttons(cfg_path: str) -> list[str]:
    """The buttons a .cfg makes available, in make_action's order (read without starting an engine)."""
    import vizdoom as vzd

    game = vzd.DoomGame()
    try:
        game.load_config(cfg_path)
    except Exception as error:  # ViZDoom raises its own exception types
        raise ConfigError(f"cannot load scenario config {cfg_path}: {str(error).splitlines()[0]}") from None
    return [str(b).split(".")[-1].split(":")[0] for b in game.get_available_buttons()]


def _named_values(scenario: str, key: str, value: Any) -> list[list]:
    """A preset's [[GAME_VARIABLE, number], ...] list, checked: names ViZDoom knows, finite numbers."""
    import vizdoom as vzd

    pairs = []
    for entry in value or []:
        if not (isinstance(entry, (list, tuple)) and len(entry) == 2 and isinstance(entry[0], str)
                and isinstance(entry[1], (int, float)) and math.isfinite(entry[1])):
            raise ConfigError(f"preset for {scenario}: each entry of {key} must be [\"GAME_VARIABLE\", number], "
                              f"got {entry!r}")
        if not hasattr(vzd.GameVariable, entry[0]):
            raise ConfigError(f"preset for {scenario}: {key} names {entry[0]!r}, which is not a ViZDoom game "
                              f"variable (e.g. HEALTH, AMMO2, KILLCOUNT, ARMOR)")
        pairs.append([entry[0], float(entry[1])])
    return pairs


def _exploration(scenario: str, config: TrainConfig, preset: dict[str, Any]) -> dict[str, float]:
    """The preset's exploration bonus, checked: a finite reward and, when it is on, a positive cell size."""
    reward = config.exploration_reward or preset.get("exploration_reward", 0.0)
    cell = config.exploration_cell or preset.get("exploration_cell", 0.0)
    for key, value in (("exploration_reward", reward), ("exploration_cell", cell)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ConfigError(f"preset for {scenario}: {key} must be a number, got {value!r}")
    if reward and cell <= 0:
        raise ConfigError(f"preset for {scenario}: exploration_reward needs exploration_cell > 0 (map units), "
                          f"got {cell!r}")
    return {"exploration_reward": float(reward), "exploration_cell": float(cell)}


def _preset_bool(scenario: str, preset: dict[str, Any], key: str, given: bool) -> bool:
    value = given or preset.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"preset for {scenario}: {key} must be true or false, got {value!r}")
    return value


def check_screen_resolution(name: str) -> None:
    import vizdoom as vzd

    if not name.startswith("RES_") or not hasattr(vzd.ScreenResolution, name):
        raise ConfigError(f"unknown --screen-resolution {name!r}; e.g. RES_160X120, RES_320X240, RES_640X480")


def resolve_environment(config: TrainConfig) -> TrainConfig:
    """Fill in every environment value still missing from the scenario and its preset."""
    kind = environment_kind(config.scenario)
    name = _preset_name(config)
    preset = load_preset(name)
    frame_skip, reward_scale, clip_rewards = KIND_DEFAULTS[kind]
    values: dict[str, Any] = {
        "env_kind": kind,
        "frame_skip": config.frame_skip or int(preset.get("frame_skip", frame_skip)),
        "reward_scale": config.reward_scale or float(preset.get("reward_scale", reward_scale)),
        "clip_rewards": config.clip_rewards if config.clip_rewards is not None
        else bool(preset.get("clip_rewards", clip_rewards)),
    }
    if kind == DOOM:
        _, cfg_path = find_doom_scenario(config.scenario, config.model_dir)
        check_screen_resolution(config.screen_resolution)
        buttons = _doom_buttons(cfg_path)
        actions = config.actions or preset.get("actions") or [[b] for b in buttons if not b.endswith("_DELTA")]
        if not actions:
            raise ConfigError(f"{cfg_path} makes no buttons available: list them in its available_buttons "
                              f"(e.g. available_buttons = {{ MOVE_LEFT MOVE_RIGHT ATTACK }})")
        unknown = sorted({b for combo in actions for b in combo} - set(buttons))
        if unknown:
            raise ConfigError(f"preset for {name} uses buttons {unknown} that its cfg does not make "
                              f"available ({buttons})")
        values.update(scenario_path=cfg_path, actions=[list(combo) for combo in actions],
                      crop=[float(x) for x in (config.crop or preset.get("crop", NO_CROP))],
                      game_args=config.game_args or str(preset.get("game_args", "")),
                      bots=config.bots or int(preset.get("bots", 0)),
                      frag_reward=config.frag_reward or float(preset.get("frag_reward", 0.0)),
                      color=config.color or bool(preset.get("color", False)),
                      game_variables=_named_values(name, "game_variables",
                                                   config.game_variables or preset.get("game_variables")),
                      reward_shaping=_named_values(name, "reward_shaping",
                                                   config.reward_shaping or preset.get("reward_shaping")),
                      bootstrap_timeout=_preset_bool(name, preset, "bootstrap_timeout", config.bootstrap_timeout),
                      **_exploration(name, config, preset))
    else:
        from doom_a3c.gym_envs import gym_action_names

        # Building one game is the only sure check (missing ROM, continuous actions, image obs...).
        names = gym_action_names(config.scenario, config.frame_size)
        values.update(scenario_path=config.scenario, actions=config.actions or [[n] for n in names],
                      crop=config.crop or NO_CROP)
    return dataclasses.replace(config, **values)


def resolve_new_run(given: dict[str, Any]) -> TrainConfig:
    """A fresh run's complete config from the flags given on the command line."""
    config = TrainConfig(**given)
    name = _preset_name(config)
    kind = environment_kind(config.scenario)
    defaults = _preset_train_defaults(config.scenario, kind, load_preset(name))
    from_preset = {k: v for k, v in defaults.items() if k not in given}
    if from_preset:
        print(f"preset for {name} ({preset_path(name).name}): "
              + ", ".join(f"{k}={v}" for k, v in from_preset.items()), flush=True)
    config = dataclasses.replace(config, **from_preset).validate()
    return resolve_environment(config)


def resolve_resumed_run(saved: TrainConfig, given: dict[str, Any], where: str) -> TrainConfig:
    """The saved config of the run in `where`, with only the flags given now replaced."""
    if "scenario" in given and scenario_name(given["scenario"], saved.model_dir) != scenario_name(
            saved.scenario, saved.model_dir):
        saved_kind, kind = environment_kind(saved.scenario), environment_kind(given["scenario"])
        kinds = f" ({KIND_NAMES[saved_kind]} vs {KIND_NAMES[kind]})" if saved_kind != kind else ""
        raise ConfigError(f"{where} was trained on {saved.scenario}, not {given['scenario']}{kinds}; use another "
                          f"--model-dir for a new scenario")
    if "scenario" in given and environment_kind(given["scenario"]) == DOOM and os.path.exists(saved.scenario_path):
        # One name, two files (maps_a/mylevel.cfg, maps_b/mylevel.cfg): not the scenario the run was trained on.
        _, cfg_path = find_doom_scenario(given["scenario"], saved.model_dir)
        if not os.path.samefile(cfg_path, saved.scenario_path):
            raise ConfigError(f"{where} was trained on {saved.scenario_path}, not {cfg_path} (another file of the "
                              f"same name); use another --model-dir for a new scenario")
    given = {k: v for k, v in given.items() if k != "scenario"}  # the same scenario, perhaps spelt otherwise
    return dataclasses.replace(saved, **given).validate()


def upgrade_saved_config(data: dict[str, Any], where: str) -> TrainConfig:
    """A config as a checkpoint stored it. One saved by an older doom_a3c (sentinels such as frame_skip 0,
    "auto" clipping, no action set) is completed once from today's preset, with a warning line."""
    data = dict(data)
    if "no_lstm" in data:
        data["lstm"] = not data.pop("no_lstm")
    if isinstance(data.get("clip_rewards"), str):
        data["clip_rewards"] = {"auto": None, "on": True, "off": False}[data["clip_rewards"]]
    for key in ("frame_skip", "reward_scale"):
        if not data.get(key):  # 0 meant "the preset's"
            data[key] = None
    target = data.get("target_reward")
    if isinstance(target, float) and not math.isfinite(target):
        data["target_reward"] = None
    config = TrainConfig.from_dict(data)
    if config.is_resolved():
        return config
    config = resolve_environment(config)
    print(f"warning: {where} was saved by an older doom_a3c without its scenario values; taken once from today's "
          f"preset: frame skip {config.frame_skip}, reward scale {config.reward_scale}, clip rewards "
          f"{config.clip_rewards}, {len(config.actions)} actions {json.dumps(config.actions)}", file=sys.stderr,
          flush=True)
    return config
