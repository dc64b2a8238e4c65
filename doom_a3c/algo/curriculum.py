"""--bot-curriculum: when the bots of a deathmatch move up a level, from the agent's own results (pure Python).

Training games start against the weakest bots (level 0) and go up one level each time the mean frags of the last
`matches` matches played at the level reach `frags`, to FULL_STRENGTH (doom_a3c/envs/doom/bot_levels.py says what a
level is). As Kieliger's curriculum on deathmatch_simple (github lkiel/rl-doom), which moves on the mean of the last
10 matches; here on the game's own frags, not a shaped return, so that the bar means the same whatever the shaping.
"""
from __future__ import annotations

from collections import deque
from typing import NamedTuple

from doom_a3c.envs.doom.bot_levels import FULL_STRENGTH


class LevelUp(NamedTuple):
    level: int  # the new level
    mean_frags: float  # the mean frags a match that moved it
    matches: int  # over this many matches at the level before


class BotCurriculum:
    """The bots' level, moved by the finished matches' frags. A match played at another level than the current one
    (begun before the last move) is no evidence about this one: it does not count."""

    def __init__(self, matches: int, frags: float, level: int = 0):
        if not 0 <= level <= FULL_STRENGTH:
            raise ValueError(f"a bot level is 0 to {FULL_STRENGTH}, got {level}")
        self.level = level
        self.frags = frags
        self._recent: deque[float] = deque(maxlen=matches)

    def record(self, frags: float, played_at: float | None) -> LevelUp | None:
        """One finished match: its frags and the level it was played at (None, NaN: unknown). The move up it makes,
        or None."""
        if played_at != self.level or self.level >= FULL_STRENGTH:
            return None
        self._recent.append(float(frags))
        mean = sum(self._recent) / len(self._recent)
        if len(self._recent) < self._recent.maxlen or mean < self.frags:
            return None
        self.level += 1
        self._recent.clear()
        return LevelUp(self.level, mean, self._recent.maxlen)


def starting_level(curriculum: bool, saved: int | None) -> int | None:
    """The level a run's training games start at: None (full strength) without the curriculum; with it, the level a
    resumed checkpoint reached, else 0. A checkpoint without a level (trained at full strength, or older than the
    curriculum) starts again at 0, as a fresh run does: an agent that already beats the bots climbs back in
    --curriculum-matches matches a level."""
    if not curriculum:
        return None
    return 0 if saved is None else min(max(int(saved), 0), FULL_STRENGTH)
