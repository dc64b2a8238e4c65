"""A run's config is resolved once and saved whole: a checkpoint plays and resumes as it was trained after its
preset changes; config.json is strict JSON with every value concrete; a checkpoint of the previous format
loads with a warning; every boolean flag can be set both ways over a preset."""
import dataclasses
import json
import shutil
import tomllib

import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.config import TrainConfig, build_parser, given_values
from doom_a3c.envs.interface import EnvSpec
from doom_a3c.modes.build import build_network
from doom_a3c.run import presets as preset_module
from doom_a3c.run.playback import play
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.saved_config import resolve_resumed_run, upgrade_saved_config
from doom_a3c.run.training import train_from_flags
from doom_a3c.runtime.checkpoint import read_checkpoint, restore

from support import REPO_ROOT

FIXTURE = f"{REPO_ROOT}/tests/fixtures/old_basic_checkpoint"
TINY = {"frame_size": 20, "hidden_size": 16, "lstm_size": 8, "workers": 1, "envs_per_worker": 2, "env_threads": 1,
        "gif_every": 0, "log_every_seconds": 60.0, "evaluate": False}


def strict_json(text: str):
    """json.loads that refuses NaN and Infinity, as jq and JavaScript do."""
    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def presets(tmp_path, monkeypatch):
    """A copy of the presets folder that the test may edit."""
    folder = tmp_path / "presets"
    shutil.copytree(preset_module.PRESETS_DIR, folder)
    monkeypatch.setattr(preset_module, "PRESETS_DIR", folder)
    return folder


def flags(tmp_path, **extra):
    return {"scenario": "basic", "model_dir": str(tmp_path / "model"), "frames_dir": str(tmp_path / "frames"),
            **TINY, **extra}


@pytest.mark.slow
def test_a_checkpoint_plays_and_resumes_as_trained_after_its_preset_changes(tmp_path, presets, capsys):
    assert train_from_flags(flags(tmp_path, max_steps=200)) == 0
    model = tmp_path / "model"
    trained = strict_json((model / "config.json").read_text())
    assert trained["frame_skip"] == 4 and len(trained["actions"]) == 3
    before = [e.reward for e in play(str(model / "last.ckpt"), str(tmp_path / "play1"), episodes=2, seed=3)]

    # The preset now says another frame skip and another action set (2 actions instead of 3).
    preset = (presets / "basic.toml").read_text()
    preset = preset.replace("frame_skip = 4", "frame_skip = 8")
    preset = preset.replace('actions = [["MOVE_LEFT"], ["MOVE_RIGHT"], ["ATTACK"]]',
                            'actions = [["MOVE_LEFT"], ["ATTACK"]]')
    (presets / "basic.toml").write_text(preset)
    assert tomllib.loads(preset)["frame_skip"] == 8 and len(tomllib.loads(preset)["actions"]) == 2

    after = play(str(model / "last.ckpt"), str(tmp_path / "play2"), episodes=2, seed=3)
    assert [e.reward for e in after] == before  # the same games, step for step
    results = strict_json((tmp_path / "play2" / "results.json").read_text())
    assert results["mean_reward"] == pytest.approx(np.mean(before))

    assert train_from_flags(flags(tmp_path, resume=True, max_steps=400)) == 0
    resumed = strict_json((model / "config.json").read_text())
    assert resumed["frame_skip"] == 4 and resumed["actions"] == trained["actions"]
    assert resumed["max_steps"] == 400  # the flag given on the command line does change
    assert read_checkpoint(str(model / "last.ckpt")).counters["env_steps"] >= 400

    # A new run does take the edited preset.
    assert train_from_flags(flags(tmp_path, model_dir=str(tmp_path / "new"), max_steps=50)) == 0
    fresh = strict_json((tmp_path / "new" / "config.json").read_text())
    assert fresh["frame_skip"] == 8 and fresh["actions"] == [["MOVE_LEFT"], ["ATTACK"]]
    assert "warning" not in capsys.readouterr().err


@pytest.mark.slow
def test_config_json_is_strict_json_and_complete(tmp_path, presets):
    assert train_from_flags(flags(tmp_path, max_steps=50)) == 0
    text = (tmp_path / "model" / "config.json").read_text()
    saved = strict_json(text)
    assert saved["target_reward"] is None
    config = TrainConfig.from_dict(saved)
    assert config.is_resolved()
    assert set(saved) == {f.name for f in dataclasses.fields(TrainConfig)}
    assert saved["scenario_path"].endswith("basic.cfg") and saved["clip_rewards"] is False
    assert saved["crop"] == [0.0833, 0.0833, 0.1875, 0.1875] and saved["reward_scale"] == 0.01
    # The checkpoint holds the same config.
    assert read_checkpoint(str(tmp_path / "model" / "last.ckpt")).config == saved


def test_strict_json_refuses_nan():
    with pytest.raises(ValueError):
        strict_json('{"target_reward": NaN}')
    with pytest.raises(ValueError):
        TrainConfig(target_reward=float("nan")).to_json()


