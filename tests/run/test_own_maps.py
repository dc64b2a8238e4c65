"""A user's own map on the defaults: --no-preset, combined-button actions derived from the .cfg, the .cfg's
game variables standardised by running statistics, and scale-free learning (returns normalised by a running
5th-95th percentile range, DreamerV3); the maths against numbers computed by hand, then a tiny run end to end."""
import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo import normalization as norm
from doom_a3c.algo.gradients import process_gradients
from doom_a3c.algo.learner import GlobalLearner, GradientStep, learning_targets
from doom_a3c.algo.model.actor_critic import build_actor_critic
from doom_a3c.algo.model.layers import normalized_variables_tensor, return_scale_tensor
from doom_a3c.config import TrainConfig, build_parser, given_values
from doom_a3c.envs.doom.action_sets import MAX_COMBINED_ACTIONS, combined_actions, pressed_button
from doom_a3c.errors import ConfigError
from doom_a3c.modes.build import build_global
from doom_a3c.run.agent import load_agent
from doom_a3c.run.playback import play
from doom_a3c.run.presets import own_map_defaults
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.saved_config import resolve_resumed_run, upgrade_saved_config
from doom_a3c.run.training import train_from_flags
from doom_a3c.runtime.checkpoint import read_checkpoint

from conftest import first_observation_and_policy
from support import GAMES, SHAPE, spec, tiny_config, variable_rollout

DECAY = norm.MOMENTS_DECAY


# ---- return normalisation: the maths by hand ----------------------------------------------------------------
def test_return_scale_is_the_debiased_running_percentile_range_by_hand():
    moments = np.zeros(3)
    assert norm.return_scale(moments) == 1.0  # nothing seen yet
    # 0, 1, ..., 20: numpy's linear percentiles are exactly 1 (5th) and 19 (95th).
    assert list(norm.return_targets(np.arange(21.0))) == [1.0, 1.0, 19.0]
    moments = moments + norm.moments_update(moments, norm.return_targets(np.arange(21.0)))
    np.testing.assert_allclose(moments, [0.01, 0.01, 0.19])  # 0.99 * 0 + 0.01 * target
    assert norm.return_scale(moments) == pytest.approx(18.0)  # (0.19 - 0.01) / 0.01: the first batch in full
    # 0, 2, ..., 40: percentiles 2 and 38, a range of 36. Debiased: (0.99 * 0.01 * 18 + 0.01 * 36) / (1 - 0.99^2).
    moments = moments + norm.moments_update(moments, norm.return_targets(np.arange(0.0, 41.0, 2.0)))
    np.testing.assert_allclose(moments, [0.0199, 0.0299, 0.5681])
    assert norm.return_scale(moments) == pytest.approx((0.99 * 18 + 36) / 1.99)  # 27.0452...


def test_small_returns_are_never_scaled_up():
    moments = np.zeros(3)
    moments = moments + norm.moments_update(moments, norm.return_targets(np.array([0.0, 0.1, 0.2])))
    assert norm.return_scale(moments) == 1.0
    np.testing.assert_array_equal(norm.normalized_advantages(np.array([0.5, -0.5]), moments), [0.5, -0.5])


def test_a_lower_floor_scales_a_small_sparse_return_up_and_the_network_agrees(tmp_path):
    """--return-scale-floor 0.01 (a map with no preset): returns spanning 0.1 are divided by 0.1, not by 1; the
    network's value output uses the same S."""
    moments = np.zeros(3) + norm.moments_update(np.zeros(3), norm.return_targets(np.linspace(0.0, 0.1, 21)))
    assert norm.return_scale(moments, floor=0.01) == pytest.approx(0.09)  # 95th 0.095 - 5th 0.005
    assert norm.return_scale(moments, floor=1.0) == 1.0
    assert norm.return_scale(np.zeros(3), floor=0.01) == 1.0  # nothing seen yet
    np.testing.assert_allclose(norm.normalized_advantages(np.array([0.009, -0.018]), moments, floor=0.01),
                               [0.1, -0.2])
    flat = norm.moments_update(np.zeros(3), norm.return_targets(np.zeros(10)))  # no reward yet: S = 0
    assert norm.return_scale(flat, floor=0.01) == 0.01
    for floor in (0.01, 1.0):
        scale = return_scale_tensor(tf.constant(moments, tf.float32), floor)
        assert float(scale) == pytest.approx(norm.return_scale(moments, floor), rel=1e-5)
    config = tiny_config(tmp_path, game_variables=[], normalize_variables=False, return_scale_floor=0.01)
    net = build_actor_critic(config, 3, SHAPE, "floor")
    assert net.return_scale_floor == 0.01


