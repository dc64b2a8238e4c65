"""Every field with choices or bounds refused from each source a value comes from: a flag, a preset's [train]
table, the Python API and a saved config on --resume. Each bad value is one line on stderr (a ConfigError from the
API) naming the field, the value and what it may be, and nothing is written. No training: the runs stop while their
config is put together.
"""
import dataclasses
import json
import math
import os
import subprocess
import sys

import pytest

from doom_a3c.config import TrainConfig, is_flag
from doom_a3c.errors import ConfigError
from support import REPO_ROOT, assert_one_line_error, run, run_in_process, snapshot

# The declarations the checks read: a field dropped from either list would no longer be checked anywhere.
CHOICE_FIELDS = {"action_set", "policy_heads", "trainer", "distributed", "precision", "optimizer", "rmsprop_style",
                 "weight_init", "activation", "advantage", "n_step_variant", "epsilon_spread", "gradient_mode",
                 "lr_schedule", "frame_norm", "video"}
BOUNDED_FIELDS = {"frame_skip", "reward_scale", "frame_size", "frame_width", "frame_stack", "bots", "curriculum_matches",
                  "curriculum_frags", "self_play_opponents", "audio_sampling_rate",
                  "self_play_snapshot_minutes", "workers", "envs_per_worker", "env_threads", "env_processes",
                  "game_timeout", "max_game_restarts", "seed", "rollout", "gamma", "gae_lambda", "return_scale_floor",
                  "value_coef", "policy_coef", "entropy_coef", "entropy_target", "clip_norm", "enemy_coef", "epochs",
                  "clip_ratio", "minibatches", "rmsprop_decay", "rmsprop_epsilon", "learning_rate", "lstm_size", "hidden_size",
                  "n_step", "epsilon_start", "epsilon_end", "epsilon_decay_steps", "normalize_norm",
                  "frame_background", "max_steps", "max_minutes", "eval_every_minutes", "eval_episodes", "gif_every",
                  "save_every_minutes", "save_every_episodes", "keep_checkpoints", "log_every_seconds"}
FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}
# What a saved config's 0 means for these (the preset's, in a config an older doom_a3c saved): no error there.
SAVED_SENTINELS = {("frame_skip", 0), ("reward_scale", 0)}


def out_of_bounds(f):
    """Values just outside a field's bounds, on each side it has, and an open bound itself."""
    bounds, whole = f.metadata["bounds"], "int" in f.type
    step = 1 if whole else 0.5
    values = []
    if bounds.low is not None:
        values += [bounds.low - step] + ([bounds.low] if bounds.open_low else [])
    if bounds.high is not None:
        values += [bounds.high + step] + ([bounds.high] if bounds.open_high else [])
    return values


def range_cases():
    """(field, value) for every field with choices or bounds: a value that is none of them, or outside them."""
    return ([(name, "no-such-choice") for name in sorted(CHOICE_FIELDS)]
            + [(name, value) for name in sorted(BOUNDED_FIELDS) for value in out_of_bounds(FIELDS[name])])


# Values of the wrong type, which a file or the API can give but the command line, whose parser converts, cannot.
TYPE_CASES = [("trainer", 1), ("workers", "4"), ("learning_rate", "3e-4"), ("frame_stack", 2.5), ("lstm", "no"),
              ("envs_per_worker", True), ("clip_ratio", math.inf), ("epochs", 2.0), ("minibatches", "2")]
RANGE_CASES = range_cases()
CASES = RANGE_CASES + TYPE_CASES
SAVED_CASES = [case for case in CASES if case not in SAVED_SENTINELS]
# Should a value pass unnoticed, the run it starts is one short CartPole run; the field's own flag comes last and wins.
SHORT_RUN = ["--scenario", "CartPole-v1", "--max-steps", 1, "--workers", 1, "--no-evaluate"]


def ids(cases):
    return [f"{name}={value!r}" for name, value in cases]


def flag(name):
    return "--" + name.replace("_", "-")


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value + '"'
    return repr(value)  # TOML writes inf as inf, as Python does


def test_every_field_with_choices_or_bounds_is_declared():
    assert {name for name, f in FIELDS.items() if "choices" in f.metadata} == CHOICE_FIELDS
    assert {name for name, f in FIELDS.items() if "bounds" in f.metadata} == BOUNDED_FIELDS
    assert all(is_flag(FIELDS[name]) for name in CHOICE_FIELDS | BOUNDED_FIELDS)


def test_the_defaults_and_every_choice_pass():
    TrainConfig().validate()
    for name in CHOICE_FIELDS:
        for choice in FIELDS[name].metadata["choices"]:
            # what lr_schedule linear and epsilon_spread geometric need beside them
            TrainConfig(**{name: choice}, max_steps=10, epsilon_end=0.01).validate()


