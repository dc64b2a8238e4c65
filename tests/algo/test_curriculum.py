"""--bot-curriculum's moves against match results made by hand: up a level once the last N matches at a level
average the bar, matches of another level left out, never past full strength; and where a run starts."""
import pytest

from doom_a3c.algo.curriculum import BotCurriculum, LevelUp, starting_level


def test_the_level_moves_up_once_the_last_matches_at_it_average_the_bar():
    curriculum = BotCurriculum(matches=4, frags=5.0)
    # Three matches are too few, whatever their frags.
    assert [curriculum.record(frags, 0) for frags in (9, 9, 9)] == [None] * 3
    # The fourth: mean (9 + 9 + 9 + 0) / 4 = 6.75.
    assert curriculum.record(0, 0) == LevelUp(level=1, mean_frags=6.75, matches=4) and curriculum.level == 1
    # At level 1 the count starts again: 2, 4, 6, 7 average 4.75, short of 5; then 8 replaces the 2: 6.25.
    assert [curriculum.record(frags, 1) for frags in (2, 4, 6, 7)] == [None] * 4
    assert curriculum.record(8, 1) == LevelUp(2, 6.25, 4)


def test_a_mean_just_at_the_bar_moves_and_one_just_under_does_not():
    under = BotCurriculum(matches=2, frags=5.0)
    assert under.record(5, 0) is None and under.record(4.5, 0) is None and under.level == 0
    at = BotCurriculum(matches=2, frags=5.0)
    assert at.record(5, 0) is None and at.record(5, 0) == LevelUp(1, 5.0, 2)


def test_matches_played_at_another_level_do_not_count():
    """Matches begun before a move end after it, at the old level; a match without a level (a game never told
    one) is no evidence either."""
    curriculum = BotCurriculum(matches=2, frags=3.0, level=2)
    assert curriculum.record(10, 1) is None and curriculum.record(10, None) is None
    assert curriculum.record(10, float("nan")) is None
    assert curriculum.record(1, 2.0) is None  # progress.csv's levels are floats: 2.0 is level 2
    assert curriculum.record(10, 1) is None  # would have made the mean 5.5
    assert curriculum.record(5, 2) == LevelUp(3, 3.0, 2)


def test_full_strength_is_the_top():
    curriculum = BotCurriculum(matches=1, frags=1.0, level=4)
    assert curriculum.record(3, 4) == LevelUp(5, 3.0, 1)
    assert curriculum.record(30, 5) is None and curriculum.level == 5
    with pytest.raises(ValueError):
        BotCurriculum(matches=1, frags=1.0, level=6)


def test_where_a_run_starts():
    assert starting_level(False, None) is None and starting_level(False, 3) is None  # no curriculum: full strength
    assert starting_level(True, None) == 0  # a fresh run, or a checkpoint without a level
    assert starting_level(True, 3) == 3  # a resumed run goes on at the level it reached
    assert starting_level(True, 9) == 5