def test_returns_at_two_scales_give_the_same_normalised_advantages():
    """A stream of rollouts at a reward scale of 1 (ranges >= 1, so the floor stays out) and the same stream
    x1000: after each update the normalised advantages are the same numbers."""
    rng = np.random.default_rng(3)
    batches = [(rng.uniform(0, 5 + 3 * k, size=(10, 4)), rng.normal(size=(10, 4))) for k in range(5)]
    small, large = np.zeros(3), np.zeros(3)
    for k, (returns, advantages) in enumerate(batches):
        small = small + norm.moments_update(small, norm.return_targets(returns))
        large = large + norm.moments_update(large, norm.return_targets(1000.0 * returns))
        assert norm.return_scale(small) > 1.0
        np.testing.assert_allclose(norm.normalized_advantages(1000.0 * advantages, large),
                                   norm.normalized_advantages(advantages, small), rtol=1e-9)
    # And by hand for the first: advantages / (95th - 5th percentile of the first returns).
    first_returns, first_advantages = batches[0]
    low, high = np.percentile(first_returns, [5, 95])
    one = np.zeros(3) + norm.moments_update(np.zeros(3), norm.return_targets(first_returns))
    np.testing.assert_allclose(norm.normalized_advantages(first_advantages, one), first_advantages / (high - low))


def test_updates_from_stale_copies_add_up_as_gradients_do():
    """Each step is linear in the copy's moments: two workers stepping from the same copy move the global
    moments by the sum of their steps, and the debiasing weight counts both updates."""
    start = np.zeros(3)
    a = norm.moments_update(start, norm.return_targets(np.arange(21.0)))
    b = norm.moments_update(start, norm.return_targets(np.arange(0.0, 41.0, 2.0)))
    both = start + a + b
    assert both[0] == pytest.approx(0.02)
    assert norm.return_scale(both) == pytest.approx((18 + 36) / 2)


# ---- game variables: running standardisation ----------------------------------------------------------------
def test_variable_moments_by_hand_and_in_the_network():
    # HEALTH 100 and 50 (mean 75, deviation 25); AMMO 0 and 0 (never moves).
    variables = np.array([[100.0, 0.0], [50.0, 0.0]])
    moments = np.zeros(norm.variable_moments_size(2))
    np.testing.assert_allclose(norm.variable_targets(variables), [1.0, 75.0, 0.0, 6250.0, 0.0])
    moments = moments + norm.moments_update(moments, norm.variable_targets(variables))
    mean, std = norm.variable_mean_std(moments)
    np.testing.assert_allclose(mean, [75.0, 0.0])
    np.testing.assert_allclose(std, [np.sqrt(625.0 + 1e-4), 0.01])
    seen = norm.normalized_variables(np.array([[100.0, 0.0], [0.0, 1.0]]), moments)
    np.testing.assert_allclose(seen, [[25 / np.sqrt(625.0001), 0.0], [-3.0 / np.sqrt(1.00000016), 5.0]], rtol=1e-6)
    in_graph = normalized_variables_tensor(tf.constant([[100.0, 0.0], [0.0, 1.0]]), tf.constant(moments, tf.float32))
    np.testing.assert_allclose(in_graph.numpy(), seen, rtol=1e-5)
    # Before any update: the raw values, clipped.
    np.testing.assert_allclose(norm.normalized_variables(np.array([[100.0, 0.5]]), np.zeros(5)), [[5.0, 0.5]])


