"""A checkpoint's saved config: completed once when an older doom_a3c saved it without today's fields (as it
was trained, not today's defaults), and resumed with only the flags given again replaced.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from typing import Any

from doom_a3c.config import TrainConfig, check_values
from doom_a3c.envs.doom.scenario_files import find_doom_scenario
from doom_a3c.envs.scenario import DOOM, environment_kind, scenario_name
from doom_a3c.errors import ConfigError
from doom_a3c.run.resolve import (
    KIND_NAMES,
    ale_vector_choice,
    check_self_play,
    evaluation_for_mode,
    import_env_module,
    resolve_environment,
    with_precision,
)

# What configs saved before action sets and a map's own defaults existed ran: the preset, its actions, no variables
# of the .cfg's own, one flat softmax.
FIELDS_BEFORE_ACTION_SETS = {"preset": True, "action_set": "preset", "cfg_variables": False,
                             "normalize_variables": False, "normalize_returns": False, "policy_heads": "flat",
                             "action_heads": []}
# Saved before image envs: no module imported for the scenario; colour only where the config said so.
FIELDS_BEFORE_IMAGE_ENVS = {"env_module": "", "color": False}


# Saved before evaluation during training existed: such a run had none (it resumes without unless --evaluate).
FIELDS_BEFORE_EVALUATION = {"evaluate": False}
# Saved before --fine-turns existed: no half turns.
FIELDS_BEFORE_FINE_TURNS = {"fine_turns": False}
# Atari runs before ale-py's vector env: one gymnasium env a game, FIRE pressed after each lost life.
FIELDS_BEFORE_ALE_VECTOR: dict = {"ale_vector": False}
# Saved before the Atari recipe's fields (frame stack, RMSProp's style, initialisation, activation, precision): what
# such a checkpoint ran with.
FIELDS_BEFORE_ATARI_RECIPE: dict = {"frame_stack": 1,
                                    # --optimizer rmsprop was Keras' RMSprop, rho 0.99, epsilon 0.1
                                    "rmsprop_decay": 0.99, "rmsprop_epsilon": 0.1, "rmsprop_style": "keras",
                                    "weight_init": "glorot", "activation": "elu",
                                    # before --precision and --jit-compile: float32, no XLA
                                    "precision": "float32", "jit_compile": False}
# Saved before --bots was a flag (a preset's value, 0 without one, was saved already) or before bots existed: none.
FIELDS_BEFORE_BOTS_FLAG: dict = {"bots": 0}
# Saved before --self-play existed: trained against bots only.
FIELDS_BEFORE_SELF_PLAY: dict = {"self_play": False, "self_play_opponents": 1, "self_play_snapshot_minutes": 5.0}
# Saved before --audio existed: deaf, its games' audio buffer off (basic_audio's .cfg enables it).
FIELDS_BEFORE_AUDIO: dict = {"audio": False, "audio_sampling_rate": 11025}


def resolve_resumed_run(saved: TrainConfig, given: dict[str, Any], where: str) -> TrainConfig:
    """The saved config of the run in `where`, with only the flags given now replaced."""
    import_env_module(given.get("env_module", saved.env_module))
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
    fixed = [name for name in (*FIELDS_BEFORE_ACTION_SETS, "color", "frame_stack", "frame_norm", "frame_background",
                               *FIELDS_BEFORE_AUDIO)
             if name in given and given[name] != getattr(saved, name)]
    if given.get("bots") and not saved.plays_deathmatch():
        raise ConfigError(f"{where} was not trained as a deathmatch host (its games have no -deathmatch): --bots "
                          f"{given['bots']} cannot make it one on --resume; start a new run in another --model-dir")
    if "entropy_target" in given and (given["entropy_target"] > 0) != (saved.entropy_target > 0):
        fixed.append("entropy_target")  # on or off: the checkpoint holds the entropy multiplier or not
    if "optimizer" in given and given["optimizer"] != saved.optimizer:
        # Keras checkpoints an optimizer's slots by position: Adam's first moments would restore silently as
        # RMSProp's mean squares. --rmsprop-style, -decay and -epsilon may change: one mean square per weight,
        # in the same place, whatever they are (doom_a3c/algo/optimizers.py).
        fixed.append("optimizer")
    if fixed:
        # They chose the games' actions and variables, the network's input (its sound too), policy heads and
        # running statistics when the run began.
        flags = ", ".join(f"--{name.replace('_', '-')} (trained with {getattr(saved, name)})" for name in fixed)
        raise ConfigError(f"{where} cannot change {flags} on --resume; start a new run in another --model-dir")
    if given.get("self_play") and saved.bot_curriculum and "bot_curriculum" not in given:
        given = {**given, "bot_curriculum": False}  # a self-play match has no bots to move
    config = dataclasses.replace(saved, **given).validate()
    if config.self_play and not saved.self_play and "env_processes" not in given:
        config = dataclasses.replace(config, env_processes=0)  # self-play's games run in this process
    config = check_self_play(config)
    if "ale_vector" in given or "env_processes" in given:  # the games' path may change; not to one it cannot take
        kind = environment_kind(config.scenario)
        config = dataclasses.replace(config, ale_vector=ale_vector_choice(config, kind))
    config = with_precision(config, trained=None if "precision" in given else saved.precision)
    return evaluation_for_mode(config, given)


def upgrade_saved_config(data: dict[str, Any], where: str) -> TrainConfig:
    """A config as a checkpoint stored it. One saved by an older doom_a3c (sentinels such as frame_skip 0,
    "auto" clipping, no action set) is completed once from today's preset, with a warning line; a value this
    version does not take is a ConfigError naming the field."""
    data = dict(data)
    if "no_lstm" in data:
        data["lstm"] = not data.pop("no_lstm")
    if isinstance(data.get("clip_rewards"), str):
        data["clip_rewards"] = {"auto": None, "on": True, "off": False}[data["clip_rewards"]]
    for key in ("frame_skip", "reward_scale"):
        if not data.get(key):  # 0 meant "the preset's"
            data[key] = None
    if data.get("env_processes") is None:  # saved before games had child processes by default: as trained
        data["env_processes"] = 0
    for key, value in FIELDS_BEFORE_BOTS_FLAG.items():  # saved before --bots was a flag (or before bots): none
        if data.get(key) is None:
            data[key] = value
    for key, value in FIELDS_BEFORE_ALE_VECTOR.items():
        if data.get(key) is None:
            data[key] = value
    for key, value in {**FIELDS_BEFORE_ACTION_SETS, **FIELDS_BEFORE_IMAGE_ENVS, **FIELDS_BEFORE_EVALUATION,
                       **FIELDS_BEFORE_FINE_TURNS, **FIELDS_BEFORE_ATARI_RECIPE, **FIELDS_BEFORE_SELF_PLAY,
                       **FIELDS_BEFORE_AUDIO}.items():
        data.setdefault(key, value)  # saved before they existed: as trained, not today's defaults
    target = data.get("target_reward")
    if isinstance(target, float) and not math.isfinite(target):
        data["target_reward"] = None
    check_values(data, f"{where}'s saved config")  # a value this version does not take: a newer doom_a3c's
    config = TrainConfig.from_dict(data)
    if config.is_resolved():
        return config
    config = resolve_environment(config)
    print(f"warning: {where} was saved by an older doom_a3c without its scenario values; taken once from today's "
          f"preset: frame skip {config.frame_skip}, reward scale {config.reward_scale}, clip rewards "
          f"{config.clip_rewards}, {len(config.actions)} actions {json.dumps(config.actions)}", file=sys.stderr,
          flush=True)
    return config
