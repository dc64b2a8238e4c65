"""TrainConfig validation, strict JSON round trip, flag overrides, and scenario resolution."""
import dataclasses
import json
import os
import shutil

import numpy as np
import pytest

from doom_a3c.config import TrainConfig, build_parser, given_values
from doom_a3c.envs.doom.action_sets import combined_actions
from doom_a3c.envs.doom.scenario_files import find_doom_scenario, shipped_scenario_names, shipped_scenarios_dir
from doom_a3c.errors import ConfigError
from doom_a3c.run.presets import own_map_defaults
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.saved_config import resolve_resumed_run


def strict_json(text):
    """json.loads that refuses NaN and Infinity, as jq and JavaScript do."""
    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


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
    ("frame_skip", 0, "--frame-skip"),  # 0 no longer means "the preset's" (None does)
    ("reward_scale", 0.0, "--reward-scale"),
    ("reward_scale", -0.5, "--reward-scale"),
    ("frame_background", 256.0, "--frame-background"),
    ("frame_background", -1.0, "--frame-background"),
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
    assert cfg.frame_skip is None and cfg.reward_scale is None and cfg.clip_rewards is None  # the preset's
    assert cfg.target_reward is None and cfg.lstm is True


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_target_reward_rejected(value):
    """A target that can never be reached (NaN) or written as strict JSON (inf) is a user error."""
    with pytest.raises(ConfigError, match="--target-reward"):
        TrainConfig(target_reward=value).validate()


# ---- JSON ----------------------------------------------------------------------------------------
def test_json_round_trip_all_fields():
    """to_json -> from_dict gives back an equal config, the resolved environment fields included."""
    cfg = TrainConfig(scenario="defend_the_center", workers=3, rollout=17, gamma=0.9, learning_rate=3e-4,
                      optimizer="rmsprop", target_reward=12.5, resume=True, max_minutes=1.5, frame_skip=4,
                      reward_scale=1.0, clip_rewards=False, env_kind="doom", scenario_path="/x/defend_the_center.cfg",
                      actions=[["TURN_LEFT"], ["TURN_RIGHT"], ["ATTACK"]], crop=[0.0, 0.0, 0.0, 0.0],
                      env_processes=2, ale_vector=False, game_timeout=12.5)
    back = TrainConfig.from_dict(strict_json(cfg.to_json()))
    assert back == cfg
    assert back.to_json() == cfg.to_json()
    assert back.is_resolved() and not TrainConfig().is_resolved()


def test_json_of_the_defaults_is_strict():
    """The default target_reward is None (was NaN): config.json parses with a strict reader and round-trips."""
    text = TrainConfig().to_json()
    data = strict_json(text)
    assert data["target_reward"] is None and data["frame_skip"] is None and data["clip_rewards"] is None
    assert TrainConfig.from_dict(data) == TrainConfig()


def test_to_json_refuses_nan():
    """A NaN that slipped past validation never reaches config.json as invalid JSON."""
    with pytest.raises(ValueError):
        TrainConfig(target_reward=float("nan")).to_json()


def test_from_dict_ignores_unknown_keys():
    """A config.json written by another version with extra keys still loads."""
    data = json.loads(TrainConfig(rollout=9).to_json())
    data["removed_option"] = 1
    assert TrainConfig.from_dict(data).rollout == 9


# ---- command line --------------------------------------------------------------------------------
def test_parser_defaults_match_dataclass():
    """With no flags nothing is given, and the config of no flags is the dataclass defaults."""
    args = build_parser("t").parse_args([])
    assert given_values(args) == {}
    assert TrainConfig(**given_values(args)).to_json() == TrainConfig().to_json()


def test_explicit_flags_override_saved_config():
    """On --resume only the flags given override the saved config, even when equal to the default."""
    base = TrainConfig(scenario="defend_the_center", rollout=20, gamma=0.9, workers=3, lstm_size=128)
    args = build_parser("t").parse_args(["--rollout", "30", "--workers", "5", "--resume", "--learning-rate", "0.001"])
    given = given_values(args)
    assert given == {"rollout": 30, "workers": 5, "resume": True, "learning_rate": 0.001}
    cfg = resolve_resumed_run(base, given, "models/last.ckpt")
    assert cfg.rollout == 30  # == the default, but given explicitly: must win over the saved 20
    assert cfg.workers == 5
    assert cfg.resume is True
    assert cfg.learning_rate == 0.001
    assert cfg.gamma == 0.9 and cfg.lstm_size == 128 and cfg.scenario == "defend_the_center"