def test_the_global_learner_adds_each_rollouts_statistics_and_optimises_the_rest(tmp_path):
    config = tiny_config(tmp_path)
    net = build_actor_critic(config, 3, SHAPE, "global")
    assert len(net.statistics) == 2 and len(net.learned_variables) == len(net.trainable_variables) - 2
    learner = GlobalLearner(config, net)
    rollout = variable_rollout()
    step = GradientStep(net, config)
    before = [layer.moments.numpy().copy() for layer in net.statistics]
    expected = step.statistics_updates(rollout, learning_targets(config, rollout)[0])
    gradient = step(rollout)
    assert gradient.finite
    # Processing the list again, as a Ray parameter server does with what it receives, changes nothing but rounding:
    # a gradient clipped to norm 0.5 can measure 0.5 plus an ulp the second time, and be scaled by 1 - 6e-8.
    received = [tf.convert_to_tensor(g) for g in gradient.grads]
    for mode, bound in (("clip", config.clip_norm), ("normalize", config.normalize_norm)):
        reprocessed, _ = process_gradients(received, mode, bound)
        slots = net.statistics_slots()
        for slot in slots:
            np.testing.assert_allclose(reprocessed[slot].numpy(), received[slot].numpy(), rtol=1e-6, atol=0)
    learner.apply(process_gradients(received, "clip", config.clip_norm)[0], True)
    for layer, old, update in zip(net.statistics, before, expected):
        np.testing.assert_allclose(layer.moments.numpy(), old + update, rtol=1e-5, atol=1e-7)
    variables = rollout.observations["variables"].reshape(-1, 2)
    mean, _ = norm.variable_mean_std(net.variable_moments.moments.numpy())
    np.testing.assert_allclose(mean, variables.mean(axis=0), rtol=1e-5)
    assert net.variable_moments.moments.numpy()[0] == pytest.approx(1 - DECAY)


def test_a_gradient_is_the_same_at_reward_scales_1_and_1000(tmp_path):
    """Two copies of one network whose return statistics differ by x1000, fed the same rollout with rewards
    and values x1000: the value outputs differ by x1000 and the gradients (policy and critic) are the same."""
    config = tiny_config(tmp_path, game_variables=[], normalize_variables=False)
    small = build_actor_critic(config, 3, SHAPE, "small")
    large = build_actor_critic(config, 3, SHAPE, "large")
    for a, b in zip(small.trainable_variables, large.trainable_variables):
        b.assign(a)
    small.return_moments.moments.assign([0.01, 0.02, 0.1])  # debiased low 2, high 10: S = 8
    large.return_moments.moments.assign([0.01, 20.0, 100.0])  # S = 8000
    observations = np.random.default_rng(1).integers(0, 256, (2, *SHAPE)).astype(np.uint8)
    out_small = small.step(observations, small.initial_state(2), tf.ones([2]))
    out_large = large.step(observations, large.initial_state(2), tf.ones([2]))
    np.testing.assert_allclose(out_large.values.numpy(), 1000 * out_small.values.numpy(), rtol=1e-5)

    rollout = variable_rollout()
    pixels = rollout._replace(observations=np.ascontiguousarray(rollout.observations["frame"]))
    scaled = pixels._replace(rewards=1000 * pixels.rewards, values=1000 * pixels.values,
                             bootstrap_values=1000 * pixels.bootstrap_values)
    g_small, g_large = GradientStep(small, config)(pixels), GradientStep(large, config)(scaled)
    assert g_small.policy_loss == pytest.approx(g_large.policy_loss, rel=1e-4)
    assert g_small.value_loss == pytest.approx(g_large.value_loss, rel=1e-4)
    slots = set(small.statistics_slots())
    for i, (a, b) in enumerate(zip(g_small.grads, g_large.grads)):
        if i in slots:  # the statistics' own steps: x1000 for the percentiles, the same for the weight
            np.testing.assert_allclose(b.numpy()[1:], 1000 * a.numpy()[1:], rtol=1e-4)
        else:
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-3, atol=1e-6)


