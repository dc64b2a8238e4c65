"""A factorised Doom policy (--policy-heads factorised): one categorical head per button group over
the same actions as --action-set combined. The option matrix and the joint distribution against numbers worked
out by hand, the config's round trip and an old config's upgrade, then a tiny run that trains, plays and exports."""
import json

import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo.losses import a3c_loss
from doom_a3c.algo.model.heads import FactorisedHeads, joint_log_probs
from doom_a3c.config import build_parser, given_values
from doom_a3c.envs.doom.action_sets import (
    COMBINATION,
    NO_BUTTON,
    combined_action_heads,
    combined_actions,
    head_option_matrix,
)
from doom_a3c.envs.interface import EnvSpec
from doom_a3c.errors import ConfigError
from doom_a3c.modes.build import build_global, build_network
from doom_a3c.run.agent import load_agent
from doom_a3c.run.playback import play
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.saved_config import resolve_resumed_run, upgrade_saved_config
from doom_a3c.run.training import train_from_flags
from doom_a3c.runtime.checkpoint import read_checkpoint, restore

from support import REPO_ROOT, first_observation_and_policy

# Four buttons in three groups (move, turn, attack), and SPEED left over: a cap of 13 admits 2 x 3 x 2 = 12
# combinations and SPEED alone, where SPEED in the product would make 24.
BUTTONS = ["MOVE_FORWARD", "TURN_LEFT", "TURN_RIGHT", "ATTACK", "SPEED"]
CAP = 13
ACTIONS = [[], ["ATTACK"], ["TURN_LEFT"], ["TURN_LEFT", "ATTACK"], ["TURN_RIGHT"], ["TURN_RIGHT", "ATTACK"],
           ["MOVE_FORWARD"], ["MOVE_FORWARD", "ATTACK"], ["MOVE_FORWARD", "TURN_LEFT"],
           ["MOVE_FORWARD", "TURN_LEFT", "ATTACK"], ["MOVE_FORWARD", "TURN_RIGHT"],
           ["MOVE_FORWARD", "TURN_RIGHT", "ATTACK"], ["SPEED"]]
HEADS = [[NO_BUTTON, "MOVE_FORWARD"], [NO_BUTTON, "TURN_LEFT", "TURN_RIGHT"], [NO_BUTTON, "ATTACK"],
         [COMBINATION, "SPEED"]]
# Rows: the heads' options in order; columns: ACTIONS.
MATRIX = [[1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0],  # move: none
          [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0],  # move: MOVE_FORWARD
          [1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0],  # turn: none
          [0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0],  # turn: TURN_LEFT
          [0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0],  # turn: TURN_RIGHT
          [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0],  # attack: none
          [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0],  # attack: ATTACK
          [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0],  # which: a combination
          [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]]  # which: SPEED


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def entropy(p: np.ndarray) -> np.ndarray:
    return -(p * np.log(p)).sum(axis=-1)


# ---- the structure, by hand ---------------------------------------------------------------------------------
def test_the_heads_and_their_option_matrix_by_hand():
    assert combined_actions(BUTTONS, CAP) == ACTIONS
    assert combined_action_heads(BUTTONS, CAP) == HEADS
    np.testing.assert_array_equal(head_option_matrix(ACTIONS, HEADS), MATRIX)
    # Without a left-over button there is no "which" head.
    assert combined_action_heads(BUTTONS[:4]) == HEADS[:3]


@pytest.mark.parametrize("actions", [ACTIONS[:-1], ACTIONS + [["SPEED"]], ACTIONS[:-1] + [["ATTACK", "SPEED"]],
                                     ACTIONS[:-1] + [["TURN_LEFT", "TURN_RIGHT"]]])
def test_actions_that_are_not_the_heads_outcomes_each_once_are_refused(actions):
    with pytest.raises(ValueError):
        head_option_matrix(actions, HEADS)


