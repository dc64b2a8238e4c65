"""--fine-turns: the combined action set's turn group also offers each turn held for the first half of the step
("TURN_LEFT/2"). The derived actions and heads by hand, the engine turning less far (read from its ANGLE
variable), the tic-by-tic recording playing the same inputs, the flag's bad uses, and an old config's value."""
import json

import numpy as np
import pytest

from doom_a3c.config import build_parser, given_values
from doom_a3c.envs.doom.action_sets import (
    NO_BUTTON,
    combined_action_heads,
    combined_actions,
    head_option_matrix,
    pressed_button,
)
from doom_a3c.envs.doom.game import DoomEnvironment
from doom_a3c.errors import ConfigError
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.saved_config import upgrade_saved_config
from doom_a3c.runtime.checkpoint import read_checkpoint

from support import REPO_ROOT

ARENA = ["TURN_LEFT", "TURN_RIGHT", "ATTACK"]  # defend_the_center.cfg's buttons
CORRIDOR = ["MOVE_LEFT", "MOVE_RIGHT", "ATTACK", "MOVE_FORWARD", "MOVE_BACKWARD", "TURN_LEFT", "TURN_RIGHT"]


def test_the_turn_group_offers_half_turns_and_the_actions_are_its_heads_outcomes():
    heads = combined_action_heads(ARENA, fine_turns=True)
    assert heads == [[NO_BUTTON, "TURN_LEFT", "TURN_RIGHT", "TURN_LEFT/2", "TURN_RIGHT/2"], [NO_BUTTON, "ATTACK"]]
    actions = combined_actions(ARENA, fine_turns=True)
    assert actions == [[], ["ATTACK"], ["TURN_LEFT"], ["TURN_LEFT", "ATTACK"], ["TURN_RIGHT"],
                       ["TURN_RIGHT", "ATTACK"], ["TURN_LEFT/2"], ["TURN_LEFT/2", "ATTACK"], ["TURN_RIGHT/2"],
                       ["TURN_RIGHT/2", "ATTACK"]]
    matrix = head_option_matrix(actions, heads)
    assert matrix.shape == (7, 10) and (matrix.sum(axis=0) == 2).all()  # each action: one option of each head
    assert pressed_button("TURN_LEFT/2") == "TURN_LEFT" and pressed_button("ATTACK") == "ATTACK"


def test_half_turns_do_not_count_against_the_cap():
    """deadly_corridor's 7 buttons: the same four groups join as without half turns (3 x 3 x 2 x 3 = 54, under
    the cap of 64), now 3 x 5 x 2 x 3 = 90 actions; no button is left over."""
    plain = combined_action_heads(CORRIDOR)
    fine = combined_action_heads(CORRIDOR, fine_turns=True)
    assert [head[1:3] for head in fine] == [head[1:3] for head in plain] and len(fine) == 4
    assert fine[1] == [NO_BUTTON, "TURN_LEFT", "TURN_RIGHT", "TURN_LEFT/2", "TURN_RIGHT/2"]
    actions = combined_actions(CORRIDOR, fine_turns=True)
    assert len(actions) == 90 and len(combined_actions(CORRIDOR)) == 54
    assert ["MOVE_LEFT", "MOVE_FORWARD", "TURN_RIGHT/2"] in actions  # in the .cfg's button order
    head_option_matrix(actions, fine)  # the actions are the heads' outcomes, each once


def test_the_flag_resolves_into_the_saved_actions_and_heads(tmp_path):
    parser = build_parser("test")
    assert given_values(parser.parse_args(["--fine-turns"])) == {"fine_turns": True}
    assert given_values(parser.parse_args(["--no-fine-turns"])) == {"fine_turns": False}
    config = resolve_new_run({"scenario": "defend_the_center", "preset": False,
                              "fine_turns": True, "model_dir": str(tmp_path)})
    assert config.fine_turns and config.action_set == "combined" and len(config.actions) == 10
    assert config.action_heads[0][3:] == ["TURN_LEFT/2", "TURN_RIGHT/2"]
    plain = resolve_new_run({"scenario": "defend_the_center", "preset": False, "fine_turns": False,
                             "model_dir": str(tmp_path)})
    assert not plain.fine_turns and len(plain.actions) == 6 and plain.action_heads[0][1:] == ["TURN_LEFT", "TURN_RIGHT"]
    assert not resolve_new_run({"scenario": "CartPole-v1", "fine_turns": False}).fine_turns  # off is fine anywhere


@pytest.mark.parametrize("given,line", [
    ({"scenario": "basic"}, "--fine-turns needs --action-set combined"),
    ({"scenario": "defend_the_center", "preset": False, "action_set": "buttons"},
     "--fine-turns needs --action-set combined"),
    ({"scenario": "CartPole-v1"}, "--fine-turns: for ViZDoom scenarios only")])