def test_statistics_are_saved_in_the_checkpoint(tmp_path):
    config = tiny_config(tmp_path)
    parts = build_global(config, spec())
    parts.learner.net.return_moments.moments.assign([0.5, 1.0, 2.0])
    parts.learner.net.variable_moments.moments.assign([0.5, 1.0, 2.0, 3.0, 4.0])
    prefix = parts.save(episodes=0, wall_seconds=1.0)
    restored = build_global(config, spec(), resume_prefix=prefix)
    np.testing.assert_array_equal(restored.learner.net.return_moments.moments.numpy(), [0.5, 1.0, 2.0])
    np.testing.assert_array_equal(restored.learner.net.variable_moments.moments.numpy(), [0.5, 1.0, 2.0, 3.0, 4.0])


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


# ---- resolving a scenario as a user's own -------------------------------------------------------------------
def test_no_preset_runs_a_shipped_map_as_a_copy_under_another_name(tmp_path):
    import shutil

    import vizdoom

    shutil.copy(os.path.join(vizdoom.scenarios_path, "defend_the_center.cfg"), tmp_path / "arena.cfg")
    shutil.copy(os.path.join(vizdoom.scenarios_path, "defend_the_center.wad"), tmp_path / "defend_the_center.wad")
    own = resolve_new_run({"scenario": str(tmp_path / "arena.cfg"), "model_dir": str(tmp_path / "m")})
    shipped = resolve_new_run({"scenario": "defend_the_center", "preset": False, "model_dir": str(tmp_path / "m")})
    differ = {f.name for f in dataclasses.fields(TrainConfig) if getattr(own, f.name) != getattr(shipped, f.name)}
    assert differ == {"scenario", "scenario_path", "preset"}
    # Both take scenarios/defaults/doom.toml's values, the ones for a map nobody tuned.
    defaults = own_map_defaults()["train"]
    assert shipped.frame_skip == defaults["frame_skip"] and shipped.reward_scale == defaults["reward_scale"]
    assert shipped.rollout == defaults["rollout"] and shipped.learning_rate == defaults["learning_rate"]
    assert shipped.normalize_returns and shipped.crop == [0.0] * 4
    assert shipped.action_set == defaults["action_set"] == "combined"
    assert shipped.policy_heads == defaults["policy_heads"]
    assert shipped.actions == combined_actions(["TURN_LEFT", "TURN_RIGHT", "ATTACK"]) and len(shipped.actions) == 6
    assert resolve_new_run({"scenario": "defend_the_center", "preset": False, "action_set": "buttons",
                            "policy_heads": "flat"}).actions == [["TURN_LEFT"], ["TURN_RIGHT"], ["ATTACK"]]
    assert shipped.game_variables == [["AMMO2", 1.0], ["HEALTH", 1.0]]
    # Colour, and the defaults' shaping of the variables its .cfg lists (HEALTH; AMMO2 is not in the table).
    assert shipped.color
    assert shipped.reward_shaping == own_map_defaults()["cfg_variable_shaping"] == [["HEALTH", 0.01, 0.0]]
    assert shipped.cfg_variables and shipped.normalize_variables
    with_preset = resolve_new_run({"scenario": "defend_the_center"})
    assert with_preset.game_variables == [["AMMO2", 0.04], ["HEALTH", 0.01]] and not with_preset.normalize_variables
    assert with_preset.preset and not with_preset.cfg_variables and not with_preset.color
    assert not resolve_new_run({"scenario": "defend_the_center", "preset": False, "color": False}).color  # --no-color


