"""TrainConfig validation, JSON round trip, flag overrides, and scenario resolution."""
import dataclasses
import json
import math
import os
import shutil

import numpy as np
import pytest

from doom_a3c.config import ConfigError, TrainConfig, build_parser, config_from_args, explicit_fields
from doom_a3c.scenarios import resolve_scenario, shipped_scenario_names, shipped_scenarios_dir


# ---- validation ----------------------------------------------------------------------------------
@pytest.mark.parametrize("field,value,flag", [
    ("workers", -1, "--workers"),
    ("rollout", 0, "--rollout"),
    ("learning_rate", -1e-4, "--learning-rate"),
    ("learning_rate", 0.0, "--learning-rate"),
    ("gamma", 2.0, "--gamma"),
    ("gamma", -0.1, "--gamma"),
    ("gae_lambda", 1.5, "--gae-lambda"),
    ("envs_per_worker", 0, "--envs-per-worker"),
    ("clip_norm", 0.0, "--clip-norm"),
    ("entropy_coef", -0.01, "--entropy-coef"),
    ("max_steps", -5, "--max-steps"),
    ("frame_size", 19, "--frame-size"),
])
def test_bad_values_raise_config_error(field, value, flag):
    """Each bad value raises ConfigError naming the flag."""
    with pytest.raises(ConfigError) as info:
        TrainConfig(**{field: value}).validate()
    assert flag in str(info.value)
    assert str(value) in str(info.value)


def test_nan_learning_rate_rejected():
    """NaN is not > 0."""
    with pytest.raises(ConfigError):
        TrainConfig(learning_rate=float("nan")).validate()


def test_defaults_and_edges_are_valid():
    """Defaults (one worker per core), gamma/lambda 0 and 1 validate and return the config itself."""
    cfg = TrainConfig()
    assert cfg.validate() is cfg
    assert cfg.workers == (os.cpu_count() or 1)
    TrainConfig(workers=1, gamma=0.0, gae_lambda=0.0).validate()
    TrainConfig(gamma=1.0, gae_lambda=1.0).validate()


# ---- JSON ----------------------------------------------------------------------------------------
def test_json_round_trip_all_fields():
    """to_json -> from_dict gives back an equal config."""
    cfg = TrainConfig(scenario="defend_the_center", workers=3, rollout=17, gamma=0.9, learning_rate=3e-4,
                      optimizer="rmsprop", target_reward=12.5, resume=True, max_minutes=1.5)
    back = TrainConfig.from_dict(json.loads(cfg.to_json()))
    assert back == cfg
    assert back.to_json() == cfg.to_json()


def test_json_round_trip_default_nan_target():
    """The default target_reward (NaN) survives the round trip as NaN."""
    back = TrainConfig.from_dict(json.loads(TrainConfig().to_json()))
    assert math.isnan(back.target_reward)
    assert dataclasses.replace(back, target_reward=0.0) == dataclasses.replace(TrainConfig(), target_reward=0.0)


def test_from_dict_ignores_unknown_keys():
    """A config.json written by another version with extra keys still loads."""
    data = json.loads(TrainConfig(rollout=9).to_json())
    data["removed_option"] = 1
    assert TrainConfig.from_dict(data).rollout == 9


# ---- command line --------------------------------------------------------------------------------
def test_parser_defaults_match_dataclass():
    """With no flags, config_from_args gives the dataclass defaults and no explicit fields."""
    args = build_parser("t").parse_args([])
    assert explicit_fields(args) == set()
    assert config_from_args(args).to_json() == TrainConfig().to_json()


def test_explicit_flags_override_saved_config():
    """Only the flags given override a base config, even when equal to the default."""
    base = TrainConfig(scenario="defend_the_center", rollout=20, gamma=0.9, workers=3, lstm_size=128)
    args = build_parser("t").parse_args(["--rollout", "30", "--workers", "5", "--resume", "--learning-rate", "0.001"])
    cfg = config_from_args(args, base)
    assert explicit_fields(args) == {"rollout", "workers", "resume", "learning_rate"}
    assert cfg.rollout == 30  # == the default, but given explicitly: must win over the saved 20
    assert cfg.workers == 5
    assert cfg.resume is True
    assert cfg.learning_rate == 0.001
    assert cfg.gamma == 0.9 and cfg.lstm_size == 128 and cfg.scenario == "defend_the_center"


