"""Which path an Atari run's games take (ale-py's vector env, or one gymnasium env a game), as resolved, saved and
resumed; and a checkpoint trained before the vector env, which plays and resumes on its own path."""
from __future__ import annotations

import json
import shutil

import gymnasium as gym
import pytest

from doom_a3c.envs.gym.registry import registered_spec
from doom_a3c.errors import ConfigError
from doom_a3c.run.playback import play
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.saved_config import resolve_resumed_run, upgrade_saved_config
from doom_a3c.run.training import train_from_flags
from doom_a3c.runtime.checkpoint import read_checkpoint

from support import REPO_ROOT

OLD_ATARI = f"{REPO_ROOT}/tests/fixtures/old_atari_checkpoint"
# tests/fixtures/old_atari_checkpoint, made before the vector env by `train.py --scenario ALE/Breakout-v5 --max-steps
# 200 --workers 1 --envs-per-worker 2 --frame-size 36 --hidden-size 16 --no-evaluate`; `play.py --episodes 2 --seed 5`
# then played these (reward, steps), FIRE pressed after each lost life.
OLD_ATARI_EPISODES = [(1.0, 143), (0.0, 115)]
MODE_ID = "DoomA3cTest/BreakoutMode-v0"


@pytest.fixture
def breakout_with_a_mode():
    registered_spec("ALE/Pong-v5")
    gym.register(MODE_ID, entry_point="ale_py.env:AtariEnv", kwargs={"game": "breakout", "mode": 4})
    yield MODE_ID
    gym.registry.pop(MODE_ID, None)


def test_an_atari_run_steps_its_games_in_the_vector_env_and_saves_so():
    config = resolve_new_run({"scenario": "ALE/Breakout-v5", "model_dir": "unused"})
    assert config.ale_vector is True and config.env_processes == 0 and config.is_resolved()
    off = resolve_new_run({"scenario": "ALE/Breakout-v5", "ale_vector": False, "model_dir": "unused"})
    assert off.ale_vector is False and off.env_processes == 1  # one child process a worker, as before
    for other in ("CartPole-v1", "basic"):
        assert resolve_new_run({"scenario": other, "model_dir": "unused"}).ale_vector is False


def test_an_id_the_vector_env_cannot_run_falls_back_with_one_line(breakout_with_a_mode, capsys):
    config = resolve_new_run({"scenario": MODE_ID, "model_dir": "unused"})
    assert config.ale_vector is False and config.env_processes == 1
    notes = [line for line in capsys.readouterr().out.splitlines() if "vector env" in line]
    assert notes == [f"note: {MODE_ID} runs one gymnasium env a game, not in ale-py's vector env: its registration "
                     f"sets mode, which ale-py's vector env does not take"]
    with pytest.raises(ConfigError, match="--ale-vector: ale-py's vector env cannot run .* sets mode"):
        resolve_new_run({"scenario": MODE_ID, "ale_vector": True, "model_dir": "unused"})


@pytest.mark.parametrize("given, message", [
    ({"scenario": "ALE/Breakout-v5", "env_processes": 2}, "--env-processes 2: .* add --no-ale-vector"),
    ({"scenario": "CartPole-v1", "ale_vector": True}, "--ale-vector: for Atari games only, not CartPole-v1"),
])
def test_flags_the_vector_env_cannot_honour_are_config_errors(given, message):
    with pytest.raises(ConfigError, match=message):
        resolve_new_run({**given, "model_dir": "unused"})


def test_a_config_saved_before_the_vector_env_keeps_its_path_and_may_move_on_resume():
    saved = resolve_new_run({"scenario": "ALE/Breakout-v5", "ale_vector": False, "model_dir": "unused"})
    data = saved.to_dict()
    del data["ale_vector"]
    old = upgrade_saved_config(data, "old/last.ckpt")
    assert old.ale_vector is False and old.env_processes == 1
    assert resolve_resumed_run(old, {"max_steps": 10}, "old/last.ckpt").ale_vector is False
    moved = resolve_resumed_run(old, {"ale_vector": True, "env_processes": 0}, "old/last.ckpt")
    assert moved.ale_vector is True and moved.env_processes == 0
    with pytest.raises(ConfigError, match="add --no-ale-vector"):
        resolve_resumed_run(old, {"ale_vector": True}, "old/last.ckpt")  # still one child process a worker
    new = resolve_new_run({"scenario": "ALE/Breakout-v5", "model_dir": "unused"})
    with pytest.raises(ConfigError, match="--env-processes 1"):
        resolve_resumed_run(new, {"env_processes": 1}, "new/last.ckpt")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_checkpoint_trained_before_the_vector_env_plays_and_resumes_as_trained(tmp_path):
    model = tmp_path / "old"
    shutil.copytree(OLD_ATARI, model)
    assert "ale_vector" not in json.loads((model / "config.json").read_text())
    results = play(str(model / "last.ckpt"), str(tmp_path / "play"), episodes=2, seed=5)
    assert [(r.reward, r.length) for r in results] == OLD_ATARI_EPISODES

    assert train_from_flags({"resume": True, "model_dir": str(model), "max_steps": 400, "gif_every": 0,
                             "log_every_seconds": 60.0}) == 0
    resumed = read_checkpoint(str(model / "last.ckpt"))
    assert resumed.counters["env_steps"] >= 400
    assert resumed.config["ale_vector"] is False and resumed.config["env_processes"] == 1