def test_the_flag_needs_the_combined_doom_actions(given, line):
    with pytest.raises(ConfigError, match=line) as error:
        resolve_new_run({**given, "fine_turns": True})
    assert "\n" not in str(error.value)


def test_an_old_config_has_no_half_turns():
    saved = read_checkpoint(f"{REPO_ROOT}/tests/fixtures/old_basic_checkpoint/last.ckpt")
    assert "fine_turns" not in saved.config
    assert upgrade_saved_config(saved.config, "the fixture").fine_turns is False


def _angle_turned(env, action: int, steps: int) -> list[float]:
    """Degrees the player turns on each of `steps` steps of `action`, from the engine's ANGLE variable."""
    import vizdoom as vzd

    read = lambda: env._game.get_game_variable(vzd.GameVariable.ANGLE)  # noqa: E731
    turns, before = [], read()
    for _ in range(steps):
        env.step(action)
        after = read()
        turns.append(abs((after - before + 180.0) % 360.0 - 180.0))
        before = after
    return turns


def test_a_half_turn_turns_a_quarter_to_a_half_as_far_and_the_recording_plays_the_same_inputs(tmp_path):
    """At 8 tics a held TURN_LEFT turns 28.1 degrees a step once past its first tics. TURN_LEFT/2 holds it 4
    tics of the 8: 14.1 degrees right after a held turn, 7.0 from rest (Doom turns at half speed for a turn
    key's first tics, its SLOWTURNTICS). Recording tic by tic gives the same turns and 8 screens a step."""
    config = resolve_new_run({"scenario": "defend_the_center", "preset": False, "fine_turns": True,
                              "frame_skip": 8, "model_dir": str(tmp_path)})
    full, half = config.actions.index(["TURN_LEFT"]), config.actions.index(["TURN_LEFT/2"])
    env = DoomEnvironment(config, seed=1)
    try:
        env.reset()
        _angle_turned(env, full, 2)  # past the turn's first, slower tics
        full_turns = _angle_turned(env, full, 3)
        half_turns = _angle_turned(env, half, 3)
        env.record_tics = True
        recorded_turns = _angle_turned(env, half, 2)
        screens = len(env.tic_screens)
    finally:
        env.close()
    np.testing.assert_allclose(full_turns, 28.125, atol=0.5)
    np.testing.assert_allclose(half_turns, [14.0625, 7.03125, 7.03125], atol=0.5)
    np.testing.assert_allclose(recorded_turns, [7.03125, 7.03125], atol=0.5)
    assert screens == 8


def test_a_persons_always_run_in_the_folders_vizdoom_ini_does_not_reach_an_agent(tmp_path, monkeypatch):
    """A person's game (play.py --human) may save always-run (cl_run, Caps Lock) in the _vizdoom.ini of the folder
    it ran in; an agent's game started there later turns as it was trained: 28.1 degrees a step at 8 tics, not 56."""
    monkeypatch.chdir(tmp_path)  # ViZDoom reads and writes _vizdoom.ini in the working directory
    (tmp_path / "_vizdoom.ini").write_text("[GlobalSettings]\ncl_run=true\n")
    config = resolve_new_run({"scenario": "defend_the_center", "preset": False, "fine_turns": True,
                              "frame_skip": 8, "model_dir": str(tmp_path / "m")})
    env = DoomEnvironment(config, seed=1)
    try:
        env.reset()
        _angle_turned(env, config.actions.index(["TURN_LEFT"]), 2)  # past the turn's first, slower tics
        turns = _angle_turned(env, config.actions.index(["TURN_LEFT"]), 2)
    finally:
        env.close()
    np.testing.assert_allclose(turns, 28.125, atol=0.5)


@pytest.mark.slow
def test_a_run_with_half_turns_trains_and_plays_them(tmp_path, monkeypatch):
    from doom_a3c.run.playback import play
    from doom_a3c.run.training import train_from_flags

    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini into the working directory
    model = tmp_path / "model"
    assert train_from_flags({"scenario": "defend_the_center", "preset": False, "fine_turns": True,
                             "model_dir": str(model), "frames_dir": str(tmp_path / "frames"), "max_steps": 200,
                             "frame_size": 20, "hidden_size": 16, "lstm_size": 8, "workers": 1,
                             "envs_per_worker": 2, "env_threads": 1, "gif_every": 0, "evaluate": False}) == 0
    saved = json.loads((model / "config.json").read_text())
    assert saved["fine_turns"] is True and ["TURN_RIGHT/2", "ATTACK"] in saved["actions"]
    results = play(str(model), str(tmp_path / "play"), episodes=1)
    assert len(results) == 1 and results[0].length > 0
