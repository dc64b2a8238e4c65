"""What the engine knows and the screen shows: learning-only targets from ViZDoom's labels buffer.

The labels buffer gives each object drawn on screen its own value in a per-pixel map, and `state.labels` names
them. An enemy is in view when a monster or another player covers at least `MIN_ENEMY_PIXELS` pixels of it
(Lample and Chaplot 2017, "Playing FPS Games with Deep Reinforcement Learning": a head that predicts such game
features from the torso "dramatically improves the training speed"). The agent never sees the target: it trains
the torso beside the actor-critic loss, and play.py and --export never read it.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

# ViZDoom's object names of the things that fight back: other players (bots in a deathmatch) and Doom's monsters.
ENEMY_NAMES = frozenset({
    "DoomPlayer", "Zombieman", "ShotgunGuy", "ChaingunGuy", "DoomImp", "Demon", "Spectre", "LostSoul", "Cacodemon",
    "HellKnight", "BaronOfHell", "Arachnotron", "PainElemental", "Revenant", "Fatso", "Archvile", "Cyberdemon",
    "SpiderMastermind", "WolfensteinSS", "CommanderKeen", "MarineChainsawVzd",
})
# ViZDoom labels the player's own sprite (its weapon) 255, under the object name of any player: never an enemy.
OWN_LABEL = 255
# At 160x120, a bot across a small arena covers about 20 pixels; fewer are a sliver at the screen's edge.
MIN_ENEMY_PIXELS = 8


def enemy_in_view(labels_buffer: np.ndarray | None, labels: Iterable) -> float:
    """1.0 when a monster or another player (not the agent's own sprite) covers at least MIN_ENEMY_PIXELS of the labels buffer [H, W], else 0.0.
    `labels`: ViZDoom's Label objects (their `object_name` and `value`), or anything with those attributes."""
    if labels_buffer is None:
        return 0.0
    for label in labels:
        if label.value != OWN_LABEL and label.object_name in ENEMY_NAMES and np.count_nonzero(labels_buffer == label.value) >= MIN_ENEMY_PIXELS:
            return 1.0
    return 0.0