def test_the_defaults_shape_the_game_variables_a_cfg_lists(tmp_path, monkeypatch):
    """On the defaults, a map takes doom.toml's cfg_variable_shaping for each game variable its .cfg lists and for
    no other; shaping given in the config, or in a preset (an empty list too), or a preset of a map's own, wins."""
    import shutil

    import vizdoom

    from doom_a3c.run import doom_values, presets as preset_module

    table = {**own_map_defaults(), "cfg_variable_shaping": [["HEALTH", 0.02], ["AMMO0", 0.5], ["KILLCOUNT", 1.0]]}
    monkeypatch.setattr(doom_values, "own_map_defaults", lambda: table)
    monkeypatch.setattr(preset_module, "own_map_defaults", lambda: table)
    run = lambda **given: resolve_new_run({"model_dir": str(tmp_path / "m"), **given})  # noqa: E731
    # defend_the_center lists AMMO2 and HEALTH; deadly_corridor and my_way_home, presets based on the defaults, list
    # HEALTH and nothing.
    assert run(scenario="defend_the_center", preset=False).reward_shaping == [["HEALTH", 0.02]]
    assert run(scenario="deadly_corridor").reward_shaping == [["HEALTH", 0.02]]
    assert run(scenario="my_way_home").reward_shaping == []
    assert run(scenario="defend_the_center", preset=False,
               reward_shaping=[["ARMOR", 3.0]]).reward_shaping == [["ARMOR", 3.0]]
    own_preset = preset_module.load_preset("defend_the_center").get("reward_shaping", [])
    assert run(scenario="defend_the_center").reward_shaping == own_preset
    # A preset on the defaults that turns shaping off.
    monkeypatch.setattr(preset_module, "PRESETS_DIR", tmp_path)
    (tmp_path / "arena.toml").write_text('based_on = "defaults"\nreward_shaping = []\n')
    shutil.copy(os.path.join(vizdoom.scenarios_path, "defend_the_center.cfg"), tmp_path / "arena.cfg")
    shutil.copy(os.path.join(vizdoom.scenarios_path, "defend_the_center.wad"), tmp_path / "defend_the_center.wad")
    assert run(scenario=str(tmp_path / "arena.cfg")).reward_shaping == []
    (tmp_path / "arena.toml").unlink()
    assert run(scenario=str(tmp_path / "arena.cfg")).reward_shaping == [["HEALTH", 0.02]]


def test_the_new_flags_on_the_command_line():
    parser = build_parser("test")
    assert given_values(parser.parse_args(["--no-preset"])) == {"preset": False}
    assert given_values(parser.parse_args(["--action-set", "combined", "--no-cfg-variables", "--normalize-returns"])) \
        == {"action_set": "combined", "cfg_variables": False, "normalize_returns": True}
    off = resolve_new_run({"scenario": "defend_the_center", "preset": False, "cfg_variables": False})
    assert off.game_variables == [] and not off.normalize_variables
    with pytest.raises(ConfigError, match="for ViZDoom scenarios only"):
        resolve_new_run({"scenario": "CartPole-v1", "action_set": "combined"})


def test_a_preset_cannot_turn_itself_off(tmp_path, monkeypatch):
    from doom_a3c.run import presets as preset_module

    monkeypatch.setattr(preset_module, "load_preset", lambda name: {"train": {"preset": False}})
    with pytest.raises(ConfigError, match="unknown options \\['preset'\\]"):
        resolve_new_run({"scenario": "basic"})


def test_an_old_config_keeps_what_it_ran_and_resume_cannot_change_it():
    old = resolve_new_run({"scenario": "defend_the_center"}).to_dict()
    for key in ("preset", "action_set", "cfg_variables", "normalize_variables", "normalize_returns"):
        del old[key]
    upgraded = upgrade_saved_config(old, "old")
    assert (upgraded.preset, upgraded.action_set, upgraded.cfg_variables, upgraded.normalize_variables,
            upgraded.normalize_returns) == (True, "preset", False, False, False)
    with pytest.raises(ConfigError, match="cannot change --normalize-returns"):
        resolve_resumed_run(upgraded, {"normalize_returns": True}, "old")
    assert resolve_resumed_run(upgraded, {"normalize_returns": False}, "old") == upgraded


