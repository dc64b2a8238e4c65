"""A ViZDoom scenario's files: a shipped name (`basic`, `basic.wad`, `basic.cfg`) or a user's .cfg or .wad found,
and a bare .wad given a .cfg of its own.

A user's own .cfg or .wad is checked here, before anything is written or moved: the engine itself would
load a file that is not a WAD, or a map the WAD lacks, without a word, and train on some other map.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from doom_a3c.envs.doom.wad import wad_maps
from doom_a3c.errors import ConfigError

# Used for a bare .wad with no .cfg beside it: the buttons most Doom scenarios need.
_DEFAULT_WAD_CFG = """\
doom_scenario_path = {wad}
doom_map = {map}
episode_timeout = 2100
episode_start_time = 14
available_buttons = {{ MOVE_LEFT MOVE_RIGHT ATTACK MOVE_FORWARD MOVE_BACKWARD TURN_LEFT TURN_RIGHT }}
mode = PLAYER
"""


def shipped_scenarios_dir() -> str:
    import vizdoom

    return vizdoom.scenarios_path


def _cfg_value(cfg: Path, key: str) -> str | None:
    for line in cfg.read_text(errors="replace").splitlines():
        match = re.match(rf"\s*{key}\s*=\s*(\S+)", line, flags=re.IGNORECASE)
        if match:
            return match.group(1)
    return None


def shipped_scenario_names() -> list[str]:
    """Single-player scenarios that ViZDoom ships with their own .wad."""
    names = []
    for cfg in sorted(Path(shipped_scenarios_dir()).glob("*.cfg")):
        wad = _cfg_value(cfg, "doom_scenario_path")
        if wad and (cfg.parent / wad).exists() and not cfg.stem.startswith("multi"):
            names.append(cfg.stem)
    return names


def _cfg_file(cfg: Path, value: str) -> Path | None:
    """A file a .cfg names: relative to the .cfg's folder (as ViZDoom reads it), else to the working folder
    or ViZDoom's scenarios; None when there is no such file."""
    candidates = [Path(value)] if os.path.isabs(value) else [
        cfg.parent / value, Path(value), Path(shipped_scenarios_dir()) / value]
    return next((path for path in candidates if path.is_file()), None)


def _unknown_delta_buttons(cfg: Path) -> list[str]:
    """The *_DELTA names in a .cfg's available_buttons (comments aside) that are not ViZDoom buttons, sorted."""
    import vizdoom as vzd

    text = "\n".join(line.split("#", 1)[0] for line in cfg.read_text(errors="replace").splitlines())
    listed = " ".join(re.findall(r"available_?buttons\s*\+?=\s*\{([^}]*)\}", text, re.IGNORECASE))
    return sorted({word.upper() for word in re.findall(r"\w+_delta\b", listed, re.IGNORECASE)}
                  - set(vzd.Button.__members__))


def check_doom_cfg(cfg_path: str) -> None:
    """ConfigError unless every *_DELTA button a .cfg lists is one ViZDoom knows, the WADs it names exist and are
    WADs, and its scenario WAD holds its map (a scenario WAD without maps, of textures or sounds, may use the
    IWAD's)."""
    import vizdoom as vzd

    cfg = Path(cfg_path)
    unknown = _unknown_delta_buttons(cfg)
    if unknown:
        # ViZDoom drops the whole button list for one name it does not know (a warning on stderr at each load):
        # the run would stop at "makes no buttons available", or train without that list's buttons.
        raise ConfigError(f"{cfg} lists {', '.join(unknown)}, which ViZDoom does not know (its delta buttons: "
                          f"{', '.join(b for b in vzd.Button.__members__ if b.endswith('_DELTA'))})")
    game = vzd.DoomGame()
    try:
        game.load_config(str(cfg))
    except Exception as error:  # ViZDoom raises its own exception types
        raise ConfigError(f"cannot load scenario config {cfg}: {str(error).splitlines()[0]}") from None
    maps = {}
    for key, value in (("doom_scenario_path", game.get_doom_scenario_path()),
                       ("doom_game_path", game.get_doom_game_path())):
        if value:
            path = _cfg_file(cfg, value)
            if path is None:
                raise ConfigError(f"{cfg} names {key} {value}, which does not exist")
            maps[key] = wad_maps(str(path))
    doom_map = (game.get_doom_map() or "map01").upper()
    # The engine would start the IWAD's map of that name, or none, without a word: not the scenario's.
    scenario_maps = maps.get("doom_scenario_path")
    if scenario_maps and doom_map not in scenario_maps:
        raise ConfigError(f"{cfg}: its map {doom_map} is not in {game.get_doom_scenario_path()}, whose maps are "
                          f"{', '.join(scenario_maps)}; set doom_map to one of them")


def _cfg_for_wad(wad: Path, cache_dir: str) -> str:
    beside = wad.with_suffix(".cfg")
    if beside.exists():
        return str(beside.resolve())
    maps = wad_maps(str(wad))  # before anything is written: a file that is not a WAD stops here
    if not maps:
        raise ConfigError(f"{wad} holds no map (a WAD of textures or sounds needs a .cfg that names a map)")
    os.makedirs(cache_dir, exist_ok=True)
    cfg = Path(cache_dir).resolve() / f"{wad.stem}.cfg"
    # ViZDoom resolves doom_scenario_path relative to the .cfg's folder.
    cfg.write_text(_DEFAULT_WAD_CFG.format(wad=os.path.relpath(wad.resolve(), cfg.parent),
                                           map="MAP01" if "MAP01" in maps else maps[0]))
    return str(cfg)


def find_doom_scenario(value: str, cache_dir: str) -> tuple[str, str]:
    """(name, absolute .cfg path) for `basic`, `basic.wad`, `basic.cfg` or a path to a user's own .cfg/.wad.
    A bare .wad gets a generated .cfg in `cache_dir`."""
    path = Path(value).expanduser()
    looks_like_path = os.sep in value or path.is_absolute()
    if looks_like_path and not path.exists():
        raise ConfigError(f"scenario file {value} does not exist")
    own_file = path.suffix in (".cfg", ".wad") and path.exists() and (
        looks_like_path or path.name not in os.listdir(shipped_scenarios_dir()))
    if own_file:
        cfg = str(path.resolve()) if path.suffix == ".cfg" else _cfg_for_wad(path, cache_dir)
        check_doom_cfg(cfg)
        return path.stem, cfg
    name = Path(value).name
    for suffix in (".wad", ".cfg"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    valid = shipped_scenario_names()
    if name not in valid:
        raise ConfigError(f"unknown scenario {value!r}; valid: {', '.join(valid)} "
                          f"(or a path to your own .cfg or .wad, an Atari id such as ALE/Pong-v5, or a "
                          f"gymnasium id with discrete actions such as CartPole-v1 or VizdoomBasic-v1; your own "
                          f"after --env-module MODULE)")
    return name, os.path.join(shipped_scenarios_dir(), f"{name}.cfg")
