"""How strong a deathmatch host's bots are, level 0 (the weakest) to FULL_STRENGTH (the map's own bots, all of them):
the commands a game sends at each episode's start for a level (--bot-curriculum; doom_a3c/algo/curriculum.py
says when the level moves).

A map with the ACS script `change_difficulty` (Kieliger's deathmatch_simple.wad, whose script sets every bot's
speed to 0.1-1.0 and health to 10-100 for levels 0-5) is told the level with `pukename change_difficulty N` once its
bots are added: the script only stores the level, which each bot's ENTER and RESPAWN scripts then apply to it (the
map starts every episode at 5). Measured with the engine's `+logfile`: puked after the `addbot`s, every bot enters
at the new level; puked before them, they entered at 5. Any other map plays a share of its bots instead: level k
of 0-5 adds max(1, round(bots x (k + 1) / 6)).
"""
from __future__ import annotations

from doom_a3c.envs.doom.wad import has_acs_script

DIFFICULTY_SCRIPT = "change_difficulty"
FULL_STRENGTH = 5  # the top level, and every game's level unless told another: evaluation and play.py play at it
LEVELS = FULL_STRENGTH + 1


def has_difficulty_script(wad_path: str, map_name: str) -> bool:
    """Whether the scenario WAD's map (a .cfg's doom_scenario_path and doom_map, "" for the default MAP01) has the
    difficulty script; False for a map of the IWAD's (no scenario WAD)."""
    return bool(wad_path) and has_acs_script(wad_path, map_name or "MAP01", DIFFICULTY_SCRIPT)


def bots_at_level(bots: int, level: int) -> int:
    """The bots a map without the difficulty script plays at `level`: a share of its `bots`, one at least."""
    if not bots:
        return 0
    return max(1, round(bots * (level + 1) / LEVELS))


def episode_start_commands(bots: int, level: int | None, scripted: bool) -> list[str]:
    """The game commands of an episode's start: the bots added, then, on a map with the difficulty script, their
    level. `level` None: the map's own game at full strength (no script called)."""
    if level is None:
        return ["addbot"] * bots
    if scripted:
        return ["addbot"] * bots + [f"pukename {DIFFICULTY_SCRIPT} {level}"]
    return ["addbot"] * bots_at_level(bots, level)
