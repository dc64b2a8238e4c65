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

from doom_a3c.action_sets import (DELTA_BINS, action_name_problem, combined_action_heads, combined_actions,
                                  head_option_matrix, missing_buttons, single_button_actions, unbinnable_delta_buttons)
from doom_a3c.config import ConfigError, TrainConfig
from doom_a3c.precision import choose_precision
from doom_a3c.scenarios import (ATARI, DOOM, IMAGE, OWN_MAP_DEFAULTS, VECTOR, environment_kind, find_doom_scenario,
                                load_preset, own_map_defaults, preset_path, scenario_name)

KIND_NAMES = {DOOM: "a ViZDoom scenario", ATARI: "an Atari game", IMAGE: "an image-observation env",
              VECTOR: "a vector-observation env"}
# frame skip, reward scale, reward clipping for each kind when the preset does not say (an image env's frame skip
# of 1 leaves it to the env: gymnasium envs skip frames themselves, if they do)
KIND_DEFAULTS = {DOOM: (4, 0.01, False), ATARI: (4, 1.0, True), IMAGE: (1, 1.0, False), VECTOR: (1, 1.0, False)}
NO_CROP = [0.0, 0.0, 0.0, 0.0]
DOOM_GAME_PROCESSES = 2  # per worker, by default: see "env_processes" in resolve_environment
GAMES_IN_PROCESSES = (DOOM, IMAGE)  # the kinds whose games run in child processes by default


# What configs saved before these fields existed ran: the preset, its actions, no variables of the .cfg's own,
# one flat softmax.
FIELDS_BEFORE_ISSUE_33 = {"preset": True, "action_set": "preset", "cfg_variables": False,
                          "normalize_variables": False, "normalize_returns": False, "policy_heads": "flat",
                          "action_heads": []}
# Issue 34's: no module imported for the scenario; colour only where the config said so.
FIELDS_BEFORE_ISSUE_34 = {"env_module": "", "color": False}


def import_env_module(module: str) -> None:
    """The module that registers a config's gymnasium id (--env-module), imported before the id is looked up."""
    from doom_a3c.gym_envs import import_env_module as import_module

    import_module(module)


# Saved before evaluation during training existed: such a run had none (it resumes without unless --evaluate).
FIELDS_BEFORE_ISSUE_35 = {"evaluate": False}
# Saved before --fine-turns existed: no half turns.
FIELDS_BEFORE_FINE_TURNS = {"fine_turns": False}
# Issue 53 (Atari as the best actor-critics): what a checkpoint saved before these fields existed ran with.
FIELDS_BEFORE_ISSUE_53: dict = {"frame_stack": 1,
                                # --optimizer rmsprop was Keras' RMSprop, rho 0.99, epsilon 0.1
                                "rmsprop_decay": 0.99, "rmsprop_epsilon": 0.1, "rmsprop_style": "keras",
                                "weight_init": "glorot", "activation": "elu",
                                # issue 54: float32, no XLA
                                "precision": "float32", "jit_compile": False}


# scenarios/defaults/doom.toml's shaping table, applied to the game variables a map's .cfg lists.
CFG_VARIABLE_SHAPING = "cfg_variable_shaping"


def _preset_name(config: TrainConfig) -> str:
    return scenario_name(config.scenario, config.model_dir)


def _scenario_preset(config: TrainConfig) -> dict:
    """The scenario's preset, or {} with --no-preset: the map is then run as a user's own .cfg would be."""
    return load_preset(_preset_name(config)) if config.preset else {}


def _preset_train_defaults(scenario: str, kind: str, preset: dict) -> tuple[dict[str, Any], str]:
    """The preset's `[train]` table and where it comes from. Every Atari game first takes
    `scenarios/atari.toml`'s; a ViZDoom map with no preset (a user's own, or --no-preset) takes
    `scenarios/defaults/doom.toml`'s, the defaults measured to learn maps nobody tuned for."""
    over = ", over defaults/doom.toml" if preset and _on_own_map_defaults(preset) else ""
    source = f"preset for {scenario} ({preset_path(scenario).name}{over})"
    defaults = load_preset(ATARI).get("train", {}) if kind == ATARI else {}
    if kind == DOOM and not preset:
        defaults = own_map_defaults().get("train", {})
        source = f"{scenario} has no preset; the defaults for such maps (defaults/doom.toml)"
    defaults = {**defaults, **preset.get("train", {})}
    known = {f.name for f in dataclasses.fields(TrainConfig)} - {"preset"}  # a preset cannot turn itself off
    unknown = sorted(set(defaults) - known)
    if unknown:
        raise ConfigError(f"{source} sets unknown options {unknown}")
    return defaults, source