@pytest.mark.parametrize("name, value", CASES, ids=ids(CASES))
def test_the_python_api_refuses_it(name, value, tmp_path):
    from doom_a3c import train

    model_dir = tmp_path / "model"
    # A small run of CartPole, should the value pass unnoticed.
    config = TrainConfig(**{"scenario": "CartPole-v1", "max_steps": 1, "workers": 1, "evaluate": False,
                            "model_dir": str(model_dir), "frames_dir": str(tmp_path / "frames"), name: value})
    with pytest.raises(ConfigError) as error:
        train(config)
    message = str(error.value)
    assert "\n" not in message and message.startswith(flag(name) + " must be ") and repr(value) in message
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name, value", RANGE_CASES, ids=ids(RANGE_CASES))
def test_the_command_line_refuses_it(name, value, tmp_path, capsys):
    proc = run_in_process("train.py", capsys, *SHORT_RUN, "--model-dir", tmp_path / "model",
                          "--frames-dir", tmp_path / "frames", flag(name), value)
    assert proc.returncode == 2
    assert_one_line_error(proc, f"error: {flag(name)} must be ", f"got {str(value)!r}"
                          if FIELDS[name].metadata.get("choices") else f"got {value!r}")
    assert os.listdir(tmp_path) == []


@pytest.fixture
def presets_dir(tmp_path, monkeypatch):
    from doom_a3c.run import presets

    folder = tmp_path / "presets"
    folder.mkdir()
    monkeypatch.setattr(presets, "PRESETS_DIR", folder)
    return folder


@pytest.mark.parametrize("name, value", CASES, ids=ids(CASES))
def test_a_presets_train_table_refuses_it(name, value, presets_dir, tmp_path, capsys):
    (presets_dir / "CartPole-v1.toml").write_text(f"[train]\n{name} = {toml_value(value)}\n")
    before = snapshot(tmp_path)
    proc = run_in_process("train.py", capsys, *SHORT_RUN, "--model-dir", tmp_path / "model",
                          "--frames-dir", tmp_path / "frames")
    assert proc.returncode == 2
    assert_one_line_error(proc, "CartPole-v1.toml", f"{name} must be ", f"got {value!r}")
    assert snapshot(tmp_path) == before


def test_a_flag_given_does_not_hide_the_presets_bad_value(presets_dir, tmp_path, capsys):
    (presets_dir / "CartPole-v1.toml").write_text('[train]\nadvantage = "n-step"\n')
    proc = run_in_process("train.py", capsys, "--scenario", "CartPole-v1", "--advantage", "nstep", "--model-dir",
                          tmp_path / "model")
    assert_one_line_error(proc, "CartPole-v1.toml", "advantage must be one of gae, nstep, got 'n-step'")


def test_a_presets_top_level_value_is_checked_too(presets_dir, tmp_path, capsys):
    (presets_dir / "CartPole-v1.toml").write_text("frame_skip = -2\n")
    proc = run_in_process("train.py", capsys, "--scenario", "CartPole-v1", "--model-dir", tmp_path / "model")
    assert_one_line_error(proc, "CartPole-v1.toml", "frame_skip must be > 0, got -2")


@pytest.fixture(scope="module")
def resolved_cartpole(tmp_path_factory):
    from doom_a3c.run.resolve import resolve_new_run

    return resolve_new_run({"scenario": "CartPole-v1", "model_dir": str(tmp_path_factory.mktemp("resolved"))})


def write_checkpoint(model_dir, config, **values):
    """A checkpoint holding `config` with `values` as a run saves it: its counters and config, no weights, enough
    for --resume to read the config. Written as Python's JSON writes it (infinity too): an older doom_a3c's could."""
    from doom_a3c.quiet_import import tf
    from doom_a3c.runtime.checkpoint import RunCounters

    model_dir.mkdir()
    counters = RunCounters(config, len(config.actions))
    counters.config_json.assign(json.dumps({**config.to_dict(), **values}))
    tf.train.Checkpoint(run=counters).write(str(model_dir / "last.ckpt"))


@pytest.mark.parametrize("name, value", SAVED_CASES, ids=ids(SAVED_CASES))
def test_a_saved_config_on_resume_refuses_it(name, value, resolved_cartpole, tmp_path, capsys):
    model_dir = tmp_path / "model"
    write_checkpoint(model_dir, resolved_cartpole, **{name: value})
    before = snapshot(tmp_path)
    proc = run_in_process("train.py", capsys, "--resume", "--model-dir", model_dir, "--max-steps", 1)
    assert proc.returncode == 2
    assert_one_line_error(proc, "last.ckpt's saved config", f"{name} must be ", f"got {value!r}")
    assert snapshot(tmp_path) == before


def test_the_saved_config_of_a_good_run_resumes_past_the_checks(resolved_cartpole, tmp_path):
    """The checks refuse the value, not the checkpoint: the same one with good values gets past them."""
    from doom_a3c.run.training import resolve_run

    write_checkpoint(tmp_path / "model", resolved_cartpole)
    config, saved = resolve_run({"resume": True, "model_dir": str(tmp_path / "model")})
    assert saved is not None and config.trainer == resolved_cartpole.trainer


@pytest.mark.slow
def test_train_py_refuses_a_mistyped_trainer_before_writing(tmp_path):
    proc = run("train.py", "--trainer", "ga3cc", "--model-dir", tmp_path / "model")
    assert proc.returncode == 2
    assert_one_line_error(proc, "--trainer must be one of a3c, ga3c, got 'ga3cc'")
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_a_script_using_the_api_prints_one_line_for_a_bad_value(tmp_path):
    """An uncaught ConfigError in a user's script is the one line train.py prints, and a non-zero exit."""
    script = ("from doom_a3c import TrainConfig, train\n"
              f"train(TrainConfig(trainer='ga3cc', model_dir={str(tmp_path / 'model')!r}))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert_one_line_error(proc, "--trainer must be one of a3c, ga3c, got 'ga3cc'")
    assert os.listdir(tmp_path) == []
