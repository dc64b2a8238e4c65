"""Learning-only shaping from game-variable changes, and a deathmatch's report of a match (pure numpy, no engine).

A deathmatch player respawns as the game goes on, with a pistol, 50 bullets and 100 health whatever it held before:
those jumps are no pick-ups and no losses. With the host's `+viz_respawn_delay 0 +sv_forcerespawn 1` the engine
respawns the player within the step it died in (measured on cig.wad with 7 bots: 14 of 21 deaths under random
actions were over by the end of the 4-tic step), so `is_player_dead()` alone misses most deaths; DEATHCOUNT rising
tells them. On a step with a death only the counters pay (a frag, a suicide's lost frag, the death, hits and damage
dealt before it), which a respawn leaves alone; every other variable counts its changes from the respawn on.
Sample Factory's deathmatch shaping skips the step its DEAD variable shows a respawn on for the same reason
(sf_examples/vizdoom/doom/wrappers/reward_shaping.py).
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

# Game variables that count events over the whole game: a respawn does not reset them (measured: DAMAGECOUNT went
# on rising over 21 deaths on cig.wad).
COUNTERS = frozenset({"FRAGCOUNT", "DEATHCOUNT", "KILLCOUNT", "HITCOUNT", "HITS_TAKEN", "DAMAGECOUNT",
                      "DAMAGE_TAKEN", "ITEMCOUNT", "SECRETCOUNT"})


class VariableShaping:
    """The bonus of one step from the changes of the shaping variables: each entry [name, per unit] pays rises
    and falls alike, [name, per unit gained, per unit lost] apart (a loss weight w pays -w per unit lost)."""

    def __init__(self, entries: Sequence[Sequence]):
        self.names = [str(entry[0]) for entry in entries]
        self._gains = np.array([entry[1] for entry in entries], np.float64)
        self._losses = np.array([entry[-1] for entry in entries], np.float64)
        self._counters = np.array([name in COUNTERS for name in self.names], bool)
        self._last = np.zeros(len(self.names))

    def restart(self, values: np.ndarray) -> None:
        """Changes count from these values on (an episode's start, a respawn the engine left dead)."""
        self._last = np.asarray(values, np.float64).copy()

    def bonus(self, values: np.ndarray, respawned: bool = False) -> float:
        """The bonus for the step that ended with `values`; `respawned`: the player died during it and lives on,
        so only the counters' changes pay and the others count from these values on."""
        values = np.asarray(values, np.float64)
        change = values - self._last
        if respawned:
            change = np.where(self._counters, change, 0.0)
        self._last = values.copy()
        return float(np.dot(np.maximum(change, 0), self._gains) + np.dot(np.minimum(change, 0), self._losses))


class MovementShaping:
    """The bonus of one step for moving: `moved` when the player ended the step more than `distance` map units from
    where it began it, `still` (a penalty, below 0) when it did not. A player that runs covers about 16 map units a
    tic, so a step that moves at all passes 3 units; one that stands, turns on the spot or walks into a wall does not.
    The step a respawn moved the player in pays nothing: the teleport is no walk."""

    def __init__(self, moved: float, still: float, distance: float):
        self.moved, self.still, self.distance = float(moved), float(still), float(distance)
        self._last = np.zeros(2)

    def restart(self, position: np.ndarray) -> None:
        """Distances count from this (x, y) on (an episode's start, a respawn)."""
        self._last = np.asarray(position, np.float64).copy()

    def bonus(self, position: np.ndarray, respawned: bool = False) -> float:
        """The bonus for the step that ended at (x, y) `position`."""
        position = np.asarray(position, np.float64)
        travelled = float(np.hypot(*(position - self._last)))
        self._last = position.copy()
        if respawned:
            return 0.0
        return self.moved if travelled > self.distance else self.still


class MatchReport(NamedTuple):
    """One deathmatch episode (a match) as the game counted it."""

    frags: float  # the agent's frags net of suicides (FRAGCOUNT at the end)
    deaths: float  # deaths during the match, suicides too
    frags_per_minute: float  # frags over the match's game time (its tics at 35 a second)
    place: float  # 1 = the most frags; players with equal frags share the better place
    players: float  # the agent and the bots, as PLAYER_COUNT counts them


MATCH_FIELDS = ["frags", "deaths", "frags_per_minute", "place"]  # progress.csv's columns of a deathmatch run


def match_report(frags: float, deaths: float, tics: float, player_frags: Sequence[float],
                 tics_per_second: float = 35.0) -> MatchReport:
    """A match's report: `player_frags` are every player's frags, the agent's among them (PLAYER1_FRAGCOUNT up to
    PLAYER_COUNT's), so the place counts the players with more frags than the agent's."""
    minutes = tics / tics_per_second / 60.0
    place = 1 + sum(1 for other in player_frags if other > frags)
    return MatchReport(float(frags), float(deaths), float(frags / minutes) if minutes > 0 else 0.0, float(place),
                       float(len(player_frags)))