def _on_own_map_defaults(preset: dict) -> bool:
    """No preset, or one that keeps only the facts of its map over scenarios/defaults/doom.toml."""
    return not preset or preset.get("based_on") == OWN_MAP_DEFAULTS


def _doom_cfg_lists(cfg_path: str) -> tuple[list[str], list[str]]:
    """The buttons a .cfg makes available, in make_action's order, and the game variables it lists (read
    without starting an engine)."""
    import vizdoom as vzd

    game = vzd.DoomGame()
    try:
        game.load_config(cfg_path)
    except Exception as error:  # ViZDoom raises its own exception types
        raise ConfigError(f"cannot load scenario config {cfg_path}: {str(error).splitlines()[0]}") from None
    names = lambda items: [str(item).split(".")[-1].split(":")[0] for item in items]  # noqa: E731
    return names(game.get_available_buttons()), names(game.get_available_game_variables())


def _doom_buttons(cfg_path: str) -> list[str]:
    """The buttons a .cfg makes available, in make_action's order."""
    return _doom_cfg_lists(cfg_path)[0]


def _doom_actions(config: TrainConfig, preset: dict[str, Any], buttons: list[str],
                  frame_skip: int) -> tuple[str, list]:
    """(--action-set as resolved, the actions as button lists): the config's own list if it has one. One derived
    from the .cfg offers each delta button as bins (named by what a step of `frame_skip` tics turns), and refuses
    a delta button without bins rather than leave it out."""
    action_set = config.action_set or ("preset" if preset.get("actions") else "buttons")
    if config.actions:
        return action_set, config.actions
    if config.fine_turns and action_set != "combined":
        raise ConfigError(f"--fine-turns needs --action-set combined (it adds half turns to its turn group), not "
                          f"{action_set!r}")
    if action_set == "preset" and preset.get("actions"):
        return action_set, preset["actions"]
    unbinnable = unbinnable_delta_buttons(buttons)
    if unbinnable:
        raise ConfigError(f"{config.scenario} makes the delta button {', '.join(unbinnable)} available, which has no "
                          f"bins to act with (binned: {', '.join(DELTA_BINS)}); take it out of the .cfg's "
                          f"available_buttons")
    if action_set == "combined":
        return action_set, combined_actions(buttons, fine_turns=config.fine_turns, frame_skip=frame_skip)
    return action_set, single_button_actions(buttons, frame_skip=frame_skip)


def _doom_action_heads(config: TrainConfig, action_set: str, actions: list, buttons: list[str],
                       frame_skip: int) -> list:
    """The factorised policy's heads over these actions ([] for the flat one), checked against them."""
    if config.policy_heads != "factorised":
        return []
    if action_set != "combined":
        raise ConfigError(f"--policy-heads factorised needs --action-set combined (one head per button group of its "
                          f"actions), not {action_set!r}")
    heads = config.action_heads or combined_action_heads(buttons, fine_turns=config.fine_turns, frame_skip=frame_skip)
    try:
        head_option_matrix(actions, heads)
    except ValueError as error:
        raise ConfigError(f"--policy-heads factorised: {error}") from None
    return heads


def _doom_variables(name: str, config: TrainConfig, preset: dict[str, Any],
                    cfg_variables: list[str]) -> dict[str, Any]:
    """The game variables the network sees: the config's or the preset's list with its hand scales, else (with
    --cfg-variables, on by default without a preset or over the defaults) every variable the .cfg lists,
    unscaled and standardised by running statistics (--normalize-variables, on by default for them)."""
    listed = config.game_variables or preset.get("game_variables")
    use_cfg = config.cfg_variables if config.cfg_variables is not None else _on_own_map_defaults(preset)
    if listed:
        variables = _named_values(name, "game_variables", listed)
    else:
        variables = [[variable, 1.0] for variable in cfg_variables] if use_cfg else []
    normalize = config.normalize_variables if config.normalize_variables is not None else not listed
    return {"game_variables": variables, "cfg_variables": bool(use_cfg),
            "normalize_variables": bool(normalize and variables)}


