"""A Pong checkpoint trained with Pong's own preset (an LSTM on single standardised frames, lambda 0.95, Adam 3e-4)
plays and resumes as it was trained, whatever the Atari defaults and presets say today: its saved config is whole."""
from __future__ import annotations

import json
import shutil

import pytest

from doom_a3c.run.playback import play
from doom_a3c.run.training import train_from_flags
from doom_a3c.runtime.checkpoint import read_checkpoint

from support import REPO_ROOT

OLD_PONG = f"{REPO_ROOT}/tests/fixtures/old_pong_preset_checkpoint"
# Made by `train.py --scenario ALE/Pong-v5 --max-steps 200 --workers 1 --envs-per-worker 2 --frame-size 36
# --hidden-size 16 --lstm-size 16 --no-evaluate` with scenarios/ALE_Pong-v5.toml; `play.py --episodes 2 --seed 5`
# then played these (reward, steps).
OLD_PONG_EPISODES = [(-20.0, 894), (-20.0, 1007)]
PRESET_VALUES = {"lstm": True, "frame_stack": 1, "frame_norm": "standardize", "gae_lambda": 0.95,
                 "learning_rate": 3e-4, "activation": "relu", "lstm_size": 16}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_checkpoint_trained_with_pongs_preset_plays_and_resumes_as_trained(tmp_path):
    model = tmp_path / "old"
    shutil.copytree(OLD_PONG, model)
    saved = json.loads((model / "config.json").read_text())
    assert {name: saved[name] for name in PRESET_VALUES} == PRESET_VALUES
    results = play(str(model / "last.ckpt"), str(tmp_path / "play"), episodes=2, seed=5)
    assert [(r.reward, r.length) for r in results] == OLD_PONG_EPISODES

    assert train_from_flags({"resume": True, "model_dir": str(model), "max_steps": 400, "gif_every": 0,
                             "log_every_seconds": 60.0}) == 0
    resumed = read_checkpoint(str(model / "last.ckpt"))
    assert resumed.counters["env_steps"] >= 400
    assert {name: resumed.config[name] for name in PRESET_VALUES} == PRESET_VALUES
