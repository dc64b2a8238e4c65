"""Doom's additions to the pixels: game variables beside the pixels, reward shaping that only learning sees, and
actions that hold several buttons at once; each from a preset, through the saved config."""
import json

import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo.learner import GradientStep
from doom_a3c.algo.model.actor_critic import build_actor_critic
from doom_a3c.algo.rollout import GameRunner
from doom_a3c.config import TrainConfig
from doom_a3c.envs.batch import EnvBatch
from doom_a3c.envs.interface import Step, network_inputs, observation_dtype
from doom_a3c.errors import ConfigError
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.runtime.state import RunState

FRAME = (20, 20, 1)


class HealthEnv:
    """A fake Doom game with two game variables: health falls by 5 a step from 100, ammo stays 26 (both as
    the config scales them: x0.01, x0.1). The game scores 1 a step; shaping pays 10 a step; 4 steps a game."""

    num_actions = 3
    action_names = ["a", "b", "c"]
    observation_shape = FRAME
    seconds_per_step = 0.1
    record = observation_dtype(FRAME, 2)

    def __init__(self, ident):
        self.ident = ident

    def _observe(self):
        observation = np.zeros((), self.record)
        observation["frame"] = self.ident
        observation["variables"] = [(100 - 5 * self.t) * 0.01, 26 * 0.1]
        return observation

    def reset(self):
        self.t = 0
        return self._observe()

    def step(self, action):
        self.t += 1
        over = self.t >= 4
        return Step(self._observe(), 1.0, over, over, 10.0)

    def screen(self):
        return np.zeros((4, 4, 3), np.uint8)

    def close(self):
        pass


def config_with_variables(tmp_path, **overrides):
    values = dict(scenario="fake", env_kind="doom", scenario_path="fake.cfg", actions=[["a"], ["b"], ["c"]],
                  frame_skip=1, reward_scale=0.5, clip_rewards=False, frame_size=FRAME[0], hidden_size=32,
                  lstm_size=8, envs_per_worker=2, rollout=6, model_dir=str(tmp_path),
                  game_variables=[["HEALTH", 0.01], ["AMMO2", 0.1]])
    return TrainConfig(**{**values, **overrides})


class RecordingPolicy:
    """A Policy that keeps what it was asked to act on, and acts with a real network."""

    def __init__(self, net, games):
        self.net, self.seen = net, []
        self.state = net.initial_state(games)

    def start_state(self):
        return self.state

    def act(self, observations, starts):
        self.seen.append(observations.copy())
        out = self.net.step(network_inputs(observations), self.state, starts)
        self.state = out.state
        return out.logits.numpy(), out.values.numpy()

    def value(self, observations, starts):
        return self.net.step(network_inputs(observations), self.state, starts).values.numpy()


def test_game_variables_reach_the_network_with_their_shape_and_values(tmp_path):
    """A rollout of two fake games keeps frames [T, B, 20, 20, 1] and variables [T, B, 2] side by side, with
    the values the games reported; the network takes both and its gradient reaches the variables' layer."""
    config = config_with_variables(tmp_path)
    net = build_actor_critic(config, 3, FRAME, name="global")
    policy = RecordingPolicy(net, 2)
    runner = GameRunner(0, config, EnvBatch([HealthEnv(1), HealthEnv(2)]), policy, RunState(), seed=0)
    rollout = runner.collect(6)
    inputs = network_inputs(rollout.observations)
    frames, variables = inputs["frame"], inputs["variables"]
    assert sorted(inputs) == ["frame", "variables"]
    assert frames.shape == (6, 2, *FRAME) and frames.dtype == np.uint8
    assert variables.shape == (6, 2, 2) and variables.dtype == np.float32
    # Step t of a 4-step game: health 100 - 5 t (x0.01); the game restarts after step 4.
    expected_health = np.array([100, 95, 90, 85, 100, 95]) * 0.01
    np.testing.assert_allclose(variables[:, 0, 0], expected_health, rtol=1e-6)
    np.testing.assert_allclose(variables[:, :, 1], 2.6, rtol=1e-6)
    assert (frames[:, 1] == 2).all()
    # What the policy was given is what the rollout stored.
    np.testing.assert_array_equal(np.stack(policy.seen)["variables"], rollout.observations["variables"])

    # The variables change the network's output, and the loss's gradient reaches their layer.
    base = net.step(network_inputs(rollout.observations[0]), net.initial_state(2), tf.ones([2]))
    changed = rollout.observations[0].copy()
    changed["variables"] += 1.0
    moved = net.step(network_inputs(changed), net.initial_state(2), tf.ones([2]))
    assert not np.allclose(base.values.numpy(), moved.values.numpy())
    gradient = GradientStep(net, config)(rollout)
    names = [v.path for v in net.trainable_variables]
    assert gradient.finite
    layer = [g for g, name in zip(gradient.grads, names) if "game_vars" in name]
    assert layer and all(np.abs(np.asarray(g)).sum() > 0 for g in layer)