def _reward_shaping(name: str, config: TrainConfig, preset: dict[str, Any], cfg_variables: list[str]) -> list[list]:
    """The learning-only shaping: the config's or the preset's list; else, on the defaults for a map with no preset,
    `scenarios/defaults/doom.toml`'s `cfg_variable_shaping` for each variable the .cfg lists (a map's author lists
    the variables that matter on it; a variable it does not list is not shaped)."""
    given = config.reward_shaping or preset.get("reward_shaping")
    if given or "reward_shaping" in preset or not _on_own_map_defaults(preset):
        return _named_values(name, "reward_shaping", given, loss_weight=True)
    table = _named_values("defaults/doom.toml", CFG_VARIABLE_SHAPING,
                          (preset or own_map_defaults()).get(CFG_VARIABLE_SHAPING, []), loss_weight=True)
    return [entry for entry in table if entry[0] in cfg_variables]


def _named_values(scenario: str, key: str, value: Any, loss_weight: bool = False) -> list[list]:
    """A preset's [[GAME_VARIABLE, number], ...] list, checked: names ViZDoom knows, finite numbers. With
    `loss_weight` (the shaping's lists) an entry may also be [GAME_VARIABLE, per unit gained, per unit lost]."""
    import vizdoom as vzd

    form = "[\"GAME_VARIABLE\", number]" + (" or [\"GAME_VARIABLE\", per unit gained, per unit lost]"
                                            if loss_weight else "")
    entries = []
    for entry in value or []:
        numbers = entry[1:] if isinstance(entry, (list, tuple)) else []
        if not (isinstance(entry, (list, tuple)) and len(numbers) in ((1, 2) if loss_weight else (1,))
                and isinstance(entry[0], str)
                and all(isinstance(n, (int, float)) and not isinstance(n, bool) and math.isfinite(n)
                        for n in numbers)):
            raise ConfigError(f"preset for {scenario}: each entry of {key} must be {form}, got {entry!r}")
        if not hasattr(vzd.GameVariable, entry[0]):
            raise ConfigError(f"preset for {scenario}: {key} names {entry[0]!r}, which is not a ViZDoom game "
                              f"variable (e.g. HEALTH, AMMO2, KILLCOUNT, ARMOR)")
        entries.append([entry[0], *(float(n) for n in numbers)])
    return entries


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


def _frame_stack(config: TrainConfig, kind: str) -> int:
    """--frame-stack as resolved (the preset's [train] value is in the config by now; else 1): images only."""
    stack = config.frame_stack or 1
    if stack > 1 and kind == VECTOR:
        raise ConfigError(f"--frame-stack {stack}: {config.scenario} observes a vector, and only image frames are "
                          f"stacked; give --frame-stack 1 (the LSTM keeps the history)")
    return stack


