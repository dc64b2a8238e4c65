"""Delta buttons: a .cfg's TURN_LEFT_RIGHT_DELTA (and the other binnable *_DELTA buttons) becomes bins,
actions named by what they send. The bins, the per-tic values and both action sets by hand; a .cfg without delta
buttons keeps its actions; the engine turning the named amount a step; a delta button without bins, or one ViZDoom
does not know, one line on stderr."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from doom_a3c.config import TrainConfig
from doom_a3c.envs.doom import action_sets
from doom_a3c.envs.doom.action_sets import (
    COMBINATION,
    NO_BUTTON,
    action_name_problem,
    combined_action_heads,
    combined_actions,
    delta_bins,
    delta_value,
    head_option_matrix,
    pressed_button,
    single_button_actions,
    tic_value,
    unbinnable_delta_buttons,
)
from doom_a3c.envs.doom.game import button_vector, tic_input
from doom_a3c.envs.doom.scenario_files import shipped_scenario_names, shipped_scenarios_dir
from doom_a3c.errors import ConfigError
from doom_a3c.run.doom_values import doom_buttons
from doom_a3c.run.resolve import resolve_environment, resolve_new_run
from doom_a3c.run.saved_config import upgrade_saved_config

from support import REPO_ROOT

TURN = "TURN_LEFT_RIGHT_DELTA"
TURN_BINS_AT_4 = [f"{TURN}={v}" for v in (-40, -32, -24, -16, -8, 8, 16, 24, 32, 40)]  # +-10 degrees a tic, x 4 tics
# Sample Factory's battle_continuous_turning.cfg, and its battle.cfg's plain turning.
CONTINUOUS = ["MOVE_FORWARD", "MOVE_BACKWARD", "MOVE_RIGHT", "MOVE_LEFT", "ATTACK", "SPEED", TURN]
PLAIN = ["MOVE_FORWARD", "MOVE_BACKWARD", "MOVE_RIGHT", "MOVE_LEFT", "ATTACK", "SPEED", "TURN_LEFT", "TURN_RIGHT"]


# ---- the bins, by hand ---------------------------------------------------------------------------------------
def test_an_angle_bin_is_named_by_the_steps_turn_and_sent_evenly_over_its_tics():
    assert delta_bins(TURN, frame_skip=4) == TURN_BINS_AT_4
    assert delta_bins("LOOK_UP_DOWN_DELTA", frame_skip=6)[:2] == ["LOOK_UP_DOWN_DELTA=-60", "LOOK_UP_DOWN_DELTA=-48"]
    assert tic_value(f"{TURN}=-24", frame_skip=6) == -4.0  # 6 tics of -4: 24 degrees left
    assert tic_value(f"{TURN}=10", frame_skip=4) == 2.5  # a preset may name any value
    assert tic_value("ATTACK", frame_skip=6) == 1.0 and tic_value("TURN_LEFT/2", frame_skip=6) == 1.0
    assert pressed_button(f"{TURN}=-24") == TURN and delta_value(f"{TURN}=-24") == -24.0
    assert delta_value("ATTACK") is None


def test_a_move_bin_is_the_speed_of_the_binary_buttons_held_each_tic():
    """25 walks as MOVE_FORWARD, 50 runs as MOVE_FORWARD with SPEED; sideways 24 and 40 (measured in the engine)."""
    assert delta_bins("MOVE_FORWARD_BACKWARD_DELTA", frame_skip=None) == [
        "MOVE_FORWARD_BACKWARD_DELTA=-50", "MOVE_FORWARD_BACKWARD_DELTA=-25", "MOVE_FORWARD_BACKWARD_DELTA=25",
        "MOVE_FORWARD_BACKWARD_DELTA=50"]
    assert delta_bins("MOVE_LEFT_RIGHT_DELTA", frame_skip=6)[1:3] == ["MOVE_LEFT_RIGHT_DELTA=-24",
                                                                       "MOVE_LEFT_RIGHT_DELTA=24"]
    assert tic_value("MOVE_FORWARD_BACKWARD_DELTA=25", frame_skip=6) == 25.0


def test_one_action_per_button_and_per_bin_in_the_cfgs_order():
    assert single_button_actions(["ATTACK", TURN, "MOVE_FORWARD"], frame_skip=4) == [
        ["ATTACK"], *[[name] for name in TURN_BINS_AT_4], ["MOVE_FORWARD"]]


def test_a_delta_button_is_a_group_of_the_product_with_its_own_head():
    actions = combined_actions([TURN, "ATTACK"], frame_skip=4)  # attack's group joins first, the bins after it
    assert actions[:3] == [[], [TURN_BINS_AT_4[0]], [TURN_BINS_AT_4[1]]]
    assert actions[11:13] == [["ATTACK"], [TURN_BINS_AT_4[0], "ATTACK"]]  # in the .cfg's button order
    assert len(actions) == 2 * 11
    heads = combined_action_heads([TURN, "ATTACK"], frame_skip=4)
    assert heads == [[NO_BUTTON, "ATTACK"], [NO_BUTTON, *TURN_BINS_AT_4]]
    matrix = head_option_matrix(actions, heads)
    assert matrix.shape == (13, 22) and (matrix.sum(axis=0) == 2).all()  # one option of each head per action


def test_the_battle_map_with_delta_turning_has_the_groups_of_its_plain_turning_copy():
    """A delta button counts against the cap as the pair it stands in for: move, turn, attack and strafe join the
    product either way (3 x 2 x 3 x 11 = 198 with the bins, 3 x 3 x 2 x 3 = 54 without), SPEED alone."""
    continuous = combined_action_heads(CONTINUOUS, frame_skip=4)
    plain = combined_action_heads(PLAIN, frame_skip=4)
    assert [len(head) for head in continuous] == [3, 2, 3, 11, 2]  # the delta group joins after strafe
    assert [len(head) for head in plain] == [3, 3, 2, 3, 2]
    assert continuous[3] == [NO_BUTTON, *TURN_BINS_AT_4] and continuous[-1] == plain[-1] == [COMBINATION, "SPEED"]
    actions = combined_actions(CONTINUOUS, frame_skip=4)
    assert len(actions) == 199 and len(combined_actions(PLAIN)) == 55
    assert ["MOVE_FORWARD", "MOVE_RIGHT", "ATTACK", f"{TURN}=-8"] in actions  # in the .cfg's button order
    head_option_matrix(actions, continuous)  # the actions are the heads' outcomes, each once


def test_a_cfg_with_binary_and_delta_turning_keeps_its_binary_product():
    """deathmatch.cfg: 17 binary buttons and three delta buttons. The product is full without the bins (64, as
    before), so the 24 bins are actions of their own, beyond the cap, in the "which" head."""
    buttons = doom_buttons(os.path.join(shipped_scenarios_dir(), "deathmatch.cfg"))
    binary = [b for b in buttons if not b.endswith("_DELTA")]
    with_bins, without = combined_action_heads(buttons, frame_skip=4), combined_action_heads(binary)
    assert with_bins[:-1] == without[:-1] and len(with_bins[-1]) == len(without[-1]) + 10 + 10 + 4
    assert len(combined_actions(buttons, frame_skip=4)) == len(combined_actions(binary)) + 24 == 88


def test_what_cannot_be_binned_or_played():
    assert unbinnable_delta_buttons(["ATTACK", "MOVE_UP_DOWN_DELTA", TURN]) == ["MOVE_UP_DOWN_DELTA"]
    with pytest.raises(ValueError, match="MOVE_UP_DOWN_DELTA has no bins"):
        combined_actions(["ATTACK", "MOVE_UP_DOWN_DELTA"], frame_skip=4)
    with pytest.raises(ValueError, match="need the frame skip"):
        single_button_actions([TURN])
    assert action_name_problem(f"{TURN}=-24") is None and action_name_problem("TURN_LEFT/2") is None
    assert "is a delta button" in action_name_problem(TURN)
    assert "only a delta button takes a value" in action_name_problem("ATTACK=1")
    assert "finite number" in action_name_problem(f"{TURN}=nan")
    assert "has no bins" in action_name_problem("MOVE_UP_DOWN_DELTA=5")


# ---- a .cfg without delta buttons keeps its actions: old checkpoints play as trained -------------------------
# Actions per shipped .cfg before delta bins (which left delta buttons out): one per button,
# combined, combined with half turns.
ACTIONS_BEFORE = {"basic": (3, 6, 6), "basic_audio": (3, 6, 6), "basic_notifications": (3, 6, 6), "cig": (8, 55, 91),
                  "deadly_corridor": (7, 54, 90), "deathmatch": (17, 64, 100), "defend_the_center": (3, 6, 10),
                  "defend_the_line": (3, 6, 10), "health_gathering": (3, 6, 10), "health_gathering_supreme": (3, 6, 10),
                  "learning": (3, 6, 6), "my_way_home": (5, 18, 30), "predict_position": (3, 6, 10),
                  "rocket_basic": (3, 6, 6), "simpler_basic": (3, 6, 6), "take_cover": (2, 3, 3)}


@pytest.mark.parametrize("name", sorted(shipped_scenario_names()))
def test_a_cfg_without_delta_buttons_gets_the_actions_it_got_before(name, monkeypatch):
    """The delta groups are skipped for a .cfg without delta buttons: as many actions as before, the same actions
    and heads as with the groups of before (every shipped .cfg, its delta buttons taken out), and the same
    make_action inputs."""
    buttons = [b for b in doom_buttons(os.path.join(shipped_scenarios_dir(), f"{name}.cfg"))
               if not b.endswith("_DELTA")]

    def derived() -> list:
        return [single_button_actions(buttons)] + [
            (combined_actions(buttons, fine_turns=fine), combined_action_heads(buttons, fine_turns=fine))
            for fine in (False, True)]

    today = derived()
    assert (len(today[0]), len(today[1][0]), len(today[2][0])) == ACTIONS_BEFORE[name]
    monkeypatch.setattr(action_sets, "BUTTON_GROUPS",
                        tuple(g for g in action_sets.BUTTON_GROUPS if not g[0].endswith("_DELTA")))
    assert derived() == today
    with_half_turns = today[2][0]
    for action in with_half_turns:  # their engine buttons held, as button_vector held them, and nothing else
        assert tic_input(buttons, action, 6) == button_vector(buttons, [pressed_button(b) for b in action])


# ---- resolved, saved, played in the engine -------------------------------------------------------------------
def turning_cfg(tmp_path, buttons: str = f"ATTACK {TURN}") -> str:
    """A small .cfg on a copy of defend_the_center's map (no preset knows its name) whose game variable is the
    angle."""
    shutil.copy(os.path.join(shipped_scenarios_dir(), "defend_the_center.wad"), tmp_path / "arena.wad")
    cfg = tmp_path / "turning_arena.cfg"
    cfg.write_text(f"doom_scenario_path = arena.wad\nepisode_timeout = 2100\navailable_buttons = {{ {buttons} }}\n"
                   "available_game_variables = { ANGLE }\n")
    return str(cfg)


def test_the_bins_resolve_into_the_saved_config(tmp_path):
    config = resolve_new_run({"scenario": turning_cfg(tmp_path), "model_dir": str(tmp_path)})
    assert config.frame_skip == 6 and config.action_set == "combined"  # the defaults of a map with no preset
    assert [f"{TURN}=-60"] in config.actions and ["ATTACK", f"{TURN}=60"] in config.actions  # the .cfg's order
    assert config.action_heads[1][1:] == delta_bins(TURN, 6) and len(config.actions) == 22
    saved = upgrade_saved_config(config.to_dict(), "the run")  # what play.py, --resume and --export read back
    assert saved.actions == config.actions and saved.action_heads == config.action_heads
    with pytest.raises(ConfigError, match="is a delta button: an action sets it to a number") as error:
        resolve_environment(TrainConfig(scenario=config.scenario, model_dir=str(tmp_path), actions=[[TURN]]))
    assert "\n" not in str(error.value)


def _angle(observation) -> float:
    return float(observation["variables"][0])


def test_a_bin_turns_the_player_by_the_named_amount_in_the_engine(tmp_path, monkeypatch):
    """Measured: ViZDoom applies a delta value on every tic of make_action, and + turns right (ANGLE falls). Each
    bin, at 4 tics a step, turns what its name says within 0.05 degrees (the engine keeps 1/182 of a degree a
    tic), as make_env plays it and as play.py's tic-by-tic recording does."""
    from doom_a3c.run.agent import make_env

    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini into the working directory
    env = make_env(TrainConfig(scenario=turning_cfg(tmp_path), model_dir=str(tmp_path), frame_skip=4))
    try:
        observation, _ = env.reset(seed=1)
        for _ in range(4):  # the engine turns no player in an episode's first 7 tics (measured)
            observation, *_ = env.step(0)
        turned = {}
        for tic_by_tic in (False, True):
            env.game.record_tics = tic_by_tic
            for name in TURN_BINS_AT_4:
                before = _angle(observation)
                observation, _, terminated, truncated, _ = env.step(env.action_names.index(name))
                assert not (terminated or truncated)
                turned[name, tic_by_tic] = (_angle(observation) - before + 180.0) % 360.0 - 180.0
    finally:
        env.close()
    for (name, _), degrees in turned.items():
        assert degrees == pytest.approx(-delta_value(name), abs=0.05), name