def test_parser_types():
    """Flags are converted to the field types."""
    args = build_parser("t").parse_args(["--gamma", "0.5", "--max-steps", "10", "--scenario", "basic"])
    cfg = config_from_args(args)
    assert cfg.gamma == 0.5 and isinstance(cfg.gamma, float)
    assert cfg.max_steps == 10 and isinstance(cfg.max_steps, int)


def test_parser_error_is_one_line(capsys):
    """argparse errors exit 2 with one 'error:' line, no usage block."""
    with pytest.raises(SystemExit) as info:
        build_parser("t").parse_args(["--workers", "many"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")


# ---- scenarios -----------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["basic", "basic.wad", "basic.cfg"])
def test_shipped_scenario_spellings_resolve_alike(value):
    """basic, basic.wad and basic.cfg all mean the shipped basic scenario with its preset."""
    s = resolve_scenario(value)
    assert s.name == "basic"
    assert os.path.samefile(s.cfg_path, os.path.join(shipped_scenarios_dir(), "basic.cfg"))
    assert s.actions == [["MOVE_LEFT"], ["MOVE_RIGHT"], ["ATTACK"]]
    assert s.frame_skip == 4 and s.reward_scale == 0.01 and s.target_reward == 80.0
    assert len(s.crop) == 4 and all(0 <= c < 0.5 for c in s.crop) and any(s.crop)


def test_shipped_names_exclude_multiplayer():
    """The valid list has the single-player scenarios and no multi* ones."""
    names = shipped_scenario_names()
    assert {"basic", "defend_the_center", "deadly_corridor", "health_gathering"} <= set(names)
    assert not [n for n in names if n.startswith("multi")]


def test_unknown_scenario_lists_valid_names():
    """An unknown name raises ConfigError whose message lists the valid ones."""
    with pytest.raises(ConfigError) as info:
        resolve_scenario("nosuchmap")
    message = str(info.value)
    assert "nosuchmap" in message
    for name in ("basic", "defend_the_center", "deadly_corridor"):
        assert name in message


@pytest.fixture
def own_scenario(tmp_path, monkeypatch):
    """The shipped basic.cfg/.wad copied to tmp_path as the user's own scenario 'mylevel'."""
    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini into the working directory
    folder = tmp_path / "maps"
    folder.mkdir()
    shutil.copy(os.path.join(shipped_scenarios_dir(), "basic.cfg"), folder / "mylevel.cfg")
    shutil.copy(os.path.join(shipped_scenarios_dir(), "basic.wad"), folder / "basic.wad")
    return folder


def test_users_own_cfg_path(own_scenario):
    """A path to a user's .cfg resolves to that file, without a preset: one action per button."""
    s = resolve_scenario(str(own_scenario / "mylevel.cfg"))
    assert s.name == "mylevel"
    assert s.cfg_path == str(own_scenario / "mylevel.cfg")
    assert s.actions is None and s.frame_skip == 4
    assert tuple(s.crop) == (0.0, 0.0, 0.0, 0.0)  # no preset: no crop


def test_users_own_cfg_runs_in_vizdoom(own_scenario):
    """The user's cfg starts a game: 3 actions, 84x84 observations, a full-size RGB screen."""
    from doom_a3c.envs import DoomEnvironment

    env = DoomEnvironment(resolve_scenario(str(own_scenario / "mylevel.cfg")), frame_skip=4)
    try:
        assert env.num_actions == 3 and env.action_names == ["MOVE_LEFT", "MOVE_RIGHT", "ATTACK"]
        obs = env.reset()
        assert obs.shape == (84, 84, 1) and obs.dtype.name == "uint8"
        assert env.screen().shape == (120, 160, 3)
        result = env.step(0)
        assert result.reward == -4.0  # living reward -1 per tic, 4 tics per step
    finally:
        env.close()


def test_users_copy_of_basic_cfg_by_path(own_scenario, tmp_path):
    """A user's file named basic.cfg given as a path is used (not the shipped one), with the basic preset."""
    shutil.copy(own_scenario / "mylevel.cfg", own_scenario / "basic.cfg")
    s = resolve_scenario(str(own_scenario / "basic.cfg"))
    assert s.cfg_path == str(own_scenario / "basic.cfg")
    assert s.name == "basic" and len(s.actions) == 3


def test_missing_user_path_is_an_error_not_the_shipped_scenario(tmp_path):
    """A path to a .cfg that does not exist must not silently fall back to the shipped file of that name."""
    missing = str(tmp_path / "my_maps" / "basic.cfg")
    with pytest.raises(ConfigError):
        resolve_scenario(missing)


def test_users_bare_wad_gets_a_working_cfg(tmp_path, monkeypatch):
    """A .wad without a .cfg beside it gets a generated cfg that ViZDoom can start."""
    from doom_a3c.envs import DoomEnvironment

    monkeypatch.chdir(tmp_path)
    (tmp_path / "wads").mkdir()
    shutil.copy(os.path.join(shipped_scenarios_dir(), "basic.wad"), tmp_path / "wads" / "mine.wad")
    s = resolve_scenario(str(tmp_path / "wads" / "mine.wad"), cache_dir=str(tmp_path / "cache"))
    assert s.name == "mine" and os.path.exists(s.cfg_path)
    env = DoomEnvironment(s, frame_skip=4)
    try:
        assert env.num_actions == 7
        assert env.reset().shape == (84, 84, 1)
    finally:
        env.close()


def test_environment_observation_uses_the_preset_crop(tmp_path, monkeypatch):
    """basic's observation is its full-size screen preprocessed with the preset crop; screen() stays uncropped."""
    from doom_a3c.envs import DoomEnvironment, preprocess_frame

    monkeypatch.chdir(tmp_path)
    scenario = resolve_scenario("basic")
    env = DoomEnvironment(scenario, frame_skip=4)
    try:
        obs = env.reset()
        screen = env.screen()
        assert screen.shape == (120, 160, 3)
        assert (obs == preprocess_frame(screen, scenario.crop)).all()
        assert not (obs == preprocess_frame(screen)).all()
        result = env.step(2)
        assert (result.observation == preprocess_frame(env.screen(), scenario.crop)).all()
    finally:
        env.close()


def test_frame_size_sets_the_doom_observation_and_its_terminal_frame(tmp_path, monkeypatch):
    """--frame-size 42: every observation, the zero frame after the end included, is (42, 42, 1), and it is the
    same crop of the same screen as at 84, only resized."""
    import cv2

    from doom_a3c.envs import DoomEnvironment, preprocess_frame

    monkeypatch.chdir(tmp_path)
    scenario = resolve_scenario("basic")
    env = DoomEnvironment(scenario, frame_skip=4, frame_size=42)
    try:
        assert env.observation_shape == (42, 42, 1)
        obs = env.reset()
        assert obs.shape == (42, 42, 1) and obs.dtype == np.uint8
        big = preprocess_frame(env.screen(), scenario.crop)  # 84x84
        halved = cv2.resize(big[:, :, 0], (42, 42), interpolation=cv2.INTER_AREA)
        assert np.abs(obs[:, :, 0].astype(int) - halved.astype(int)).max() <= 2  # two resizes round differently
        result = env.step(0)
        while not result.done:
            result = env.step(0)  # basic ends after 300 tics
        assert result.observation.shape == (42, 42, 1)
    finally:
        env.close()


@pytest.mark.parametrize("name", shipped_scenario_names())
def test_every_shipped_scenario_starts_and_steps(name, tmp_path, monkeypatch):
    """Every single-player scenario ViZDoom ships runs with its preset (or its cfg): actions, 84x84 frames, rewards."""
    from doom_a3c.envs import DoomEnvironment

    monkeypatch.chdir(tmp_path)
    scenario = resolve_scenario(name, cache_dir=str(tmp_path))
    env = DoomEnvironment(scenario, frame_skip=scenario.frame_skip)
    try:
        assert env.num_actions >= 2, env.action_names
        assert env.reset().shape == (84, 84, 1)
        for step in range(2 * env.num_actions):
            result = env.step(step % env.num_actions)
            assert isinstance(result.reward, float)
            if result.done:
                env.reset()
            else:
                assert result.observation.shape == (84, 84, 1) and result.observation.dtype == np.uint8
    finally:
        env.close()
