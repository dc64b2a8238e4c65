"""A run that hears the game, end to end: basic_audio trains with its sound on by default, play.py's MP4 carries what
the agent heard, the export takes the sound as an input, --resume keeps the ears and cannot take them away, and a
machine whose engine would make only silence is refused with one line.

One short training run is shared by the module; each test that changes it works on a copy.
"""
import json
import os
import shutil
import subprocess
from types import SimpleNamespace

import imageio_ffmpeg
import numpy as np
import pytest

from doom_a3c.envs.doom.audio import openal_problem
from support import assert_one_line_error, run, run_in_process, strict_json

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(openal_problem() is not None, reason=f"no sound here: {openal_problem()}")]

RATE = 11025
SAMPLES_A_STEP = 4 * RATE // 35  # basic_audio's 4 tics a step


@pytest.fixture(scope="module")
def heard(tmp_path_factory):
    """train.py on basic_audio (the .cfg enables the audio buffer: heard by default) for 600 steps: its run folder."""
    base = tmp_path_factory.mktemp("heard")
    proc = run("train.py", "--scenario", "basic_audio", "--max-steps", 600, "--workers", 1, "--envs-per-worker", 2,
               "--no-evaluate", "--gif-every", 0, "--model-dir", base / "model", "--frames-dir", base / "frames")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return SimpleNamespace(model_dir=base / "model")


def test_basic_audio_is_heard_by_default_and_says_so_in_its_config(heard):
    config = strict_json((heard.model_dir / "config.json").read_text())
    assert (config["audio"], config["audio_sampling_rate"], config["frame_skip"]) == (True, RATE, 4)


def decoded_sound(mp4):
    """The MP4's audio track as int16 [N, 2] at RATE (ffmpeg decodes it), and what ffmpeg says of its streams."""
    ffmpeg = imageio_ffmpeg.get_ffmpeg_exe()
    info = subprocess.run([ffmpeg, "-hide_banner", "-i", str(mp4)], capture_output=True, text=True).stderr
    raw = subprocess.run([ffmpeg, "-v", "error", "-i", str(mp4), "-vn", "-f", "s16le", "-ac", "2", "-ar", str(RATE),
                          "-"], capture_output=True, check=True).stdout
    return np.frombuffer(raw, np.int16).reshape(-1, 2), info


def test_play_writes_an_mp4_with_the_sound_the_agent_heard(heard, tmp_path):
    out = tmp_path / "play"
    proc = run("play.py", "--model", heard.model_dir / "last.ckpt", "--out", out, "--episodes", 1, "--video", "mp4")
    assert proc.returncode == 0, proc.stderr[-3000:]
    episode = json.loads((out / "results.json").read_text())["episodes"][0]
    sound, info = decoded_sound(out / "episode_001.mp4")
    assert "Audio: aac" in info and "Video: h264" in info
    # As long as the video (a frame a tic), within the encoder's priming of a frame or two
    video_seconds = episode["frames"] / 35
    assert abs(len(sound) / RATE - video_seconds) < 0.1
    assert np.abs(sound).max() > 1000  # the Cacodemon's sound, not silence


def test_the_export_takes_the_sound(heard, tmp_path):
    from doom_a3c.quiet_import import tf
    from doom_a3c.run.agent import load_agent
    from doom_a3c.run.export import export_policy

    agent = load_agent(str(heard.model_dir / "last.ckpt"), greedy=True)
    exported = export_policy(agent, str(tmp_path / "export"))
    metadata = json.loads(open(exported.metadata).read())
    assert (metadata["audio_samples"], metadata["audio_sampling_rate"]) == (SAMPLES_A_STEP, RATE)
    step = tf.saved_model.load(exported.saved_model).signatures["serving_default"]
    assert step.structured_input_signature[1]["audio"].shape.as_list() == [None, SAMPLES_A_STEP, 2]
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, (1, *agent.spec.observation_shape), dtype=np.uint8)
    sound = rng.integers(-3000, 3000, (1, SAMPLES_A_STEP, 2), dtype=np.int16)
    state = np.zeros([1, metadata["state_size"]], np.float32)
    out = step(observation=frame, audio=sound, state_h=state, state_c=state, episode_start=np.ones([1], np.float32))
    direct = agent.policy({"frame": frame[0], "variables": np.zeros(0, np.float32), "audio": sound[0]})
    np.testing.assert_allclose(out["probabilities"].numpy()[0], direct.probabilities, rtol=1e-5, atol=1e-6)