def test_the_joint_distribution_is_the_product_of_the_heads_by_hand():
    rng = np.random.default_rng(0)
    head_logits = rng.normal(size=(4, 9)).astype(np.float32) * 2  # [B, move 2 + turn 3 + attack 2 + which 2]
    heads = FactorisedHeads([2, 3, 2, 2], head_option_matrix(ACTIONS, HEADS))
    joint = tf.nn.softmax(joint_log_probs(tf.constant(head_logits), heads)).numpy()  # as sampling and play.py see it
    move, turn, attack, which = (softmax(head_logits[:, a:b]) for a, b in ((0, 2), (2, 5), (5, 7), (7, 9)))
    expected = np.zeros((4, len(ACTIONS)))
    for column, action in enumerate(ACTIONS):
        if action == ["SPEED"]:
            expected[:, column] = which[:, 1]
            continue
        m = int("MOVE_FORWARD" in action)
        t = 1 if "TURN_LEFT" in action else 2 if "TURN_RIGHT" in action else 0
        a = int("ATTACK" in action)
        expected[:, column] = move[:, m] * turn[:, t] * attack[:, a] * which[:, 0]
    np.testing.assert_allclose(joint, expected, rtol=1e-5)
    np.testing.assert_allclose(joint.sum(axis=1), 1.0, rtol=1e-6)


def test_without_a_which_head_the_joint_entropy_is_the_sum_of_the_heads():
    actions, heads = combined_actions(BUTTONS[:4]), combined_action_heads(BUTTONS[:4])
    rng = np.random.default_rng(1)
    head_logits = rng.normal(size=(3, 2, 7)).astype(np.float32)  # [T, B, 2 + 3 + 2]
    heads = FactorisedHeads([2, 3, 2], head_option_matrix(actions, heads))
    log_probs = joint_log_probs(tf.constant(head_logits), heads)
    zeros = tf.zeros([3, 2])
    terms = a3c_loss(log_probs, zeros, tf.zeros([3, 2], tf.int32), zeros, zeros, 0.5, 1.0, 0.01)
    by_head = sum(entropy(softmax(head_logits[..., a:b])) for a, b in ((0, 2), (2, 5), (5, 7)))  # [T, B]
    assert float(terms.entropy) == pytest.approx(by_head.sum() / 2, rel=1e-5)  # the loss averages over B = 2


# ---- the config: resolved, saved, loaded ----------------------------------------------------------------------
TINY = {"frame_size": 20, "hidden_size": 16, "lstm_size": 8, "workers": 1, "envs_per_worker": 2, "env_threads": 1,
        "gif_every": 0, "log_every_seconds": 60.0, "evaluate": False}


def factorised_config(tmp_path, scenario="deadly_corridor"):
    return resolve_new_run({"scenario": scenario, "action_set": "combined", "policy_heads": "factorised",
                            "model_dir": str(tmp_path / "model"), **TINY})


def test_the_flag_and_its_resolved_heads(tmp_path):
    assert given_values(build_parser("test").parse_args(["--policy-heads", "factorised"])) == {
        "policy_heads": "factorised"}
    config = factorised_config(tmp_path)
    assert len(config.actions) == 54 and [len(head) for head in config.action_heads] == [3, 3, 2, 3]
    assert config.action_heads[0] == [NO_BUTTON, "MOVE_FORWARD", "MOVE_BACKWARD"]
    flat = resolve_new_run({"scenario": "deadly_corridor", "action_set": "combined", "policy_heads": "flat"})
    assert flat.policy_heads == "flat" and flat.action_heads == [] and flat.actions == config.actions
    with pytest.raises(ConfigError, match="cannot change --policy-heads"):
        resolve_resumed_run(flat, {"policy_heads": "factorised"}, "the run")


@pytest.mark.parametrize("given,line", [
    ({"scenario": "basic"}, "--policy-heads factorised needs --action-set combined"),
    ({"scenario": "basic", "action_set": "buttons"}, "--policy-heads factorised needs --action-set combined"),
    ({"scenario": "CartPole-v1"}, "--policy-heads: for ViZDoom scenarios only")])
def test_factorised_heads_need_the_combined_doom_actions(given, line):
    with pytest.raises(ConfigError, match=line) as error:
        resolve_new_run({**given, "policy_heads": "factorised"})
    assert "\n" not in str(error.value)


