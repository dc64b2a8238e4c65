"""Turn a `--scenario` value into the kind of environment it names, and a ViZDoom one into its config
file plus the project's preset for it.

`--scenario` takes three kinds: a ViZDoom scenario (a shipped name or a .cfg/.wad path), an Atari game
by its ALE id (`ALE/Pong-v5`) and any other gymnasium id with vector observations (`CartPole-v1`).
Presets live in `scenarios/<name>.toml` (frame skip, reward scale, action set, a known target, and in
a `[train]` table defaults for any training flag). A Doom scenario without a preset runs with its .cfg
as it is: one action per available button.
"""
from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from doom_a3c.config import ConfigError, TrainConfig

PRESETS_DIR = Path(__file__).resolve().parent.parent / "scenarios"
DOOM, ATARI, VECTOR = "doom", "atari", "vector"
DEFAULT_FRAME_SKIP = 4
DEFAULT_REWARD_SCALE = 0.01

# Used for a bare .wad with no .cfg beside it: the buttons most Doom scenarios need.
_DEFAULT_WAD_CFG = """\
doom_scenario_path = {wad}
doom_map = map01
episode_timeout = 2100
episode_start_time = 14
available_buttons = {{ MOVE_LEFT MOVE_RIGHT ATTACK MOVE_FORWARD MOVE_BACKWARD TURN_LEFT TURN_RIGHT }}
mode = PLAYER
"""


@dataclass(frozen=True)
class Scenario:
    name: str
    cfg_path: str
    frame_skip: int = DEFAULT_FRAME_SKIP
    reward_scale: float = DEFAULT_REWARD_SCALE
    target_reward: float | None = None
    # Each action is the list of buttons held down; None = one action per available button.
    actions: list[list[str]] | None = field(default=None)
    description: str = ""
    # Fractions of the screen cut off (top, bottom, left, right) before downsampling to 84x84.
    crop: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    # Multiplayer maps (cig) only start as a host: extra engine arguments, bots added at each episode start,
    # and a reward per frag (their cfg defines no reward at all).
    game_args: str = ""
    bots: int = 0
    frag_reward: float = 0.0


def shipped_scenarios_dir() -> str:
    import vizdoom

    return vizdoom.scenarios_path


def shipped_scenario_names() -> list[str]:
    """Single-player scenarios that ViZDoom ships with their own .wad."""
    directory = shipped_scenarios_dir()
    names = []
    for cfg in sorted(Path(directory).glob("*.cfg")):
        wad = _cfg_value(cfg, "doom_scenario_path")
        if wad and (cfg.parent / wad).exists() and not cfg.stem.startswith("multi"):
            names.append(cfg.stem)
    return names


def _cfg_value(cfg: Path, key: str) -> str | None:
    for line in cfg.read_text(errors="replace").splitlines():
        match = re.match(rf"\s*{key}\s*=\s*(\S+)", line, flags=re.IGNORECASE)
        if match:
            return match.group(1)
    return None


def load_preset(name: str) -> dict:
    path = PRESETS_DIR / f"{name.replace('/', '_')}.toml"  # ALE/Pong-v5 -> ALE_Pong-v5.toml
    if not path.exists():
        return {}
    with open(path, "rb") as handle:
        return tomllib.load(handle)


def _cfg_for_wad(wad: Path, cache_dir: str) -> str:
    beside = wad.with_suffix(".cfg")
    if beside.exists():
        return str(beside)
    os.makedirs(cache_dir, exist_ok=True)
    cfg = Path(cache_dir) / f"{wad.stem}.cfg"
    # ViZDoom resolves doom_scenario_path relative to the .cfg's folder.
    cfg.write_text(_DEFAULT_WAD_CFG.format(wad=os.path.relpath(wad.resolve(), Path(cache_dir).resolve())))
    return str(cfg)


def resolve_scenario(value: str, cache_dir: str = "models") -> Scenario:
    """`basic`, `basic.wad`, `basic.cfg` or a path to a user's own .cfg/.wad."""
    path = Path(value).expanduser()
    looks_like_path = os.sep in value or path.is_absolute()
    if looks_like_path and not path.exists():
        raise ConfigError(f"scenario file {value} does not exist")
    if path.suffix in (".cfg", ".wad") and path.exists() and (os.sep in value or path.is_absolute()
                                                               or path.name not in _shipped_files()):
        name = path.stem
        cfg = str(path) if path.suffix == ".cfg" else _cfg_for_wad(path, cache_dir)
    else:
        name = Path(value).name
        for suffix in (".wad", ".cfg"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        valid = shipped_scenario_names()
        if name not in valid:
            raise ConfigError(f"unknown scenario {value!r}; valid: {', '.join(valid)} "
                              f"(or a path to your own .cfg or .wad, an Atari id such as ALE/Pong-v5, or a "
                              f"gymnasium id with discrete actions such as CartPole-v1)")
        cfg = os.path.join(shipped_scenarios_dir(), f"{name}.cfg")
    preset = load_preset(name)
    return Scenario(
        name=name,
        cfg_path=cfg,
        frame_skip=int(preset.get("frame_skip", DEFAULT_FRAME_SKIP)),
        reward_scale=float(preset.get("reward_scale", DEFAULT_REWARD_SCALE)),
        target_reward=preset.get("target_reward"),
        actions=preset.get("actions"),
        description=preset.get("description", ""),
        crop=tuple(preset.get("crop", (0.0, 0.0, 0.0, 0.0))),
        game_args=str(preset.get("game_args", "")),
        bots=int(preset.get("bots", 0)),
        frag_reward=float(preset.get("frag_reward", 0.0)),
    )


def _shipped_files() -> set[str]:
    return set(os.listdir(shipped_scenarios_dir()))


def environment_kind(value: str) -> str:
    """DOOM, ATARI or VECTOR for a --scenario value. A gymnasium-shaped id that is not registered
    (ALE/Pongg-v5) raises ConfigError with gymnasium's nearest names, not the Doom scenario list."""
    from doom_a3c.gym_envs import gym_kind, looks_like_gym_id

    if looks_like_gym_id(value):
        return ATARI if gym_kind(value) == "image" else VECTOR
    return DOOM


def scenario_name(value: str) -> str:
    """One name per environment, whatever the spelling: `basic` for basic.wad, the id for gymnasium envs."""
    return resolve_scenario(value).name if environment_kind(value) == DOOM else value


def with_preset_defaults(config: TrainConfig, explicit: set[str]) -> TrainConfig:
    """The preset's `[train]` table (tuned defaults, e.g. CartPole's) replaces the defaults of every flag
    not given on the command line. Done once, for a fresh run: the saved config then holds the values.
    Every Atari game first takes `scenarios/atari.toml`'s table, which a game's own preset may override."""
    defaults = load_preset(ATARI).get("train", {}) if environment_kind(config.scenario) == ATARI else {}
    defaults = {**defaults, **load_preset(scenario_name(config.scenario)).get("train", {})}
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(defaults) - known)
    if unknown:
        raise ConfigError(f"preset for {config.scenario} sets unknown options {unknown}")
    return dataclasses.replace(config, **{k: v for k, v in defaults.items() if k not in explicit})
