"""A user's own map on the defaults: --no-preset runs a shipped map as a map nobody tuned, the .cfg's game
variables and shaping resolved from it, older configs resumed as they ran, and a tiny run end to end.
"""

import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo import normalization as norm
from doom_a3c.algo.learner import GradientStep
from doom_a3c.config import TrainConfig, build_parser, given_values
from doom_a3c.envs.doom.action_sets import combined_actions
from doom_a3c.errors import ConfigError
from doom_a3c.modes.build import build_global
from doom_a3c.run.agent import load_agent
from doom_a3c.run.playback import play
from doom_a3c.run.presets import own_map_defaults
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.saved_config import resolve_resumed_run, upgrade_saved_config
from doom_a3c.run.training import train_from_flags
from doom_a3c.runtime.checkpoint import read_checkpoint

from support import GAMES, first_observation_and_policy


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
    assert moments[0][0] == pytest.approx(1 - norm.MOMENTS_DECAY ** 3) and norm.return_scale(moments[0]) > 1.0
    for other in moments[1:]:
        np.testing.assert_allclose(other, moments[0], rtol=1e-5)
    for a, g, r in zip(parts.learner.weights(), ga3c_parts.learner.weights(), server.weights()):
        np.testing.assert_allclose(a, g, rtol=0, atol=1e-6)
        np.testing.assert_allclose(a, r, rtol=0, atol=1e-6)