def resolve_environment(config: TrainConfig) -> TrainConfig:
    """Fill in every environment value still missing from the scenario and its preset."""
    import_env_module(config.env_module)
    kind = environment_kind(config.scenario)
    name = _preset_name(config)
    preset = _scenario_preset(config)
    frame_skip, reward_scale, clip_rewards = KIND_DEFAULTS[kind]
    values: dict[str, Any] = {
        "env_kind": kind,
        "frame_skip": config.frame_skip or int(preset.get("frame_skip", frame_skip)),
        "reward_scale": config.reward_scale or float(preset.get("reward_scale", reward_scale)),
        "clip_rewards": config.clip_rewards if config.clip_rewards is not None
        else bool(preset.get("clip_rewards", clip_rewards)),
        # ViZDoom's games run in child processes, where the watchdog can kill a stalled engine (docs/faults.md);
        # as fast as games in this process (docs/benchmarks.md, "Games in child processes").
        "env_processes": config.env_processes if config.env_processes is not None
        # An image env is as likely an engine that can stall (ViZDoom's own ids) or hold the GIL (an emulator).
        else DOOM_GAME_PROCESSES if kind in GAMES_IN_PROCESSES else 0,
        "frame_stack": _frame_stack(config, kind),
    }
    if kind == DOOM:
        _, cfg_path = find_doom_scenario(config.scenario, config.model_dir)
        check_screen_resolution(config.screen_resolution)
        buttons, cfg_variables = _doom_cfg_lists(cfg_path)
        action_set, actions = _doom_actions(config, preset, buttons, values["frame_skip"])
        action_heads = _doom_action_heads(config, action_set, actions, buttons, values["frame_skip"])
        if not any(actions):  # none, or only combined_actions' wait: nothing to press
            raise ConfigError(f"{cfg_path} makes no buttons available: list them in its available_buttons "
                              f"(e.g. available_buttons = {{ MOVE_LEFT MOVE_RIGHT ATTACK }})")
        unknown = missing_buttons(actions, buttons)
        if unknown:
            raise ConfigError(f"preset for {name} uses buttons {unknown} that its cfg does not make "
                              f"available ({buttons})")
        problems = sorted(filter(None, (action_name_problem(b) for combo in actions for b in combo)))
        if problems:
            raise ConfigError(f"preset for {name}: {problems[0]}")
        values.update(scenario_path=cfg_path, actions=[list(combo) for combo in actions], action_set=action_set,
                      action_heads=action_heads,
                      crop=[float(x) for x in (config.crop or preset.get("crop", NO_CROP))],
                      game_args=config.game_args or str(preset.get("game_args", "")),
                      bots=config.bots or int(preset.get("bots", 0)),
                      frag_reward=config.frag_reward or float(preset.get("frag_reward", 0.0)),
                      color=config.color if config.color is not None else bool(preset.get("color", False)),
                      **_doom_variables(name, config, preset, cfg_variables),
                      reward_shaping=_reward_shaping(name, config, preset, cfg_variables),
                      bootstrap_timeout=_preset_bool(name, preset, "bootstrap_timeout", config.bootstrap_timeout),
                      **_exploration(name, config, preset))
    else:
        values.update(_gym_values(config, kind, values))
    return dataclasses.replace(config, **values)


def _gym_values(config: TrainConfig, kind: str, values: dict[str, Any]) -> dict[str, Any]:
    """A gymnasium id's environment values, from one game built with the values resolved so far: its actions,
    and an image env's Dict vectors as game variables (standardised, as a .cfg's are, unless told otherwise)."""
    from doom_a3c.gym_envs import describe_gym_env

    doom_only = {"action-set": config.action_set not in (None, "buttons"), "cfg-variables": config.cfg_variables,
                 "policy-heads": config.policy_heads != "flat", "fine-turns": config.fine_turns}
    pixels_only = {"normalize-variables": config.normalize_variables, "color": config.color}
    for flags, where in ((doom_only, "ViZDoom scenarios"), (pixels_only, "ViZDoom scenarios and image envs")):
        given = [f"--{flag}" for flag, on in flags.items() if on]
        if given and not (flags is pixels_only and kind == IMAGE):
            raise ConfigError(f"{', '.join(given)}: for {where} only, not {config.scenario}")
    gym = {"crop": config.crop or NO_CROP, "color": bool(config.color), "action_set": "buttons",
           "cfg_variables": False}
    facts = describe_gym_env(dataclasses.replace(config, **values, **gym))
    variables = [[name, 1.0] for name in facts.variable_names]
    normalize = config.normalize_variables if config.normalize_variables is not None else True
    return {**gym, "scenario_path": config.scenario, "actions": config.actions or [[n] for n in facts.action_names],
            "game_variables": variables, "normalize_variables": bool(normalize and variables)}


