"""The combined action set of a .cfg's buttons: every move, turn, strafe and fire combination, by hand, and each
action pressing exactly the buttons it names in a real game.
"""

import pytest

from doom_a3c.envs.doom.action_sets import MAX_COMBINED_ACTIONS, combined_actions, pressed_button
from doom_a3c.run.resolve import resolve_new_run

# ---- action sets --------------------------------------------------------------------------------------------
EXCLUSIVE = [("MOVE_FORWARD", "MOVE_BACKWARD"), ("TURN_LEFT", "TURN_RIGHT"), ("MOVE_LEFT", "MOVE_RIGHT")]


def test_combined_actions_by_hand():
    assert combined_actions(["MOVE_LEFT", "MOVE_RIGHT", "ATTACK"]) == [
        [], ["MOVE_LEFT"], ["MOVE_RIGHT"], ["ATTACK"], ["MOVE_LEFT", "ATTACK"], ["MOVE_RIGHT", "ATTACK"]]
    corridor = ["MOVE_LEFT", "MOVE_RIGHT", "ATTACK", "MOVE_FORWARD", "MOVE_BACKWARD", "TURN_LEFT", "TURN_RIGHT"]
    assert len(combined_actions(corridor)) == 3 * 3 * 2 * 3
    # A full Doom button set stays within the cap, the delta button's 10 bins beyond it (actions of their own, as
    # the product is full); every button is still offered.
    full = ["ATTACK", "SPEED", "STRAFE", "USE", "MOVE_RIGHT", "MOVE_LEFT", "MOVE_BACKWARD", "MOVE_FORWARD",
            "TURN_RIGHT", "TURN_LEFT"] + [f"SELECT_WEAPON{i}" for i in range(1, 8)] + ["TURN_LEFT_RIGHT_DELTA"]
    actions = combined_actions(full, frame_skip=4)
    assert len(actions) == MAX_COMBINED_ACTIONS + 10
    assert {pressed_button(b) for action in actions for b in action} == set(full)
    assert len({tuple(a) for a in actions}) == len(actions)


@pytest.mark.parametrize("scenario,count", [("basic", 6), ("deadly_corridor", 54), ("my_way_home", 18)])
def test_each_combined_action_presses_exactly_the_buttons_it_names(scenario, count, tmp_path, monkeypatch):
    from doom_a3c.envs.doom.game import DoomEnvironment, button_names

    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini into the working directory

    config = resolve_new_run({"scenario": scenario, "action_set": "combined", "model_dir": str(tmp_path)})
    assert config.action_set == "combined" and len(config.actions) == count
    for action in config.actions:
        for pair in EXCLUSIVE:
            assert len(set(pair) & set(action)) <= 1
    env = DoomEnvironment(config, seed=1)
    try:
        buttons = button_names(env._game)
        env.reset()
        for index, action in enumerate(config.actions):
            if env.step(index).game_over:
                env.reset()
                env.step(index)
            pressed = [name for name, value in zip(buttons, env._game.get_last_action()) if value]
            assert sorted(pressed) == sorted(action), env.action_names[index]
    finally:
        env.close()