def test_network_joins_variable_features_to_the_pixel_features(tmp_path):
    """encode = [hidden(conv(frames)), game_vars(variables)], 16 + 32 wide here; without game variables the
    network has no such layer (a pixels-only checkpoint keeps its shape)."""
    config = config_with_variables(tmp_path, hidden_size=16)
    net = build_actor_critic(config, 3, FRAME, name="global")
    frames = np.random.default_rng(0).integers(0, 256, (2, *FRAME)).astype(np.uint8)
    variables = np.array([[1.0, 0.5], [0.2, 0.0]], np.float32)
    features = net.encode({"frame": frames, "variables": variables})[0].numpy()
    x = net._inputs(tf.constant(frames))
    for layer in (net.conv1, net.conv2, net.flatten, net.hidden):
        x = layer(x)
    by_hand = np.concatenate([x.numpy(), net.game_vars(tf.constant(variables)).numpy()], axis=1)
    assert features.shape == (2, 16 + 32)
    np.testing.assert_allclose(features, by_hand, rtol=1e-5, atol=1e-6)
    plain = build_actor_critic(config_with_variables(tmp_path, game_variables=[]), 3, FRAME, name="plain")
    assert not any("game_vars" in v.path for v in plain.trainable_variables)


def test_shaping_reaches_learning_but_never_the_reported_score(tmp_path):
    """The fake game scores 1 a step and shaping pays 10: learning sees (1 + 10) x 0.5 each step, the episode
    report (what progress.csv, TensorBoard and play.py show) counts 4 x 1."""
    config = config_with_variables(tmp_path)
    net = build_actor_critic(config, 3, FRAME, name="global")
    run = RunState()
    runner = GameRunner(0, config, EnvBatch([HealthEnv(1)]), RecordingPolicy(net, 1), run, seed=0)
    rollout = runner.collect(6)
    np.testing.assert_allclose(rollout.rewards, 5.5)
    episode = run.episodes.get_nowait()
    assert episode.reward == 4.0 and episode.length == 4


# ---- real ViZDoom games -------------------------------------------------------------------------------
def resolved(scenario, tmp_path, **given):
    return resolve_new_run({"scenario": scenario, "model_dir": str(tmp_path / "models"), **given})


def test_combined_actions_press_every_button_they_list(tmp_path, monkeypatch):
    """An action listing TURN_LEFT + MOVE_FORWARD (health_gathering's buttons) holds both down in one step."""
    from doom_a3c.envs.doom.game import DoomEnvironment

    monkeypatch.chdir(tmp_path)
    config = resolved("health_gathering", tmp_path, policy_heads="flat",
                      actions=[["TURN_LEFT"], ["MOVE_FORWARD"], ["TURN_LEFT", "MOVE_FORWARD"]])
    combo = config.actions.index(["TURN_LEFT", "MOVE_FORWARD"])
    env = DoomEnvironment(config)
    try:
        env.reset()
        env.step(combo)
        buttons = [str(b).split(".")[-1] for b in env._game.get_available_buttons()]
        pressed = {b for b, value in zip(buttons, env._game.get_last_action()) if value}
        assert pressed == {"TURN_LEFT", "MOVE_FORWARD"}
        assert env.action_names[combo] == "TURN_LEFT+MOVE_FORWARD"
    finally:
        env.close()