def test_parser_types():
    """Flags are converted to the field types."""
    args = build_parser("t").parse_args(["--gamma", "0.5", "--max-steps", "10", "--scenario", "basic",
                                         "--frame-skip", "2", "--reward-scale", "0.5"])
    cfg = TrainConfig(**given_values(args))
    assert cfg.gamma == 0.5 and isinstance(cfg.gamma, float)
    assert cfg.max_steps == 10 and isinstance(cfg.max_steps, int)
    assert cfg.frame_skip == 2 and isinstance(cfg.frame_skip, int)
    assert cfg.reward_scale == 0.5 and isinstance(cfg.reward_scale, float)


@pytest.mark.parametrize("field", ["lstm", "clip_rewards", "resume", "separate_networks", "normalize_advantages"])
def test_every_boolean_flag_can_be_given_both_ways(field):
    """--X gives True, --no-X gives False, and neither leaves the field to the preset or default."""
    flag = "--" + field.replace("_", "-")
    parser = build_parser("t")
    assert given_values(parser.parse_args([flag])) == {field: True}
    assert given_values(parser.parse_args(["--no-" + flag[2:]])) == {field: False}
    assert field not in given_values(parser.parse_args([]))


def test_old_flag_spellings_are_one_line_errors(capsys):
    """--clip-rewards takes no value any more (was auto|on|off)."""
    with pytest.raises(SystemExit) as info:
        build_parser("t").parse_args(["--clip-rewards", "on"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")


def test_parser_error_is_one_line(capsys):
    """argparse errors exit 2 with one 'error:' line, no usage block."""
    with pytest.raises(SystemExit) as info:
        build_parser("t").parse_args(["--workers", "many"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")


# ---- scenarios -----------------------------------------------------------------------------------
def resolved(scenario, tmp_path, **given):
    """A fresh run's complete config for `scenario`, as train.py resolves it (caches under tmp_path)."""
    return resolve_new_run({"scenario": scenario, "model_dir": str(tmp_path / "models"), **given})


@pytest.mark.parametrize("value", ["basic", "basic.wad", "basic.cfg"])
def test_shipped_scenario_spellings_resolve_alike(value, tmp_path, monkeypatch):
    """basic, basic.wad and basic.cfg all mean the shipped basic scenario with its preset, resolved into the
    config: the .cfg path, the action set as button lists, frame skip, reward scale, clipping and crop."""
    monkeypatch.chdir(tmp_path)
    name, cfg_path = find_doom_scenario(value, str(tmp_path))
    assert name == "basic"
    assert os.path.samefile(cfg_path, os.path.join(shipped_scenarios_dir(), "basic.cfg"))
    config = resolved(value, tmp_path)
    assert config.is_resolved() and config.env_kind == "doom"
    assert os.path.samefile(config.scenario_path, cfg_path) and os.path.isabs(config.scenario_path)
    assert config.actions == [["MOVE_LEFT"], ["MOVE_RIGHT"], ["ATTACK"]]
    assert config.frame_skip == 4 and config.reward_scale == 0.01 and config.clip_rewards is False
    assert config.target_reward is None  # the preset's target_reward describes the scenario; it stops no run
    assert len(config.crop) == 4 and all(0 <= c < 0.5 for c in config.crop) and any(config.crop)


def test_flags_given_beat_the_preset_environment_values(tmp_path, monkeypatch):
    """--frame-skip, --reward-scale and --clip-rewards over basic's preset values."""
    monkeypatch.chdir(tmp_path)
    config = resolved("basic", tmp_path, frame_skip=2, reward_scale=0.5, clip_rewards=True)
    assert (config.frame_skip, config.reward_scale, config.clip_rewards) == (2, 0.5, True)


@pytest.mark.parametrize("game, background", [("Pong", 87.0), ("Breakout", 0.0)])
def test_frame_norm_background_measures_the_games_background_grey_when_the_run_starts(game, background, tmp_path,
                                                                                      monkeypatch):
    """Pong's field is grey 87 (84% of its first frame), Breakout's black; the measured value is saved with the run,
    and one given with --frame-background is kept as given."""
    monkeypatch.chdir(tmp_path)
    config = resolve_new_run({"scenario": f"ALE/{game}-v5", "frame_norm": "background",
                              "model_dir": str(tmp_path / "m")})
    assert config.frame_background == background
    assert json.loads(config.to_json())["frame_background"] == background
    from doom_a3c.algo.model.actor_critic import build_actor_critic

    saved = TrainConfig.from_dict(json.loads(config.to_json()))  # as play.py and --resume read it back
    assert build_actor_critic(saved, 6, (84, 84, 4), name="global").frame_background == background
    given = resolve_new_run({"scenario": f"ALE/{game}-v5", "frame_norm": "background", "frame_background": 90.0,
                             "model_dir": str(tmp_path / "m")})
    assert given.frame_background == 90.0
    assert resolve_new_run({"scenario": f"ALE/{game}-v5", "frame_norm": "scale",
                            "model_dir": str(tmp_path / "m")}).frame_background is None


@pytest.mark.parametrize("norm", ["background", "pixel_background"])
def test_frame_norm_background_is_for_grey_image_frames_only(norm, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=f"--frame-norm {norm}: for Atari and image envs, not ViZDoom"):
        resolved("basic", tmp_path, frame_norm=norm)
    with pytest.raises(ConfigError, match=f"--frame-norm {norm}: for grey image frames only, not CartPole-v1"):
        resolve_new_run({"scenario": "CartPole-v1", "frame_norm": norm, "model_dir": str(tmp_path / "m")})


def test_frame_norm_pixel_background_measures_each_pixels_background_when_the_run_starts(tmp_path, monkeypatch):
    """Pong: the field's grey 87 is the background of most pixels, and the paddles' columns and the score's box have
    their own; the image is saved with the run in strict JSON and the network a saved config builds subtracts it."""
    monkeypatch.chdir(tmp_path)
    config = resolve_new_run({"scenario": "ALE/Pong-v5", "frame_norm": "pixel_background",
                              "model_dir": str(tmp_path / "m")})
    image = np.array(config.frame_background_image)
    assert image.shape == (84, 84) and config.frame_background is None
    assert 0.6 < np.mean(image == 87) < 1.0 and len(np.unique(image)) > 2
    from doom_a3c.algo.model.actor_critic import build_actor_critic

    saved = TrainConfig.from_dict(json.loads(config.to_json())).validate()  # as play.py and --resume read it back
    net = build_actor_critic(saved, 6, (84, 84, 4), name="global")
    assert np.allclose(net.frame_background_image.numpy(), (image / 255.0)[:, :, None])  # on each of the 4 frames
    assert resolve_new_run({"scenario": "ALE/Pong-v5", "frame_norm": "background",
                            "model_dir": str(tmp_path / "m")}).frame_background_image is None
    with pytest.raises(ConfigError, match="frame_background_image is 84x84 greys, but the frames are 72x72"):
        build_actor_critic(saved, 6, (72, 72, 4), name="global")


@pytest.mark.parametrize("image, needle", [
    ([[0, 1], [2]], "must be rows of equal length"),
    ([], "must be rows of equal length"),
    ([[]], "must be rows of equal length"),
    ([[0, 256]], "must hold whole numbers in .0, 255."),
    ([[0, -1]], "must hold whole numbers in .0, 255."),
    ([[0, 1.5]], "must hold whole numbers in .0, 255."),
    ([[True, 0]], "must hold whole numbers in .0, 255."),
    ("87", "must be a list"),
])
def test_a_bad_background_image_in_a_saved_config_is_refused(image, needle):
    with pytest.raises(ConfigError, match=f"frame_background_image {needle}"):
        TrainConfig(frame_background_image=image).validate()


def test_resume_keeps_the_frames_input_as_the_run_was_trained(tmp_path, monkeypatch):
    """The network learnt on its frames less their background: --resume keeps the image and refuses another
    --frame-norm or --frame-background, one line naming what the run was trained with."""
    monkeypatch.chdir(tmp_path)
    config = resolve_new_run({"scenario": "ALE/Pong-v5", "frame_norm": "pixel_background",
                              "model_dir": str(tmp_path / "m")})
    saved = TrainConfig.from_dict(json.loads(config.to_json()))
    resumed = resolve_resumed_run(saved, {"max_steps": 10, "frame_norm": "pixel_background"}, "m/last.ckpt")
    assert resumed.frame_background_image == config.frame_background_image and resumed.max_steps == 10
    for flag, value in (("frame_norm", "background"), ("frame_background", 87.0)):
        with pytest.raises(ConfigError, match=f"cannot change --{flag.replace('_', '-')} .trained with"):
            resolve_resumed_run(saved, {flag: value}, "m/last.ckpt")


def test_a_resolved_config_with_pixel_background_and_no_image_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = resolve_new_run({"scenario": "ALE/Pong-v5", "frame_norm": "pixel_background",
                              "model_dir": str(tmp_path / "m")})
    with pytest.raises(ConfigError, match="pixel_background needs the frame_background_image"):
        dataclasses.replace(config, frame_background_image=None).validate()


def test_frame_width_is_for_doom_and_image_frames_and_at_least_the_torsos_input(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolved("basic", tmp_path, frame_size=72, frame_width=128).frame_width == 128
    with pytest.raises(ConfigError, match="--frame-width: for ViZDoom scenarios and image envs, not ALE/Pong-v5"):
        resolve_new_run({"scenario": "ALE/Pong-v5", "frame_width": 128, "model_dir": str(tmp_path / "m")})
    with pytest.raises(ConfigError, match="--frame-width must be 0 .square. or at least 20"):
        resolved("basic", tmp_path, frame_width=12)
    with pytest.raises(ConfigError, match="--frame-width"):
        TrainConfig(frame_width=-1).validate()


def test_shipped_names_exclude_multiplayer():
    """The valid list has the single-player scenarios and no multi* ones."""
    names = shipped_scenario_names()
    assert {"basic", "defend_the_center", "deadly_corridor", "health_gathering"} <= set(names)
    assert not [n for n in names if n.startswith("multi")]


def test_unknown_scenario_lists_valid_names(tmp_path):
    """An unknown name raises ConfigError whose message lists the valid ones."""
    for resolve in (lambda: find_doom_scenario("nosuchmap", str(tmp_path)), lambda: resolved("nosuchmap", tmp_path)):
        with pytest.raises(ConfigError) as info:
            resolve()
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


def test_users_own_cfg_path(own_scenario, tmp_path):
    """A path to a user's .cfg resolves to that file, without a preset: scenarios/defaults/doom.toml's values,
    its buttons combined (strafe x attack: 6 actions)."""
    name, cfg_path = find_doom_scenario(str(own_scenario / "mylevel.cfg"), str(tmp_path))
    assert name == "mylevel"
    assert cfg_path == str((own_scenario / "mylevel.cfg").resolve())
    config = resolved(str(own_scenario / "mylevel.cfg"), tmp_path)
    assert config.scenario_path == cfg_path
    assert config.actions == combined_actions(["MOVE_LEFT", "MOVE_RIGHT", "ATTACK"]) and len(config.actions) == 6
    assert config.frame_skip == own_map_defaults()["train"]["frame_skip"]
    assert config.crop == [0.0, 0.0, 0.0, 0.0]  # no preset: no crop
    assert (config.frame_size, config.gamma) == (own_map_defaults()["train"]["frame_size"], TrainConfig.gamma)
    assert config.gamma != resolved("basic", tmp_path).gamma  # basic's [train] table does not apply


def test_users_own_cfg_runs_in_vizdoom(own_scenario, tmp_path):
    """The user's cfg starts a game: 6 combined actions, 42x42 colour observations (the defaults' colour) beside the
    game variable its cfg lists (basic.cfg: AMMO2, unscaled: the network standardises it), a full-size RGB screen."""
    from doom_a3c.envs.doom.game import DoomEnvironment

    config = resolved(str(own_scenario / "mylevel.cfg"), tmp_path)
    assert config.game_variables == [["AMMO2", 1.0]] and config.normalize_variables
    env = DoomEnvironment(config)
    try:
        assert env.num_actions == 6
        obs = env.reset()
        assert obs["frame"].shape == (42, 42, 3) and obs["frame"].dtype.name == "uint8"
        assert list(obs["variables"]) == [50.0]  # basic's pistol starts with 50 bullets
        assert env.screen().shape == (120, 160, 3)
        result = env.step(config.actions.index(["MOVE_LEFT"]))
        assert result.reward == -1.0 * config.frame_skip  # living reward -1 per tic, frame_skip tics per step
    finally:
        env.close()


def test_users_copy_of_basic_cfg_by_path(own_scenario, tmp_path):
    """A user's file named basic.cfg given as a path is used (not the shipped one), with the basic preset."""
    shutil.copy(own_scenario / "mylevel.cfg", own_scenario / "basic.cfg")
    name, cfg_path = find_doom_scenario(str(own_scenario / "basic.cfg"), str(tmp_path))
    assert cfg_path == str((own_scenario / "basic.cfg").resolve()) and name == "basic"
    config = resolved(str(own_scenario / "basic.cfg"), tmp_path)
    assert config.scenario_path == cfg_path
    assert len(config.actions) == 3 and any(config.crop) and config.frame_size == 42  # basic's preset


def test_missing_user_path_is_an_error_not_the_shipped_scenario(tmp_path):
    """A path to a .cfg that does not exist must not silently fall back to the shipped file of that name."""
    missing = str(tmp_path / "my_maps" / "basic.cfg")
    with pytest.raises(ConfigError, match="does not exist"):
        find_doom_scenario(missing, str(tmp_path))
    with pytest.raises(ConfigError, match="does not exist"):
        resolved(missing, tmp_path)


def test_users_bare_wad_gets_a_working_cfg(tmp_path, monkeypatch):
    """A .wad without a .cfg beside it gets a generated cfg that ViZDoom can start."""
    from doom_a3c.envs.doom.game import DoomEnvironment

    monkeypatch.chdir(tmp_path)
    (tmp_path / "wads").mkdir()
    shutil.copy(os.path.join(shipped_scenarios_dir(), "basic.wad"), tmp_path / "wads" / "mine.wad")
    name, cfg_path = find_doom_scenario(str(tmp_path / "wads" / "mine.wad"), str(tmp_path / "cache"))
    assert name == "mine" and os.path.exists(cfg_path)
    assert os.path.dirname(cfg_path) == str((tmp_path / "cache").resolve())
    config = resolved(str(tmp_path / "wads" / "mine.wad"), tmp_path)
    # 7 buttons (walk, strafe, turn, attack), combined as for any map with no preset: 3 x 3 x 2 x 3 actions.
    assert os.path.exists(config.scenario_path) and len(config.actions) == 54
    env = DoomEnvironment(config)
    try:
        assert env.num_actions == 54
        assert env.reset().shape == (42, 42, 3)
    finally:
        env.close()


def test_environment_observation_uses_the_preset_crop(tmp_path, monkeypatch):
    """basic's observation is its full-size screen preprocessed with the preset crop; screen() stays uncropped."""
    from doom_a3c.envs.doom.game import DoomEnvironment
    from doom_a3c.envs.interface import preprocess_frame

    monkeypatch.chdir(tmp_path)
    config = resolved("basic", tmp_path)
    env = DoomEnvironment(config)
    try:
        obs = env.reset()
        screen = env.screen()
        assert screen.shape == (120, 160, 3)
        assert (obs == preprocess_frame(screen, config.crop, config.frame_size)).all()
        assert not (obs == preprocess_frame(screen, size=config.frame_size)).all()
        result = env.step(2)
        assert (result.observation == preprocess_frame(env.screen(), config.crop, config.frame_size)).all()
    finally:
        env.close()


def test_frame_size_sets_the_doom_observation_and_its_terminal_frame(tmp_path, monkeypatch):
    """--frame-size 42: every observation, the zero frame after the end included, is (42, 42, 1), and it is the
    same crop of the same screen as at 84, only resized."""
    import cv2

    from doom_a3c.envs.doom.game import DoomEnvironment
    from doom_a3c.envs.interface import preprocess_frame

    monkeypatch.chdir(tmp_path)
    config = resolved("basic", tmp_path, frame_size=42)
    env = DoomEnvironment(config)
    try:
        assert env.observation_shape == (42, 42, 1)
        obs = env.reset()
        assert obs.shape == (42, 42, 1) and obs.dtype == np.uint8
        big = preprocess_frame(env.screen(), config.crop, 84)
        halved = cv2.resize(big[:, :, 0], (42, 42), interpolation=cv2.INTER_AREA)
        assert np.abs(obs[:, :, 0].astype(int) - halved.astype(int)).max() <= 2  # two resizes round differently
        result = env.step(0)
        while not result.game_over:
            result = env.step(0)  # basic ends after 300 tics
        assert result.observation.shape == (42, 42, 1)
    finally:
        env.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", shipped_scenario_names())
def test_every_shipped_scenario_starts_and_steps(name, tmp_path, monkeypatch):
    """Every single-player scenario ViZDoom ships runs with its preset (or its cfg): actions, square frames of
    --frame-size, rewards."""
    from doom_a3c.envs.doom.game import DoomEnvironment

    monkeypatch.chdir(tmp_path)
    config = resolved(name, tmp_path)
    size, channels = config.frame_size, 3 if config.color else 1  # colour: presets based on the defaults
    env = DoomEnvironment(config)
    try:
        assert env.num_actions >= 2, env.action_names
        assert env.num_actions == len(config.actions)
        # a record where the network takes more than the frame (game variables, basic_audio's sound)
        frame = lambda observation: observation["frame"] if observation.dtype.names else observation  # noqa: E731
        assert frame(env.reset()).shape == (size, size, channels)
        for step in range(2 * env.num_actions):
            result = env.step(step % env.num_actions)
            assert isinstance(result.reward, float)
            if result.game_over:
                env.reset()
            else:
                assert frame(result.observation).shape == (size, size, channels)
                assert frame(result.observation).dtype == np.uint8
                if config.game_variables:
                    assert result.observation["variables"].shape == (len(config.game_variables),)
    finally:
        env.close()


def test_resume_takes_another_spelling_of_the_scenario_but_not_another_file(own_scenario, tmp_path):
    """--resume --scenario basic.cfg of a basic.wad run goes on with the saved config; a user's own basic.cfg
    (the same name, another file) is refused instead of being silently replaced by the saved one."""
    saved = resolved("basic.wad", tmp_path)
    again = resolve_resumed_run(saved, {"scenario": "basic.cfg", "max_steps": 10}, "models/last.ckpt")
    assert again == TrainConfig(**{**saved.to_dict(), "max_steps": 10})  # the saved values, scenario included
    shutil.copy(own_scenario / "mylevel.cfg", own_scenario / "basic.cfg")
    with pytest.raises(ConfigError, match="another file of the same name") as info:
        resolve_resumed_run(saved, {"scenario": str(own_scenario / "basic.cfg")}, "models/last.ckpt")
    assert saved.scenario_path in str(info.value) and str(own_scenario / "basic.cfg") in str(info.value)


def test_a_preset_based_on_another_takes_its_values_and_overrides_its_own(tmp_path, monkeypatch):
    from doom_a3c.run import presets as preset_module

    monkeypatch.setattr(preset_module, "PRESETS_DIR", tmp_path)
    (tmp_path / "base.toml").write_text('frame_skip = 4\ntarget_reward = 80.0\nactions = [["ATTACK"]]\n'
                                        '[train]\nframe_size = 42\nrollout = 10\n')
    (tmp_path / "variant.toml").write_text('based_on = "base"\ntarget_reward = 50.0\n[train]\nrollout = 20\n')
    (tmp_path / "grandchild.toml").write_text('based_on = "variant"\ndescription = "x"\n')
    assert preset_module.load_preset("variant") == {"frame_skip": 4, "target_reward": 50.0, "actions": [["ATTACK"]],
                                                "train": {"frame_size": 42, "rollout": 20}}
    assert preset_module.load_preset("grandchild") == {**preset_module.load_preset("variant"), "description": "x"}
    (tmp_path / "loop_a.toml").write_text('based_on = "loop_b"\n')
    (tmp_path / "loop_b.toml").write_text('based_on = "loop_a"\n')
    with pytest.raises(ConfigError, match="loop_b.toml: based_on = 'loop_a' is a cycle"):
        preset_module.load_preset("loop_a")
    (tmp_path / "orphan.toml").write_text('based_on = "nowhere"\n')
    with pytest.raises(ConfigError, match="orphan.toml: based_on = 'nowhere' is no such preset"):
        preset_module.load_preset("orphan")


def test_a_preset_based_on_the_defaults_keeps_their_values_under_its_own(tmp_path, monkeypatch):
    """`based_on = "defaults"`: scenarios/defaults/doom.toml's [train] under the preset's own values; a top-level
    value (frame_skip) drops the defaults' [train] value of that name, which would otherwise win over it; the
    marker stays, through a variant too."""
    from doom_a3c.run import presets as preset_module

    defaults = preset_module.own_map_defaults()["train"]
    monkeypatch.setattr(preset_module, "PRESETS_DIR", tmp_path)
    monkeypatch.setattr(preset_module, "own_map_defaults", lambda: {"train": dict(defaults)})
    (tmp_path / "maze.toml").write_text('based_on = "defaults"\ntarget_reward = 0.9\nframe_skip = 8\n'
                                        '[train]\nrollout = 32\n')
    (tmp_path / "maze_variant.toml").write_text('based_on = "maze"\ndescription = "x"\n')
    expected_train = {**{k: v for k, v in defaults.items() if k != "frame_skip"}, "rollout": 32}
    assert preset_module.load_preset("maze") == {"based_on": "defaults", "target_reward": 0.9, "frame_skip": 8,
                                             "train": expected_train}
    assert preset_module.load_preset("maze_variant") == {**preset_module.load_preset("maze"), "description": "x"}


@pytest.mark.parametrize("scenario", ["my_way_home", "deadly_corridor"])
def test_a_shrunk_preset_runs_the_defaults_with_its_target(scenario, tmp_path):
    """These presets keep only their facts (measured: the defaults learn each map as well as its tuned preset did):
    each resolves to exactly what --no-preset runs, .cfg game variables included."""
    shipped = resolve_new_run({"scenario": scenario, "model_dir": str(tmp_path)})
    bare = resolve_new_run({"scenario": scenario, "preset": False, "model_dir": str(tmp_path)})
    differ = {f.name for f in dataclasses.fields(TrainConfig) if getattr(shipped, f.name) != getattr(bare, f.name)}
    assert differ == {"preset"}
    assert shipped.rollout == 20 and shipped.action_set == "combined" and shipped.normalize_returns
    assert shipped.cfg_variables


def test_basic_variants_resolve_to_basics_recipe(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    basic = resolve_new_run({"scenario": "basic", "model_dir": str(tmp_path)})
    for name in ("simpler_basic", "learning", "basic_audio", "basic_notifications"):
        variant = resolve_new_run({"scenario": name, "model_dir": str(tmp_path)})
        same = ("frame_size", "envs_per_worker", "rollout", "learning_rate", "gamma", "actions", "crop",
                "bootstrap_timeout")
        assert [getattr(variant, f) for f in same] == [getattr(basic, f) for f in same], name
        assert variant.scenario_path.endswith(f"{name}.cfg")


def test_a_run_names_the_preset_files_it_read(capsys, tmp_path):
    """Regression: an Atari game without a preset of its own named one ("ALE_Breakout-v5.toml") while it ran
    atari.toml; each file named must be one that exists and was read, a game's own over atari.toml."""
    from doom_a3c.run.presets import PRESETS_DIR

    for scenario, files in (("ALE/Breakout-v5", "atari.toml"), ("ALE/Pong-v5", "atari.toml"),
                            ("my_way_home", "my_way_home.toml over defaults/doom.toml"), ("basic", "basic.toml")):
        resolve_new_run({"scenario": scenario, "model_dir": str(tmp_path)})
        assert f"preset for {scenario} ({files}): " in capsys.readouterr().out
        assert all((PRESETS_DIR / name).is_file() for name in files.split(" over "))
