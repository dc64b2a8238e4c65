"""The four kinds of environment a `--scenario` value names: a ViZDoom scenario, an Atari game, a gymnasium env
observing an image, and one observing a vector.
"""
from __future__ import annotations

from doom_a3c.envs.doom.scenario_files import find_doom_scenario

DOOM, ATARI, IMAGE, VECTOR = "doom", "atari", "image", "vector"


def environment_kind(value: str) -> str:
    """DOOM, ATARI, IMAGE or VECTOR for a --scenario value (an id of an --env-module's once it is imported). A
    gymnasium-shaped id that is not registered (ALE/Pongg-v5) raises ConfigError with gymnasium's nearest
    names, not the Doom scenario list."""
    from doom_a3c.envs.gym.registry import gym_kind, looks_like_gym_id

    if looks_like_gym_id(value):
        return {"atari": ATARI, "image": IMAGE, "vector": VECTOR}[gym_kind(value)]
    return DOOM


def scenario_name(value: str, cache_dir: str = "models") -> str:
    """One name per environment, whatever the spelling: `basic` for basic.wad, the id for gymnasium envs."""
    return find_doom_scenario(value, cache_dir)[0] if environment_kind(value) == DOOM else value