def resolve_new_run(given: dict[str, Any]) -> TrainConfig:
    """A fresh run's complete config from the flags given on the command line."""
    import_env_module(given.get("env_module", ""))
    config = TrainConfig(**given)
    name = _preset_name(config)
    kind = environment_kind(config.scenario)
    defaults, source = _preset_train_defaults(name, kind, _scenario_preset(config))
    from_preset = {k: v for k, v in defaults.items() if k not in given}
    if from_preset.get("lr_schedule") == "linear" and not (given.get("max_steps") or given.get("max_minutes")):
        # A preset's annealing needs a budget to anneal over; a run without one keeps the rate (and says so).
        from_preset["lr_schedule"] = "constant"
        print("note: no --max-steps or --max-minutes, so the preset's --lr-schedule linear runs as constant",
              flush=True)
    if from_preset:
        print(f"{source}: "
              + ", ".join(f"{k}={v}" for k, v in from_preset.items()), flush=True)
    config = with_precision(dataclasses.replace(config, **from_preset).validate())
    return resolve_environment(evaluation_for_mode(config, given))


def with_precision(config: TrainConfig, trained: str | None = None) -> TrainConfig:
    """The config with the --precision that runs on this CPU (never "auto": the config saves what ran), said on
    the run's first lines; ConfigError for bfloat16 asked for on a CPU without it (doom_a3c/precision.py).
    `trained`: a resumed run's saved precision, when --precision is not given again."""
    choice = choose_precision(config.precision, trained=trained)
    print(choice.line(), flush=True)
    return dataclasses.replace(config, precision=choice.name)


def evaluation_for_mode(config: TrainConfig, given: dict[str, Any]) -> TrainConfig:
    """Evaluation during training runs in the trainer's process, beside its threads (A3C, GA3C); with
    --distributed ray it is off, and asking for it is a ConfigError."""
    if config.distributed != "ray" or not config.evaluate:
        return config
    if given.get("evaluate"):
        raise ConfigError("--evaluate: evaluation during training is not available with --distributed ray yet; "
                          "train with threads (the default) or give --no-evaluate")
    print("note: no evaluation during training with --distributed ray (eval.csv and best.ckpt are not written)",
          flush=True)
    return dataclasses.replace(config, evaluate=False)


def given_fields(config: TrainConfig) -> dict[str, Any]:
    """The flag fields of a TrainConfig made in Python that differ from the defaults: they count as given,
    the others are left to the preset, as on the command line."""
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(TrainConfig)
            if f.metadata.get("flag", True) and getattr(config, f.name) != f.default}


def resolve_python_config(config: TrainConfig) -> TrainConfig:
    """A TrainConfig made in Python, completed as `train` completes it: its values that differ from the defaults
    count as given, the scenario's preset fills in the rest (ConfigError for a bad value)."""
    given = given_fields(config)
    TrainConfig(**given).validate()
    return resolve_new_run(given)


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
    fixed = [name for name in (*FIELDS_BEFORE_ISSUE_33, "color", "frame_stack")
             if name in given and given[name] != getattr(saved, name)]
    if "entropy_target" in given and (given["entropy_target"] > 0) != (saved.entropy_target > 0):
        fixed.append("entropy_target")  # on or off: the checkpoint holds the entropy multiplier or not
    if "optimizer" in given and given["optimizer"] != saved.optimizer:
        # Keras checkpoints an optimizer's slots by position: Adam's first moments would restore silently as
        # RMSProp's mean squares. --rmsprop-style, -decay and -epsilon may change: one mean square per weight,
        # in the same place, whatever they are (doom_a3c/optimizers.py).
        fixed.append("optimizer")
    if fixed:
        # They chose the games' actions and variables, the network's input, policy heads and running statistics
        # when the run began.
        flags = ", ".join(f"--{name.replace('_', '-')} (trained with {getattr(saved, name)})" for name in fixed)
        raise ConfigError(f"{where} cannot change {flags} on --resume; start a new run in another --model-dir")
    config = dataclasses.replace(saved, **given).validate()
    config = with_precision(config, trained=None if "precision" in given else saved.precision)
    return evaluation_for_mode(config, given)


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
    if data.get("env_processes") is None:  # saved before games had child processes by default: as trained
        data["env_processes"] = 0
    for key, value in {**FIELDS_BEFORE_ISSUE_33, **FIELDS_BEFORE_ISSUE_34, **FIELDS_BEFORE_ISSUE_35,
                       **FIELDS_BEFORE_FINE_TURNS, **FIELDS_BEFORE_ISSUE_53}.items():
        data.setdefault(key, value)  # saved before they existed: as trained, not today's defaults
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
