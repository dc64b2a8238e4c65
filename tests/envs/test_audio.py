"""--audio with real ViZDoom games: basic_audio's .cfg turns the sound on, each observation carries its step's buffer
(frame_skip x 315 samples at 11,025 Hz, left and right, int16) and it is heard, from the direction the sound comes
from; --no-audio switches the engine's buffer off; the gymnasium env's dict carries the sound; an episode heard as
silence throughout is refused at its end. basic_audio's Cacodemon is never drawn, but its sound loops from where
it stands on the far wall. Fakes and the torso: tests/algo/test_audio_torso.py."""
import numpy as np
import pytest
from gymnasium import spaces

from doom_a3c.envs.doom.audio import openal_problem
from doom_a3c.errors import ConfigError
from doom_a3c.run.resolve import resolve_new_run

NO_OPENAL = openal_problem()
pytestmark = pytest.mark.skipif(NO_OPENAL is not None, reason=f"ViZDoom's engine makes no sound here: {NO_OPENAL}")

SAMPLES_A_TIC = 315  # 11,025 Hz / 35 tics a second


def resolved(scenario, tmp_path, **given):
    return resolve_new_run({"scenario": scenario, "model_dir": str(tmp_path / "models"), **given})


def doom_game(config):
    from doom_a3c.envs.doom.game import DoomEnvironment

    return DoomEnvironment(config, seed=1)


def channel_energies(buffers) -> np.ndarray:
    """[left, right]: the sum of squared samples over these steps' buffers."""
    samples = np.concatenate(buffers).astype(np.float64)  # [steps x samples, 2]
    return (samples ** 2).sum(axis=0)


def right_share(energies: np.ndarray) -> float:
    """The right channel's part of the sound's energy: 0.5 straight ahead, more the further right it comes from."""
    return float(energies[1] / energies.sum())


def test_audio_is_on_where_the_cfg_enables_the_buffer(tmp_path):
    """basic_audio.cfg says audio_buffer_enabled = true, basic.cfg does not; the flag wins either way."""
    hearing = resolved("basic_audio", tmp_path)
    assert hearing.audio is True and hearing.audio_sampling_rate == 11025 and hearing.frame_skip == 4
    assert resolved("basic", tmp_path).audio is False
    assert resolved("basic", tmp_path, audio=True).audio is True
    assert resolved("basic_audio", tmp_path, audio=False).audio is False


@pytest.mark.slow
def test_basic_audio_observations_carry_each_steps_sound(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = resolved("basic_audio", tmp_path)
    env = doom_game(config)
    left = config.actions.index(["MOVE_LEFT"])
    try:
        observations = [env.reset()]
        for _ in range(10):
            observations.append(env.step(left).observation)
    finally:
        env.close()
    for observation in observations:
        assert observation["audio"].shape == (config.frame_skip * SAMPLES_A_TIC, 2)  # (1260, 2)
        assert observation["audio"].dtype == np.int16
    assert any(observation["audio"].any() for observation in observations)


@pytest.mark.slow
def test_no_audio_on_basic_audio_switches_the_engines_buffer_off(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = resolved("basic_audio", tmp_path, audio=False)
    env = doom_game(config)
    try:
        observations = [env.reset(), env.step(config.actions.index(["MOVE_LEFT"])).observation]
        assert not env._game.is_audio_buffer_enabled()
    finally:
        env.close()
    for observation in observations:
        assert observation.dtype.names is None or "audio" not in observation.dtype.names


@pytest.mark.slow
def test_the_sound_comes_from_its_side(tmp_path, monkeypatch):
    """The player strafes to the left wall, then to the right wall. Wherever on the far wall the Cacodemon stands,
    it is further to the player's right from the left wall than from the right wall, so the right channel's share
    of the sound is larger there. Each side's energy is summed over 5 steps spent at that wall."""
    monkeypatch.chdir(tmp_path)
    config = resolved("basic_audio", tmp_path)
    env = doom_game(config)
    left, right = config.actions.index(["MOVE_LEFT"]), config.actions.index(["MOVE_RIGHT"])
    try:
        env.reset()
        at_left_wall, at_right_wall = [], []
        for step in range(20):  # about 7 steps reach the left wall from the middle, at 8 units a tic
            observation = env.step(left).observation
            if step >= 15:
                at_left_wall.append(observation["audio"])
        for step in range(30):  # about 14 steps cross the room's 416 units
            observation = env.step(right).observation
            if step >= 25:
                at_right_wall.append(observation["audio"])
    finally:
        env.close()
    from_left_wall, from_right_wall = channel_energies(at_left_wall), channel_energies(at_right_wall)
    assert np.all(from_left_wall > 0) and np.all(from_right_wall > 0), (from_left_wall, from_right_wall)
    assert right_share(from_left_wall) > right_share(from_right_wall), (from_left_wall, from_right_wall)


@pytest.mark.slow
def test_the_gymnasium_env_of_an_audio_config_has_the_sound_in_its_dict(tmp_path, monkeypatch):
    from doom_a3c.run.agent import make_env

    monkeypatch.chdir(tmp_path)
    config = resolved("basic_audio", tmp_path)
    env = make_env(config, seed=0, render_mode=None)
    try:
        space = env.observation_space
        assert isinstance(space, spaces.Dict) and "audio" in space.spaces
        assert space["audio"] == spaces.Box(-32768, 32767, (1260, 2), np.int16)
        observation, _ = env.reset()
        assert observation["audio"].shape == (1260, 2) and observation["audio"].dtype == np.int16
        assert space.contains(observation)
        observation, *_ = env.step(config.actions.index(["MOVE_LEFT"]))
        assert space.contains(observation)
    finally:
        env.close()


@pytest.mark.slow
def test_a_game_heard_as_silence_is_refused_at_its_first_episodes_end(tmp_path, monkeypatch):
    """The game's silence watch fed zeros (what an engine without a working OpenAL gives): its first episode plays
    on to the end, where the step is refused in one line. Heard as it is, the next episode ends without a word."""
    monkeypatch.chdir(tmp_path)
    config = resolved("basic_audio", tmp_path)
    env = doom_game(config)
    left = config.actions.index(["MOVE_LEFT"])
    try:
        watch = env._silence
        real_hear = watch.hear
        watch.hear = lambda buffer: real_hear(np.zeros_like(buffer))
        env.reset()
        with pytest.raises(ConfigError) as refused:
            for _ in range(200):  # 300 tics at 4 a step: the timeout ends the episode within 75 steps
                env.step(left)
        assert env._game.is_episode_finished()  # refused at the end, not before
        del watch.hear  # the engine's own buffers again
        env.reset()
        for _ in range(200):
            if env.step(left).game_over:
                break
        assert env._game.is_episode_finished()
    finally:
        env.close()
    message = str(refused.value)
    assert "\n" not in message and "basic_audio.cfg" in message and "libopenal1" in message