def test_an_empty_action_presses_nothing_and_is_named_noop(tmp_path, monkeypatch):
    """An action that holds no button waits a step (a way to let a moving target come)."""
    from doom_a3c.envs.doom.game import DoomEnvironment

    monkeypatch.chdir(tmp_path)
    config = resolved("predict_position", tmp_path, actions=[[], ["TURN_LEFT"], ["TURN_RIGHT"], ["ATTACK"]])
    env = DoomEnvironment(config)
    try:
        env.reset()
        env.step(0)
        assert not any(env._game.get_last_action())
        env.step(1)
        assert list(env._game.get_last_action()) == [1.0, 0.0, 0.0]
        assert env.action_names == ["NOOP", "TURN_LEFT", "TURN_RIGHT", "ATTACK"]
    finally:
        env.close()


@pytest.mark.parametrize("shaping, gain, loss", [(["HEALTH", 1.0], 1.0, 1.0), (["HEALTH", 2.0, 0.25], 2.0, 0.25)])
def test_doom_game_variables_and_shaping_come_from_the_engine(shaping, gain, loss, tmp_path, monkeypatch):
    """health_gathering with HEALTH x0.01 for the network and shaping on health: the observation's variable is
    the engine's health / 100, each step's score is the game's own (+1 per tic, frame skip 4), and the shaping
    is exactly the change in health times its weight: 1 a point either way, or 2 a point gained and 0.25 a point
    lost (the acid floor's losses)."""
    from doom_a3c.envs.doom.game import DoomEnvironment

    monkeypatch.chdir(tmp_path)
    config = resolved("health_gathering", tmp_path, frame_skip=4, cfg_variables=False)
    config = config.__class__(**{**config.to_dict(), "game_variables": [["HEALTH", 0.01]],
                                 "reward_shaping": [shaping]})
    env = DoomEnvironment(config)
    try:
        observation = env.reset()
        assert observation["frame"].shape == (config.frame_size, config.frame_size, 1)
        health = env._game.get_game_variable(env._vzd.GameVariable.HEALTH)
        assert observation["variables"][0] == pytest.approx(health / 100)
        shaping_total, seen_change = 0.0, False
        for _ in range(60):
            step = env.step(0)
            if step.game_over:
                break
            now = env._game.get_game_variable(env._vzd.GameVariable.HEALTH)
            assert step.reward == 4.0  # the living reward of 4 tics, unshaped
            assert step.shaping == pytest.approx((now - health) * (gain if now > health else loss))
            assert step.observation["variables"][0] == pytest.approx(now / 100)
            seen_change |= now != health
            shaping_total += step.shaping
            health = now
        assert seen_change  # the acid floor hurt: shaping was not all zeros
        assert shaping_total < 0
    finally:
        env.close()


def test_preset_game_variables_and_shaping_round_trip_through_the_saved_config(tmp_path, monkeypatch):
    """The preset's lists are resolved into the config, kept in strict JSON and read back the same."""
    from doom_a3c.run import presets as preset_module

    monkeypatch.chdir(tmp_path)
    preset = {"game_variables": [["HEALTH", 0.01]], "reward_shaping": [["HEALTH", 1.0], ["AMMO2", 0.5, 0.0]],
              "actions": [["TURN_LEFT"], ["TURN_LEFT", "MOVE_FORWARD"]]}
    monkeypatch.setattr(preset_module, "load_preset", lambda name: preset)
    config = resolved("health_gathering", tmp_path)
    assert (config.game_variables, config.reward_shaping, config.actions) == (
        preset["game_variables"], preset["reward_shaping"], preset["actions"])
    text = config.to_json()
    back = TrainConfig.from_dict(json.loads(text))
    assert back.game_variables == config.game_variables
    assert back.reward_shaping == config.reward_shaping
    assert back.actions == config.actions


@pytest.mark.parametrize("entry, message", [
    ([["HEALTHY", 0.01]], "not a ViZDoom game variable"),
    ([["HEALTH"]], "must be"),
    ([["HEALTH", "much"]], "must be"),
    ([["HEALTH", 0.01, 0.02]], "must be"),  # a gain and a loss weight: only for the shaping
])
def test_a_bad_game_variable_in_a_preset_is_one_clear_error(entry, message, tmp_path, monkeypatch):
    from doom_a3c.run import presets as preset_module

    monkeypatch.chdir(tmp_path)
    preset = {"game_variables": entry}
    monkeypatch.setattr(preset_module, "load_preset", lambda name: preset)
    with pytest.raises(ConfigError, match=message):
        resolved("health_gathering", tmp_path)


