"""train.py and play.py on CartPole and an Atari game, as a user runs them: checkpoint, CSV, GIFs,
play.py, the options saved in the config and reproduced by --resume, and one-line errors."""
import json

import imageio.v3 as iio
import numpy as np
import pytest

from support import (assert_one_line_error, first_observation_and_policy, read_rows, run, run_in_process, saved_run,
                     snapshot, strict_json)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cartpole(tmp_path_factory):
    """CartPole with a batch of the algorithm options on, 4000 steps. One worker, so all 4000 steps are its
    own: with two, a CI run once stopped before worker 0's game 0 ended its first (recorded) episode."""
    base = tmp_path_factory.mktemp("cartpole")
    model, frames = base / "model", base / "frames"
    proc = run("train.py", "--scenario", "CartPole-v1", "--max-steps", 4000, "--workers", 1, "--gif-every", 3,
               "--model-dir", model, "--frames-dir", frames, "--advantage", "nstep", "--n-step", 4,
               "--n-step-variant", "zero",
               "--separate-networks", "--epsilon-start", 0.5, "--epsilon-end", 0.1, "--epsilon-decay-steps", 2000,
               "--epsilon-spread", "linear", "--gradient-mode", "normalize", "--lr-schedule", "linear",
               "--optimizer", "rmsprop", "--log-every-seconds", 1,
               "--no-evaluate")  # no final evaluation (up to 10 x 500 CartPole steps), on --resume neither
    assert proc.returncode == 0, proc.stderr[-3000:]
    return model, frames, proc


def test_cartpole_run_writes_checkpoint_csv_gifs_and_saves_every_option(cartpole):
    model, frames, proc = cartpole
    assert "preset for CartPole-v1" in proc.stdout  # the tuned defaults, for the flags not given
    checkpoint = saved_run(model / "last.ckpt")
    assert checkpoint.num_actions == 2 and checkpoint.counters["env_steps"] >= 4000
    saved = strict_json((model / "config.json").read_text())
    assert saved == checkpoint.config
    assert saved["advantage"] == "nstep" and saved["n_step"] == 4 and saved["n_step_variant"] == "zero"
    assert saved["separate_networks"] and saved["lstm"] is False  # the flag given and the preset's
    assert saved["env_kind"] == "vector" and saved["scenario_path"] == "CartPole-v1" and len(saved["actions"]) == 2
    assert (saved["frame_skip"], saved["reward_scale"], saved["clip_rewards"]) == (1, 1.0, False)
    assert saved["epsilon_spread"] == "linear" and saved["gradient_mode"] == "normalize"
    assert saved["lr_schedule"] == "linear" and saved["optimizer"] == "rmsprop"
    rows = read_rows(model / "progress.csv")
    assert rows and all(1 <= r["length"] <= 500 and r["reward"] == r["length"] for r in rows)  # +1 per step
    gifs = sorted(frames.glob("episode_*.gif"))
    assert gifs
    image = iio.imread(gifs[0], index=None)
    assert image.shape[1:] == (200, 300, 3)  # gymnasium's rgb_array rendering at half size, not the 4 numbers


def test_play_on_cartpole_and_resume_reproduces_the_options(cartpole, tmp_path):
    model, _, _ = cartpole
    out = tmp_path / "play"
    played = run("play.py", "--model", model / "last.ckpt", "--out", out, "--episodes", 2)
    assert played.returncode == 0, played.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["scenario"] == "CartPole-v1" and len(results["episodes"]) == 2
    assert iio.imread(out / "episode_001.gif", index=None).shape[1:] == (200, 300, 3)
    resumed = run("train.py", "--resume", "--model-dir", model, "--max-steps", 5000)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    checkpoint = saved_run(model / "last.ckpt")
    config, counters = checkpoint.config, checkpoint.counters
    assert counters["env_steps"] >= 5000
    assert config["separate_networks"] and config["advantage"] == "nstep" and config["max_steps"] == 5000
    assert config["lstm"] is False and config["epsilon_spread"] == "linear"  # the preset's and a flag's, as saved


def test_cartpole_checkpoint_is_refused_by_an_atari_run(cartpole, tmp_path, capsys):
    model, _, _ = cartpole
    before = snapshot(model)
    proc = run("train.py", "--resume", "--model-dir", model, "--scenario", "ALE/Breakout-v5", "--max-steps", 10)
    assert_one_line_error(proc, "CartPole-v1", "ALE/Breakout-v5", "an Atari game")
    # The same refusal for a ViZDoom scenario, through train.py's main function in this process (no second start).
    proc = run_in_process("train.py", capsys, "--resume", "--model-dir", model, "--scenario", "basic",
                          "--max-steps", 10)
    assert_one_line_error(proc, "CartPole-v1", "a ViZDoom scenario")
    assert snapshot(model) == before


@pytest.fixture(scope="module")
def breakout(tmp_path_factory):
    """ALE/Breakout-v5 (5 lives, FIRE to serve), 1 worker x 2 games, 1200 agent steps."""
    base = tmp_path_factory.mktemp("breakout")
    model, frames = base / "model", base / "frames"
    proc = run("train.py", "--scenario", "ALE/Breakout-v5", "--max-steps", 1200, "--workers", 1,
               "--envs-per-worker", 2, "--rollout", 20, "--gif-every", 1, "--model-dir", model,
               "--frames-dir", frames, "--log-every-seconds", 1, "--no-evaluate")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return model, frames