def test_resume_keeps_the_ears_and_cannot_take_them_away(heard, tmp_path, capsys):
    model = tmp_path / "model"
    shutil.copytree(heard.model_dir, model)
    refused = run_in_process("train.py", capsys, "--resume", "--model-dir", model, "--no-audio")
    assert refused.returncode == 2
    assert_one_line_error(refused, "cannot change --audio (trained with True) on --resume")
    resumed = run("train.py", "--resume", "--model-dir", model, "--max-steps", 900, "--no-evaluate",
                  "--frames-dir", tmp_path / "frames")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert strict_json((model / "config.json").read_text())["audio"] is True


def test_a_machine_without_openal_is_refused_before_anything_is_written(tmp_path, capsys, monkeypatch):
    import doom_a3c.envs.doom.audio as audio

    monkeypatch.setattr(audio, "openal_problem", lambda: "ViZDoom's sound needs libopenal.so.1, which this machine "
                                                         "lacks: apt-get install libopenal1")
    result = run_in_process("train.py", capsys, "--scenario", "basic_audio", "--model-dir", tmp_path / "model",
                            "--max-steps", 100)
    assert result.returncode == 2
    assert_one_line_error(result, "--audio: ViZDoom's sound needs libopenal.so.1")
    assert not (tmp_path / "model").exists()
    deaf = run_in_process("train.py", capsys, "--scenario", "basic_audio", "--no-audio", "--model-dir",
                          tmp_path / "deaf", "--max-steps", 40, "--workers", 1, "--envs-per-worker", 1,
                          "--no-evaluate", "--gif-every", 0, "--frames-dir", tmp_path / "frames")
    assert deaf.returncode == 0, deaf.stderr  # a deaf run needs no OpenAL


def test_an_episode_heard_as_silence_stops_the_run_with_one_line(tmp_path, capsys, monkeypatch):
    """An engine whose buffer stays all zeros (no OpenAL device): the first episode's end stops the run; the game is
    not restarted, as a crashed one would be. The games run in this process, so that the stand-in silence reaches
    them."""
    import doom_a3c.envs.doom.audio as audio

    monkeypatch.setattr(audio.SilenceWatch, "hear", lambda self, buffer: None)
    result = run_in_process("train.py", capsys, "--scenario", "basic_audio", "--env-processes", 0, "--workers", 1,
                            "--envs-per-worker", 1, "--max-steps", 3000, "--no-evaluate", "--gif-every", 0,
                            "--model-dir", tmp_path / "model", "--frames-dir", tmp_path / "frames")
    assert result.returncode == 2
    assert_one_line_error(result, "stayed silent for a whole episode of basic_audio.cfg")
    assert "restart" not in result.stdout


def test_a_deathmatch_host_hears_its_match(tmp_path):
    """--audio on a map of your own made a deathmatch host by --bots: the host's sound is in its observations."""
    from doom_a3c.envs.doom.game import DoomEnvironment
    from doom_a3c.run.resolve import resolve_new_run
    from support import REPO_ROOT

    cfg = os.path.join(REPO_ROOT, "tests", "fixtures", "deathmatch_simple", "deathmatch_simple.cfg")
    config = resolve_new_run({"scenario": cfg, "bots": 2, "audio": True, "model_dir": str(tmp_path)})
    assert config.plays_deathmatch() and config.audio
    env = DoomEnvironment(config, seed=3)
    try:
        observation, loudest = env.reset(), 0
        for step in range(60):
            step = env.step(step % env.num_actions)
            loudest = max(loudest, int(np.abs(step.observation["audio"]).max()))
        assert observation["audio"].shape == (config.frame_skip * RATE // 35, 2)
        assert loudest > 0
    finally:
        env.close()