def test_a_grey_unshaped_run_from_before_the_colour_default_resumes_as_it_ran():
    """A no-preset run saved before the colour and shaping defaults (grey, no shaping) keeps both on resume; --color
    cannot change a trained network's input."""
    old = resolve_new_run({"scenario": "defend_the_center", "preset": False}).to_dict()
    old.update(color=False, reward_shaping=[])
    upgraded = upgrade_saved_config(old, "old")
    assert not upgraded.color and upgraded.reward_shaping == []
    resumed = resolve_resumed_run(upgraded, {}, "old")
    assert not resumed.color and resumed.reward_shaping == []
    with pytest.raises(ConfigError, match="cannot change --color"):
        resolve_resumed_run(upgraded, {"color": True}, "old")


def test_a_run_saved_with_the_symmetric_health_shaping_resumes_with_it():
    """The defaults shaped HEALTH both ways (0.01 a point) before the twenty-seventh session and on gains alone
    since: a run saved with the old pair keeps it on resume, and a new run takes the triple."""
    old = resolve_new_run({"scenario": "defend_the_center", "preset": False}).to_dict()
    assert old["reward_shaping"] == [["HEALTH", 0.01, 0.0]]
    old["reward_shaping"] = [["HEALTH", 0.01]]
    resumed = resolve_resumed_run(upgrade_saved_config(old, "old"), {}, "old")
    assert resumed.reward_shaping == [["HEALTH", 0.01]]


# ---- end to end: a tiny --no-preset run saves every derived value, plays, exports and resumes ---------------
TINY = {"frame_size": 20, "hidden_size": 16, "lstm_size": 8, "workers": 1, "envs_per_worker": 2, "env_threads": 1,
        "gif_every": 0, "log_every_seconds": 60.0, "evaluate": False}


@pytest.mark.slow
def test_a_no_preset_run_saves_every_derived_value_and_plays_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini into the working directory
    model = tmp_path / "model"
    flags = {"scenario": "defend_the_center", "preset": False, "action_set": "combined", "normalize_returns": True,
             "model_dir": str(model), "frames_dir": str(tmp_path / "frames"), "max_steps": 300, **TINY}
    assert train_from_flags(flags) == 0
    saved = json.loads((model / "config.json").read_text())
    expected = resolve_new_run({k: v for k, v in flags.items()})
    assert saved == json.loads(expected.to_json())  # every derived value, as resolved
    assert saved["preset"] is False and saved["action_set"] == "combined" and len(saved["actions"]) == 6
    assert saved["game_variables"] == [["AMMO2", 1.0], ["HEALTH", 1.0]] and saved["normalize_variables"]
    assert saved["crop"] == [0.0] * 4 and saved["normalize_returns"]
    assert saved["reward_shaping"] == [["HEALTH", 0.01, 0.0]]  # the defaults' shaping: health gained only
    assert saved["color"] is True  # the defaults' colour, saved concretely

    # The statistics were learned, shared into the checkpoint, and play.py's network holds the same.
    agent = load_agent(str(model))
    trained = tf.train.load_checkpoint(read_checkpoint(str(model / "last.ckpt")).prefix)
    names = [name for name, _ in tf.train.list_variables(str(model / "last.ckpt")) if "moments" in name
             and "optimizer" not in name]
    assert len(names) == 3 and saved["entropy_target"] > 0  # the entropy weight's multiplier is the third
    for name in names:
        layer = next(layer for layer in agent.net.statistics if layer.name in name)
        np.testing.assert_array_equal(layer.moments.numpy(), trained.get_tensor(name))
        if layer is not agent.net.entropy_multiplier:  # that one stays 0 while the entropy is above its target
            assert layer.moments.numpy()[0] > 0
    results = play(str(model), str(tmp_path / "play"), episodes=1)
    assert len(results) == 1 and results[0].length > 0

    # The SavedModel takes the raw variables and standardises them as the agent does.
    from doom_a3c.run.export import export_policy

    exported = export_policy(agent, str(tmp_path / "export"))
    loaded = tf.saved_model.load(exported.saved_model)
    observation, expected_probabilities = first_observation_and_policy(agent)
    state = np.zeros((1, agent.net.state_size), np.float32)
    out = loaded.step(observation=observation["frame"][None], game_variables=observation["variables"][None],
                      state_h=state, state_c=state, episode_start=np.ones([1], np.float32))
    np.testing.assert_allclose(out["probabilities"].numpy()[0], expected_probabilities, rtol=1e-5, atol=1e-6)

    # Resumed, the statistics continue from the checkpoint's.
    before = agent.net.return_moments.moments.numpy()[0]
    assert train_from_flags({**flags, "resume": True, "max_steps": 600}) == 0
    resumed = load_agent(str(model))
    assert resumed.net.return_moments.moments.numpy()[0] > before