@pytest.mark.slow
def test_a_run_saves_the_bins_and_its_checkpoint_plays_and_exports_them(tmp_path, monkeypatch):
    """config.json keeps the bins; the checkpoint's agent (play.py's) turns by them in its env (make_env's), and
    --export's policy.json names them."""
    from doom_a3c.run.agent import load_agent
    from doom_a3c.run.export import export_policy
    from doom_a3c.run.training import train_from_flags

    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini into the working directory
    model = tmp_path / "model"
    assert train_from_flags({"scenario": turning_cfg(tmp_path), "frame_skip": 4, "model_dir": str(model),
                             "frames_dir": str(tmp_path / "frames"), "max_steps": 100, "frame_size": 20,
                             "hidden_size": 16, "lstm_size": 8, "workers": 1, "envs_per_worker": 2, "env_threads": 1,
                             "gif_every": 0, "evaluate": False}) == 0
    saved = json.loads((model / "config.json").read_text())
    assert [f"{TURN}=-40"] in saved["actions"] and saved["action_heads"][1][1:] == TURN_BINS_AT_4
    agent = load_agent(str(model))
    names = ["+".join(action) or "NOOP" for action in saved["actions"]]
    env = agent.make_env()
    try:
        assert env.action_names == names
        observation, _ = env.reset()
        for _ in range(4):
            observation, *_ = env.step(0)
        before = _angle(observation)
        observation, *_ = env.step(names.index(f"{TURN}=-40"))
        assert (_angle(observation) - before) % 360.0 == pytest.approx(40.0, abs=0.05)  # 40 degrees left
    finally:
        env.close()
    exported = export_policy(agent, str(tmp_path / "export"))
    assert json.loads(open(exported.metadata).read())["action_names"] == names


@pytest.mark.parametrize("buttons,line", [
    ("ATTACK MOVE_UP_DOWN_DELTA", "makes the delta button MOVE_UP_DOWN_DELTA available, which has no bins"),
    # ViZDoom would drop the whole list with a warning on stderr at each of its loads: refused before any of them.
    ("ATTACK TURN_DELTA", "lists TURN_DELTA, which ViZDoom does not know")])
@pytest.mark.slow
def test_a_delta_button_without_bins_is_one_line_from_train_py(buttons, line, tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "train.py"),
                           "--scenario", turning_cfg(tmp_path, buttons), "--max-steps", "10"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, (proc.returncode, lines)
    assert lines[0].startswith("error: ") and line in lines[0], lines[0]
    assert not (tmp_path / "models").exists()  # refused before anything is written