@pytest.mark.parametrize("entry", [[["HEALTH", 0.01, 0.0, 1.0]], [["HEALTH", True]], [["HEALTH", 0.01, float("nan")]],
                                   [["HEALTHY", 0.01, 0.0]]])
def test_a_bad_shaping_entry_in_a_preset_is_one_clear_error(entry, tmp_path, monkeypatch):
    from doom_a3c.run import presets as preset_module

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(preset_module, "load_preset", lambda name: {"reward_shaping": entry})
    with pytest.raises(ConfigError, match="must be .*per unit gained, per unit lost|not a ViZDoom game variable"):
        resolved("health_gathering", tmp_path)


def test_exploration_bonus_pays_each_new_cell_once_per_episode(tmp_path, monkeypatch):
    """my_way_home with a bonus of 0.5 per 64-unit cell: a step's shaping is 0.5 exactly when the player's
    (x // 64, y // 64) cell was not visited earlier in the episode (the start cell counts as visited), else 0;
    the score stays the game's own; a new episode starts a new record."""
    from doom_a3c.envs.doom.game import DoomEnvironment

    monkeypatch.chdir(tmp_path)
    config = resolved("my_way_home", tmp_path)
    config = config.__class__(**{**config.to_dict(), "exploration_reward": 0.5, "exploration_cell": 64.0})
    env = DoomEnvironment(config)
    gv = env._vzd.GameVariable
    forward, turn = config.actions.index(["MOVE_FORWARD"]), config.actions.index(["TURN_LEFT", "MOVE_FORWARD"])

    def cell():
        return (int(env._game.get_game_variable(gv.POSITION_X) // 64),
                int(env._game.get_game_variable(gv.POSITION_Y) // 64))

    try:
        for _ in range(2):
            env.reset()
            visited, paid = {cell()}, 0
            for t in range(40):
                step = env.step(forward if t % 5 else turn)
                if step.game_over:
                    break
                here = cell()
                assert step.shaping == (0.5 if here not in visited else 0.0)
                assert step.reward == pytest.approx(-0.0001 * config.frame_skip)  # the game's own, unshaped
                paid += here not in visited
                visited.add(here)
            assert paid >= 2  # it walked into new cells: the bonus was not all zeros
    finally:
        env.close()


@pytest.mark.parametrize("preset, message", [
    ({"exploration_reward": 0.01}, "exploration_cell > 0"),
    ({"exploration_reward": "lots", "exploration_cell": 64}, "must be a number"),
])
def test_a_bad_exploration_bonus_in_a_preset_is_one_clear_error(preset, message, tmp_path, monkeypatch):
    from doom_a3c.run import presets as preset_module

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(preset_module, "load_preset", lambda name: preset)
    with pytest.raises(ConfigError, match=message):
        resolved("my_way_home", tmp_path)


def test_a_color_preset_gives_rgb_observations_to_a_network_that_takes_them(tmp_path, monkeypatch):
    """A preset's `color = true` is resolved into the config (round trip through strict JSON); my_way_home's
    observations are then the RGB screen resized, (42, 42, 3), and the network built for it acts on them."""
    from doom_a3c.envs.doom.game import DoomEnvironment
    from doom_a3c.envs.interface import preprocess_frame, spec_of
    from doom_a3c.modes.build import build_network
    from doom_a3c.run import presets as preset_module

    monkeypatch.chdir(tmp_path)
    preset = {**preset_module.load_preset("my_way_home"), "color": True}
    monkeypatch.setattr(preset_module, "load_preset", lambda name: preset)
    config = resolved("my_way_home", tmp_path, frame_size=42)
    assert config.color and TrainConfig.from_dict(json.loads(config.to_json())).color
    env = DoomEnvironment(config)
    try:
        observation = env.reset()
        assert observation.shape == (42, 42, 3) == env.observation_shape
        assert (observation == preprocess_frame(env.screen(), config.crop, 42, color=True)).all()
        net = build_network(config, spec_of(env), "colour")
        out = net.step(observation[None], net.initial_state(1), tf.ones([1]))
        assert out.logits.shape == (1, env.num_actions)
    finally:
        env.close()