@pytest.mark.slow
def test_three_modes_share_the_statistics_alike(tmp_path, monkeypatch):
    """With --normalize-returns, thread A3C, GA3C's trainer and the Ray parameter server with a pushing worker
    make the same global weights and the same return statistics from the same rollouts
    (tests/modes/test_learning_core.py's check, with the statistics riding in the gradient list)."""
    import queue

    from doom_a3c.envs.batch import EnvBatch
    from doom_a3c.modes.a3c import a3c_workers
    from doom_a3c.modes.build import ThreadRun
    from doom_a3c.modes.ga3c import RolloutTrainer, TrainingItem
    from doom_a3c.modes.ray import worker as ray_worker
    from doom_a3c.modes.ray.parameter_server import ParameterServer
    from doom_a3c.modes.ray.worker import PushingWorker
    from doom_a3c.runtime.state import RunState

    from support import StillEnv, fixed_rollouts, small_config, spec as still_spec

    def config(name):
        return small_config(tmp_path / name, normalize_returns=True)

    rollouts = [r._replace(rewards=100 * r.rewards) for r in fixed_rollouts(3, config("x").lstm_size)]
    initial = build_global(config("initial"), still_spec()).learner.weights()

    def start_from_initial(learner):
        for variable, value in zip(learner.net.trainable_variables, initial):
            variable.assign(value)

    run = RunState()
    parts = build_global(config("a3c"), still_spec(), counters=run.counters)
    start_from_initial(parts.learner)
    worker = a3c_workers(ThreadRun(config("a3c"), [EnvBatch([StillEnv() for _ in range(GAMES)])], still_spec(),
                                   parts, run))[0]
    worker.sync()
    for rollout in rollouts:
        assert worker.learn(rollout).applied

    ga3c_parts = build_global(config("ga3c"), still_spec(), counters=RunState().counters)
    start_from_initial(ga3c_parts.learner)
    trainer = RolloutTrainer(0, ga3c_parts.learner, GradientStep(ga3c_parts.learner.net, config("ga3c")),
                             RunState(), queue.Queue(), 1)
    for rollout in rollouts:
        assert trainer.train([TrainingItem(rollout, 0.0)]).applied

    server = ParameterServer(config("ray").to_json(), configure_threads=False)
    assert server.build(still_spec()) is None
    start_from_initial(server.parts.learner)
    monkeypatch.setattr(ray_worker, "worker_games", lambda *args, **kwargs: EnvBatch([StillEnv()] * GAMES))
    pushing = PushingWorker(0, config("ray"), server.apply)
    pushing.accept(server.pull())
    for rollout in rollouts:
        assert pushing.learn(rollout, []).applied

    moments = [p.learner.net.return_moments.moments.numpy() for p in (parts, ga3c_parts, server.parts)]
    assert moments[0][0] == pytest.approx(1 - DECAY ** 3) and norm.return_scale(moments[0]) > 1.0
    for other in moments[1:]:
        np.testing.assert_allclose(other, moments[0], rtol=1e-5)
    for a, g, r in zip(parts.learner.weights(), ga3c_parts.learner.weights(), server.weights()):
        np.testing.assert_allclose(a, g, rtol=0, atol=1e-6)
        np.testing.assert_allclose(a, r, rtol=0, atol=1e-6)
