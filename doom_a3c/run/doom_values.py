"""A ViZDoom scenario's values as a run resolves them from its .cfg and preset: the action set and policy
heads, the game variables the network sees, the learning-only shaping and exploration bonus, all checked.
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

from doom_a3c.config import TrainConfig
from doom_a3c.envs.doom.action_sets import (
    DELTA_BINS,
    combined_action_heads,
    combined_actions,
    head_option_matrix,
    single_button_actions,
    unbinnable_delta_buttons,
)
from doom_a3c.errors import ConfigError
from doom_a3c.run.presets import on_own_map_defaults, own_map_defaults

# scenarios/defaults/doom.toml's shaping table, applied to the game variables a map's .cfg lists.
CFG_VARIABLE_SHAPING = "cfg_variable_shaping"
# Its table of what --bots makes of a map whose preset hosts no deathmatch: host arguments, frag reward, shaping.
DEATHMATCH = "deathmatch"


class CfgFacts(NamedTuple):
    """What a .cfg says that a run resolves from: its buttons in make_action's order, the game variables it lists,
    and whether it enables the audio buffer (basic_audio's)."""

    buttons: list[str]
    variables: list[str]
    audio: bool


def doom_cfg_facts(cfg_path: str) -> CfgFacts:
    """A .cfg's buttons, game variables and audio buffer, read without starting an engine."""
    import vizdoom as vzd

    game = vzd.DoomGame()
    try:
        game.load_config(cfg_path)
    except Exception as error:  # ViZDoom raises its own exception types
        raise ConfigError(f"cannot load scenario config {cfg_path}: {str(error).splitlines()[0]}") from None
    names = lambda items: [str(item).split(".")[-1].split(":")[0] for item in items]  # noqa: E731
    return CfgFacts(names(game.get_available_buttons()), names(game.get_available_game_variables()),
                    bool(game.is_audio_buffer_enabled()))


def doom_buttons(cfg_path: str) -> list[str]:
    """The buttons a .cfg makes available, in make_action's order."""
    return doom_cfg_facts(cfg_path).buttons


def doom_actions(config: TrainConfig, preset: dict[str, Any], buttons: list[str],
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


def doom_action_heads(config: TrainConfig, action_set: str, actions: list, buttons: list[str],
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


def doom_variables(name: str, config: TrainConfig, preset: dict[str, Any],
                    cfg_variables: list[str]) -> dict[str, Any]:
    """The game variables the network sees: the config's or the preset's list with its hand scales, else (with
    --cfg-variables, on by default without a preset or over the defaults) every variable the .cfg lists,
    unscaled and standardised by running statistics (--normalize-variables, on by default for them)."""
    listed = config.game_variables or preset.get("game_variables")
    use_cfg = config.cfg_variables if config.cfg_variables is not None else on_own_map_defaults(preset)
    if listed:
        variables = named_values(name, "game_variables", listed)
    else:
        variables = [[variable, 1.0] for variable in cfg_variables] if use_cfg else []
    normalize = config.normalize_variables if config.normalize_variables is not None else not listed
    return {"game_variables": variables, "cfg_variables": bool(use_cfg),
            "normalize_variables": bool(normalize and variables)}


def shaping_entries(name: str, config: TrainConfig, preset: dict[str, Any], cfg_variables: list[str]) -> list[list]:
    """The learning-only shaping: the config's or the preset's list; else, on the defaults for a map with no preset,
    `scenarios/defaults/doom.toml`'s `cfg_variable_shaping` for each variable the .cfg lists (a map's author lists
    the variables that matter on it; a variable it does not list is not shaped)."""
    given = config.reward_shaping or preset.get("reward_shaping")
    if given or "reward_shaping" in preset or not on_own_map_defaults(preset):
        return named_values(name, "reward_shaping", given, loss_weight=True)
    table = named_values("defaults/doom.toml", CFG_VARIABLE_SHAPING,
                          (preset or own_map_defaults()).get(CFG_VARIABLE_SHAPING, []), loss_weight=True)
    return [entry for entry in table if entry[0] in cfg_variables]


def movement_values(scenario: str, config: TrainConfig, preset: dict[str, Any]) -> list[float]:
    """The learning bonus for moving, checked: the config's or the preset's [moved, still, distance] of finite
    numbers with a positive distance, or [] (off)."""
    value = config.movement_shaping or preset.get("movement_shaping") or []
    if not value:
        return []
    if not (isinstance(value, (list, tuple)) and len(value) == 3
            and all(isinstance(n, (int, float)) and not isinstance(n, bool) and math.isfinite(n) for n in value)
            and value[2] > 0):
        raise ConfigError(f"preset for {scenario}: movement_shaping must be [reward for a step that moved, reward for "
                          f"one that did not, map units that count as moving (> 0)], got {value!r}")
    return [float(n) for n in value]


def deathmatch_table(config: TrainConfig, preset: dict[str, Any]) -> dict[str, Any]:
    """`scenarios/defaults/doom.toml`'s [deathmatch] table for a deathmatch host: a preset that hosts one (cig's,
    which takes its shaping from there), or a map whose preset hosts none (a user's own) made one by --bots; {}
    for any other map."""
    hosts_deathmatch = "-deathmatch" in str(preset.get("game_args", "")).split()
    if not (hosts_deathmatch or (config.bots and not preset.get("game_args"))):
        return {}
    return dict(own_map_defaults().get(DEATHMATCH, {}))


def deathmatch_host(scenario: str, config: TrainConfig, preset: dict[str, Any]) -> dict[str, Any]:
    """The engine arguments, bots and frag reward: the config's, else the preset's, else (with --bots on a map whose
    preset hosts no deathmatch) the [deathmatch] table's, else none."""
    table = deathmatch_table(config, preset)
    frag_reward = config.frag_reward or preset.get("frag_reward") or table.get("frag_reward", 0.0)
    game_args = config.game_args or preset.get("game_args") or table.get("game_args", "")
    bots = config.bots if config.bots is not None else preset.get("bots", 0)
    for key, value, kinds in (("frag_reward", frag_reward, (int, float)), ("game_args", game_args, (str,)),
                              ("bots", bots, (int,))):
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise ConfigError(f"preset for {scenario}: {key} must be a {kinds[0].__name__}, got {value!r}")
    return {"game_args": game_args, "bots": bots, "frag_reward": float(frag_reward)}


def deathmatch_preset(config: TrainConfig, preset: dict[str, Any]) -> dict[str, Any]:
    """The preset the shaping is read from: for a deathmatch host whose preset sets no shaping of its own (cig's, a
    user's map with --bots), the [deathmatch] table's, in place of the defaults' health shaping."""
    table = deathmatch_table(config, preset)
    if not table or preset.get("reward_shaping"):
        return preset
    return {**preset, "reward_shaping": table.get("reward_shaping", []),
            "movement_shaping": table.get("movement_shaping", [])}


def named_values(scenario: str, key: str, value: Any, loss_weight: bool = False) -> list[list]:
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


def exploration_values(scenario: str, config: TrainConfig, preset: dict[str, Any]) -> dict[str, float]:
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


def preset_bool(scenario: str, preset: dict[str, Any], key: str, given: bool) -> bool:
    value = given or preset.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"preset for {scenario}: {key} must be true or false, got {value!r}")
    return value


def check_screen_resolution(name: str) -> None:
    import vizdoom as vzd

    if not name.startswith("RES_") or not hasattr(vzd.ScreenResolution, name):
        raise ConfigError(f"unknown --screen-resolution {name!r}; e.g. RES_160X120, RES_320X240, RES_640X480")