def test_atari_run_reports_whole_game_scores_and_colour_gifs(breakout):
    model, frames = breakout
    config = strict_json((model / "config.json").read_text())
    assert config["scenario"] == "ALE/Breakout-v5" and config["env_kind"] == "atari"
    assert config["clip_rewards"] is True and config["frame_skip"] == 4  # resolved for Atari and saved
    assert config["ale_vector"] is True and config["env_processes"] == 0  # ale-py's vector env, saved as run
    assert (config["epochs"], config["minibatches"]) == (2, 2)  # the Atari defaults' two clipped passes, as run
    rows = read_rows(model / "progress.csv")
    assert rows, "no game finished"
    # A whole game of Breakout is 5 lives: a random player needs well over 40 agent steps for it.
    assert all(r["length"] > 40 and r["reward"] == int(r["reward"]) >= 0 for r in rows)
    gifs = sorted(frames.glob("episode_*.gif"))
    assert gifs
    image = iio.imread(gifs[0], index=None)
    assert image.shape[1:] == (420, 320, 3) and np.any(image[..., 0] != image[..., 2])  # the colour screen


def test_play_on_atari(breakout, tmp_path):
    model, _ = breakout
    out = tmp_path / "play"
    proc = run("play.py", "--model", model / "last.ckpt", "--out", out, "--episodes", 1)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    episode = results["episodes"][0]
    assert episode["length"] > 40 and episode["reward"] >= 0
    assert iio.imread(out / "episode_001.gif", index=None).shape[1:] == (420, 320, 3)


def test_export_of_an_atari_checkpoint(breakout, tmp_path):
    """--export of a run trained in the vector env: the acting step takes the 4 stacked frames one game gives."""
    model, _ = breakout
    proc = run("play.py", "--model", model / "last.ckpt", "--export", tmp_path / "export")
    assert proc.returncode == 0, proc.stderr[-3000:]
    policy = json.loads((tmp_path / "export" / "policy.json").read_text())
    assert policy["action_names"] == ["NOOP", "FIRE", "RIGHT", "LEFT"], policy


def test_a_pixel_background_run_saves_its_image_plays_and_resumes_with_it(tmp_path):
    """--frame-norm pixel_background: the image measured when the run started is in its config; play.py and
    --resume take it from there, as it was."""
    model = tmp_path / "model"
    proc = run("train.py", "--scenario", "ALE/Breakout-v5", "--frame-norm", "pixel_background", "--max-steps", 400,
               "--workers", 1, "--envs-per-worker", 2, "--model-dir", model, "--frames-dir", tmp_path / "frames",
               "--no-evaluate")
    assert proc.returncode == 0, proc.stderr[-3000:]
    image = strict_json((model / "config.json").read_text())["frame_background_image"]
    assert np.array(image).shape == (84, 84) and np.array(image).max() > 0  # Breakout's walls are not black
    assert saved_run(model / "last.ckpt").config["frame_background_image"] == image
    played = run("play.py", "--model", model / "last.ckpt", "--out", tmp_path / "play", "--episodes", 1)
    assert played.returncode == 0, played.stderr[-3000:]
    from doom_a3c.quiet_import import tf
    from doom_a3c.run.agent import load_agent
    from doom_a3c.run.export import export_policy

    agent = load_agent(str(model / "last.ckpt"))
    observation, expected = first_observation_and_policy(agent)  # the exported step subtracts the image too
    loaded = tf.saved_model.load(export_policy(agent, str(tmp_path / "export")).saved_model)
    state = np.zeros((1, agent.net.state_size), np.float32)
    out = loaded.step(observation=observation[None], state_h=state, state_c=state,
                      episode_start=np.ones([1], np.float32))
    np.testing.assert_allclose(out["probabilities"].numpy()[0], expected, rtol=1e-5, atol=1e-6)
    resumed = run("train.py", "--resume", "--model-dir", model, "--max-steps", 600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    checkpoint = saved_run(model / "last.ckpt")
    assert checkpoint.config["frame_background_image"] == image and checkpoint.counters["env_steps"] >= 600


@pytest.mark.parametrize("scenario,needles", [
    ("ALE/Pongg-v5", ["ALE/Pongg-v5", "did you mean 'ALE/Pong-v5'", "supported: Atari"]),
    ("Pendulum-v1", ["continuous action space", "CartPole-v1"]),
    ("MountainCarContinuous-v0", ["continuous action space"]),
    ("nosuchgame", ["nosuchgame", "basic", "ALE/Pong-v5", "CartPole-v1"]),
])
def test_unsupported_environments_are_one_line_errors(scenario, needles, tmp_path):
    proc = run("train.py", "--scenario", scenario, "--model-dir", tmp_path / "m", "--frames-dir", tmp_path / "f",
               "--max-steps", 10)
    assert_one_line_error(proc, *needles)