@pytest.mark.slow
def test_an_old_format_checkpoint_loads_with_a_warning(tmp_path, presets, capsys):
    """tests/fixtures/old_basic_checkpoint was made by the previous doom_a3c (frame_skip 0, clip_rewards "auto",
    no_lstm, target_reward NaN, no action set); its step outputs were recorded by that code."""
    saved = read_checkpoint(f"{FIXTURE}/last.ckpt")
    assert saved.config["frame_skip"] == 0 and "actions" not in saved.config and "no_lstm" in saved.config
    config = upgrade_saved_config(saved.config, "the fixture")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: the fixture was saved by an older doom_a3c")
    assert config.is_resolved() and config.frame_skip == 4 and config.reward_scale == 0.01
    assert config.actions == [["MOVE_LEFT"], ["MOVE_RIGHT"], ["ATTACK"]] and config.lstm and not config.clip_rewards
    assert config.target_reward is None
    assert config.env_module == "" and config.color is False  # the image envs' fields, as the fixture was trained
    assert not config.evaluate  # trained without evaluation during training: it resumes as trained

    net = build_network(config, EnvSpec(saved.num_actions, (20, 20, 1), 4 / 35, []), "global")
    restore(tf.train.Checkpoint(model=net), f"{FIXTURE}/last.ckpt", partial=True)
    expected = np.load(f"{FIXTURE}/expected_step.npz")
    out = net.step(expected["observations"], net.initial_state(2), tf.ones([2]))
    np.testing.assert_allclose(out.logits.numpy(), expected["logits"], atol=1e-6)
    np.testing.assert_allclose(out.values.numpy(), expected["values"], atol=1e-6)

    results = play(f"{FIXTURE}/last.ckpt", str(tmp_path / "play"), episodes=1)
    assert len(results) == 1 and results[0].length > 0

    # Resumed, it trains on and saves a complete config from then on.
    model = tmp_path / "model"
    model.mkdir()
    for name in ("last.ckpt.index", "last.ckpt.data-00000-of-00001"):
        shutil.copy(f"{FIXTURE}/{name}", model / name)
    assert train_from_flags(flags(tmp_path, resume=True, max_steps=600)) == 0
    upgraded = strict_json((model / "config.json").read_text())
    assert TrainConfig.from_dict(upgraded).is_resolved() and upgraded["lstm_size"] == 8


BOOLEAN_FLAGS = [f.name for f in dataclasses.fields(TrainConfig)
                 if f.metadata.get("flag", True) and f.type in ("bool", "bool | None")]


def test_every_boolean_is_a_flag_both_ways():
    assert set(BOOLEAN_FLAGS) == {"clip_rewards", "normalize_advantages", "lstm", "separate_networks", "resume",
                                  "video_tics", "preset", "cfg_variables", "normalize_variables", "normalize_returns",
                                  "color", "fine_turns",
                                  "evaluate", "eval_greedy", "jit_compile", "ale_vector", "self_play", "bot_curriculum",
                                  "audio"}
    parser = build_parser("test")
    for name in BOOLEAN_FLAGS:
        flag = name.replace("_", "-")
        assert given_values(parser.parse_args([f"--{flag}"])) == {name: True}
        assert given_values(parser.parse_args([f"--no-{flag}"])) == {name: False}


# A preset cannot turn itself off; the .cfg's variables and the half turns are Doom's (tests/run/test_own_maps.py
# and tests/envs/test_fine_turns.py set them both ways); colour is for pixels (tests/envs/test_image_envs.py); the
# vector env for Atari (tests/run/test_ale_vector_choice.py); self-play for multiplayer maps
# (tests/run/test_self_play_training.py); the bot curriculum for a deathmatch with bots (tests/run/test_bots_flag.py);
# sound for ViZDoom's engines (tests/algo/test_audio_torso.py, tests/envs/test_audio.py).
@pytest.mark.parametrize("name", [n for n in BOOLEAN_FLAGS if n not in ("resume", "preset", "cfg_variables",
                                                                        "normalize_variables", "color", "fine_turns",
                                                                        "ale_vector", "self_play", "bot_curriculum",
                                                                        "audio")])
@pytest.mark.parametrize("preset_value", [True, False])
def test_a_flag_turns_a_preset_boolean_either_way(presets, name, preset_value):
    """CartPole's preset sets the boolean; the command line's opposite wins, and without it the preset's holds."""
    table = (presets / "CartPole-v1.toml").read_text()
    table = "\n".join(line for line in table.splitlines() if not line.startswith(f"{name} ="))
    (presets / "CartPole-v1.toml").write_text(table.replace("[train]", f"[train]\n{name} = {str(preset_value).lower()}"))
    parser = build_parser("test")
    flag = name.replace("_", "-")
    opposite = f"--no-{flag}" if preset_value else f"--{flag}"
    overridden = resolve_new_run(given_values(parser.parse_args(["--scenario", "CartPole-v1", opposite])))
    assert getattr(overridden, name) is (not preset_value)
    kept = resolve_new_run(given_values(parser.parse_args(["--scenario", "CartPole-v1"])))
    assert getattr(kept, name) is preset_value


def test_resume_changes_only_the_flags_given(presets):
    saved = resolve_new_run({"scenario": "basic"})
    resumed = resolve_resumed_run(saved, {"learning_rate": 1e-3, "scenario": "basic.wad"}, "models/last.ckpt")
    assert resumed.learning_rate == 1e-3
    assert dataclasses.replace(resumed, learning_rate=saved.learning_rate) == saved