def test_a_factorised_config_saved_as_json_gives_the_same_network(tmp_path):
    config = factorised_config(tmp_path)
    spec = EnvSpec(len(config.actions), (20, 20, 1), 4 / 35, [])
    parts = build_global(config, spec)
    rng = np.random.default_rng(2)
    for variable in parts.learner.net.learned_variables:  # weights the loaded network cannot have by its seed alone
        variable.assign(variable + rng.normal(scale=0.3, size=variable.shape).astype(np.float32))
    prefix = parts.save(episodes=0, wall_seconds=1.0)
    loaded = upgrade_saved_config(json.loads((tmp_path / "model" / "config.json").read_text()), "config.json")
    assert loaded == config
    net = build_network(loaded, spec, "global")
    restore(tf.train.Checkpoint(model=net), prefix, partial=True)
    observations = {"frame": rng.integers(0, 256, (3, 20, 20, 1)).astype(np.uint8),  # deadly_corridor's variables
                    "variables": rng.normal(size=(3, len(config.game_variables))).astype(np.float32)}
    expected = parts.learner.net.step(observations, net.initial_state(3), tf.ones([3]))
    out = net.step(observations, net.initial_state(3), tf.ones([3]))
    np.testing.assert_allclose(out.logits.numpy(), expected.logits.numpy(), rtol=1e-6)
    np.testing.assert_allclose(tf.reduce_sum(tf.exp(out.logits), -1).numpy(), 1.0, rtol=1e-5)


def test_an_old_config_loads_flat_and_its_checkpoint_restores(capsys):
    """tests/fixtures/old_basic_checkpoint predates the heads: one softmax, the network it always was."""
    fixture = f"{REPO_ROOT}/tests/fixtures/old_basic_checkpoint"
    saved = read_checkpoint(f"{fixture}/last.ckpt")
    assert "policy_heads" not in saved.config and "action_heads" not in saved.config
    config = upgrade_saved_config(saved.config, "the fixture")
    assert config.policy_heads == "flat" and config.action_heads == []
    net = build_network(config, EnvSpec(saved.num_actions, (20, 20, 1), 4 / 35, []), "global")
    restore(tf.train.Checkpoint(model=net), f"{fixture}/last.ckpt", partial=True)
    expected = np.load(f"{fixture}/expected_step.npz")
    out = net.step(expected["observations"], net.initial_state(2), tf.ones([2]))
    np.testing.assert_allclose(out.logits.numpy(), expected["logits"], atol=1e-6)


# ---- end to end: a tiny factorised run trains, plays and exports ------------------------------------------------
@pytest.mark.slow
def test_a_factorised_run_trains_plays_and_exports(tmp_path, monkeypatch):
    from doom_a3c.run.export import export_policy

    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini into the working directory
    model = tmp_path / "model"
    flags = {"scenario": "basic.wad", "action_set": "combined", "policy_heads": "factorised",
             "model_dir": str(model), "frames_dir": str(tmp_path / "frames"), "max_steps": 300, **TINY}
    assert train_from_flags(flags) == 0
    saved = json.loads((model / "config.json").read_text())
    assert saved["policy_heads"] == "factorised" and len(saved["actions"]) == 6
    assert saved["action_heads"] == [[NO_BUTTON, "ATTACK"], [NO_BUTTON, "MOVE_LEFT", "MOVE_RIGHT"]]

    results = play(str(model), str(tmp_path / "play"), episodes=1)
    assert len(results) == 1 and results[0].length > 0

    agent = load_agent(str(model))
    exported = export_policy(agent, str(tmp_path / "export"))
    assert json.loads(open(exported.metadata).read())["action_heads"] == saved["action_heads"]
    observation, expected = first_observation_and_policy(agent)
    state = np.zeros((1, agent.net.state_size), np.float32)
    loaded = tf.saved_model.load(exported.saved_model)  # kept: its step needs the loaded variables alive
    out = loaded.step(observation=observation[None], state_h=state, state_c=state,
                      episode_start=np.ones([1], np.float32))
    np.testing.assert_allclose(out["probabilities"].numpy()[0], expected, rtol=1e-5, atol=1e-6)
    assert exported.tflite, f"TFLite conversion failed: {exported.tflite_error}"
    lite = tf.lite.Interpreter(model_path=exported.tflite).get_signature_runner()(
        observation=observation[None], state_h=state, state_c=state, episode_start=np.ones([1], np.float32))
    np.testing.assert_allclose(lite["probabilities"][0], expected, atol=1e-4)
