"""--audio without an engine: each step's buffer size, the audio torso's fixed front end (band magnitudes of a
sine against numbers worked out by hand), the network's audio layer beside the pixels (its weights, its features,
step against unroll, a checkpoint round trip), the sound in record observations and in the gymnasium dict, the
silence and OpenAL checks, and the config: the rates ViZDoom takes, old checkpoints deaf, no change on --resume.
Real basic_audio games: tests/envs/test_audio.py."""
import math
import types

import numpy as np
import pytest
import tensorflow as tf
from gymnasium import spaces

from doom_a3c.algo.model.actor_critic import ActorCritic, LSTMState, build_actor_critic
from doom_a3c.algo.model.audio import band_features, window_length
from doom_a3c.config import TrainConfig
from doom_a3c.envs.doom import audio as engine_audio
from doom_a3c.envs.doom.audio import SilenceWatch, audio_shape, samples_per_step
from doom_a3c.envs.gymnasium_env import gym_observation, observation_space, record_observation
from doom_a3c.envs.interface import network_inputs, observation_dtype, with_frame_shape
from doom_a3c.errors import ConfigError
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.saved_config import resolve_resumed_run, upgrade_saved_config

from support import small_config

FRAME = (20, 20, 1)
RATE = 11025
SAMPLES = 1260  # 11,025 Hz / 35 tics a second = 315 samples a tic, x frame skip 4
LSTM = 16
SINE_BIN = 22  # of a 256-sample window at 11,025 Hz: 22 x 11025 / 256 = 947.46 Hz


# ---- one step's buffer --------------------------------------------------------------------------------------------
def test_a_steps_buffer_holds_frame_skip_tics_of_rate_over_35_samples():
    assert samples_per_step(11025, 1) == 315  # 11025 / 35
    assert samples_per_step(11025, 4) == 1260  # 4 x 315
    assert samples_per_step(22050, 4) == 2520  # 4 x 630
    assert samples_per_step(44100, 4) == 5040  # 4 x 1260
    assert audio_shape(11025, 4) == (1260, 2)  # left and right


def test_a_rate_that_is_no_whole_number_of_samples_a_tic_is_refused():
    with pytest.raises(ValueError, match="16000 Hz"):  # 16000 / 35 = 457.14...
        samples_per_step(16000, 4)


@pytest.mark.parametrize("rate, samples", [(11025, 256), (22050, 512), (44100, 1024)])
def test_a_spectrum_window_is_23_ms_at_every_rate(rate, samples):
    assert window_length(rate) == samples  # 256 / 11025 s = 23.2 ms, a multiple of 64 (2 x 32 bands)


# ---- the torso's front end: band magnitudes ---------------------------------------------------------------------
def sine(amplitude: int, fft_bin: int = SINE_BIN, samples: int = SAMPLES) -> np.ndarray:
    """A sine at the centre of `fft_bin` of a 256-sample window, as int16 samples."""
    n = np.arange(samples)
    return np.round(amplitude * np.sin(2 * np.pi * fft_bin * n / 256)).astype(np.int16)


def bands_by_hand(channel: np.ndarray, rate: int) -> np.ndarray:
    """One channel's 32 features in float64 NumPy, step by step as doom_a3c/algo/model/audio.py describes them."""
    length = window_length(rate)
    hann = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(length) / length)  # periodic, as tf.signal.hann_window's
    waveform = channel.astype(np.float64) / 32768.0
    spectra = [np.abs(np.fft.rfft(waveform[start:start + length] * hann))
               for start in range(0, len(waveform) - length + 1, length // 2)]  # 8 windows of 1260 samples
    magnitude = np.mean(spectra, axis=0)[1:]  # [128]: the constant (bin 0) left out
    bands = magnitude.reshape(32, -1).mean(axis=1)  # 4 bins a band
    return np.log1p(bands / 0.01)


def test_a_sine_on_the_left_lights_its_own_band_and_the_silent_right_reads_zero():
    """A 947.46 Hz sine at a quarter of full scale, left only. A band is 11025 / 2 / 32 = 172.27 Hz wide, so the
    sine is in band 947.46 / 172.27 = 5.5 -> 5 (bins 21 to 24). A Hann window turns a sine of amplitude A centred on
    bin k into magnitudes A N / 4 at k and A N / 8 at k +- 1, nothing elsewhere: with A = 0.25 and N = 256, 8, 16, 8
    and 0 in band 5, whose mean 8 gives log1p(8 / 0.01) = ln 801 in every window."""
    sound = np.zeros((1, SAMPLES, 2), np.int16)
    sound[0, :, 0] = sine(8192)
    features = band_features(tf.constant(sound), RATE).numpy()
    assert features.shape == (1, 64) and features.dtype == np.float32
    left, right = features[0, :32], features[0, 32:]
    assert np.all(right == 0.0)  # silence reads 0
    assert int(np.argmax(left)) == 5
    assert left[5] == pytest.approx(math.log(801), abs=1e-4)
    np.testing.assert_allclose(left, bands_by_hand(sound[0, :, 0], RATE), atol=1e-4)


def test_a_sound_louder_on_the_right_has_larger_right_features():
    """The same sine at 1/4 of full scale on the left and 1/2 on the right: band 5 reads ln 801 on the left and
    log1p(16 / 0.01) = ln 1601 on the right, ln(1601 / 801) = 0.69 more, about ln 2 a doubling."""
    sound = np.zeros((1, SAMPLES, 2), np.int16)
    sound[0, :, 0], sound[0, :, 1] = sine(8192), sine(16384)
    features = band_features(tf.constant(sound), RATE).numpy()[0]
    left, right = features[:32], features[32:]
    assert right[5] > left[5]
    assert right[5] == pytest.approx(math.log(1601), abs=1e-4)
    assert right[5] - left[5] == pytest.approx(math.log(1601 / 801), abs=1e-3)
    np.testing.assert_allclose(right, bands_by_hand(sound[0, :, 1], RATE), atol=1e-4)


# ---- the network's audio layer ----------------------------------------------------------------------------------
def hearing_network(seed: int = 0, **options) -> ActorCritic:
    return ActorCritic(3, lstm_size=LSTM, seed=seed, audio_samples=SAMPLES, **options).build_variables(FRAME)


def observations_with_sound(leading: tuple[int, ...], seed: int = 0, loudness: int = 2000) -> dict[str, tf.Tensor]:
    rng = np.random.default_rng(seed)
    return {"frame": tf.constant(rng.integers(0, 256, (*leading, *FRAME)).astype(np.uint8)),
            "audio": tf.constant(rng.integers(-loudness, loudness + 1, (*leading, SAMPLES, 2)).astype(np.int16))}


def test_the_audio_layer_adds_a_64_by_64_kernel_and_a_bias():
    """Without sound: conv1, conv2 and hidden (a kernel and a bias each: 6), the LSTM (kernel, recurrent kernel,
    bias: 3), the policy and value heads (1 each): 11. With sound, 2 more; separate actor and critic networks have
    one each: 2 x (6 + 2 + 3) + 2 = 24."""
    deaf = ActorCritic(3, lstm_size=LSTM).build_variables(FRAME)
    hearing = hearing_network()
    assert len(deaf.trainable_variables) == 11 and not hasattr(deaf, "audio")
    assert len(hearing.trainable_variables) == 13
    assert tuple(hearing.audio.kernel.shape) == (64, 64)  # 2 channels x 32 bands in, 64 units out
    assert tuple(hearing.audio.bias.shape) == (64,)
    separate = hearing_network(separate_critic=True)
    assert len(separate.trainable_variables) == 24
    assert tuple(separate.critic_audio.kernel.shape) == (64, 64) and separate.critic_audio is not separate.audio


def test_build_actor_critic_takes_the_buffer_size_from_the_config(tmp_path):
    net = build_actor_critic(small_config(tmp_path, audio=True, frame_skip=4, audio_sampling_rate=22050), 3, FRAME,
                             name="global")
    assert net.audio_samples == 2520 and net.audio_sampling_rate == 22050  # 4 tics x 22050 / 35
    assert tuple(net.audio.kernel.shape) == (64, 64)
    deaf = build_actor_critic(small_config(tmp_path, audio=False, frame_skip=4), 3, FRAME, name="deaf")
    assert deaf.audio_samples == 0 and not any("audio" in v.path for v in deaf.trainable_variables)


def test_the_sound_features_join_the_pixels_and_variables_and_move_with_the_sound_alone():
    """encode = [hidden 256 | game variables 32 | audio 64]: 352 wide. Silence gives zero bands, the layer's zero
    bias and ELU(0) = 0: its 64 features are 0; a sine moves only those 64, and the policy's value with them."""
    net = hearing_network(num_game_variables=2)
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 256, (2, *FRAME)).astype(np.uint8)
    variables = np.array([[1.0, 0.5], [0.2, 0.0]], np.float32)
    silent = {"frame": frames, "variables": variables, "audio": np.zeros((2, SAMPLES, 2), np.int16)}
    loud_sound = np.zeros((2, SAMPLES, 2), np.int16)
    loud_sound[:, :, 0] = sine(8192)
    loud = {**silent, "audio": loud_sound}
    quiet_features, loud_features = net.encode(silent)[0].numpy(), net.encode(loud)[0].numpy()
    assert quiet_features.shape == loud_features.shape == (2, 256 + 32 + 64)
    np.testing.assert_allclose(loud_features[:, :288], quiet_features[:, :288], rtol=0, atol=1e-6)
    assert np.all(quiet_features[:, 288:] == 0.0)
    assert np.abs(loud_features[:, 288:]).max() > 0.01
    starts = tf.ones([2])
    quiet_values = net.step(silent, net.initial_state(2), starts).values.numpy()
    loud_values = net.step(loud, net.initial_state(2), starts).values.numpy()
    assert np.abs(loud_values - quiet_values).max() > 1e-6
    assert hearing_network().encode(silent)[0].shape == (2, 256 + 64)  # without variables: the pixels' and sound's


def test_unroll_equals_chained_steps_with_sound_and_episode_starts():
    """A 6-step unroll over 3 games == 6 single steps, with episode starts inside some columns."""
    net = hearing_network()
    steps, games = 6, 3
    observations = observations_with_sound((steps, games), seed=3)
    starts = np.zeros((steps, games), np.float32)
    starts[0, 0] = starts[3, 1] = starts[5, 2] = 1.0
    starts = tf.constant(starts)
    rng = np.random.default_rng(4)
    state = LSTMState(tf.constant(rng.uniform(-1, 1, (games, LSTM)), tf.float32),
                      tf.constant(rng.uniform(-1, 1, (games, LSTM)), tf.float32))
    unrolled = net.unroll(observations, state, starts)
    logits, values = [], []
    for t in range(steps):
        out = net.step({name: field[t] for name, field in observations.items()}, state, starts[t])
        state = out.state
        logits.append(out.logits.numpy())
        values.append(out.values.numpy())
    np.testing.assert_allclose(unrolled.logits.numpy(), np.stack(logits), atol=1e-5)
    np.testing.assert_allclose(unrolled.values.numpy(), np.stack(values), atol=1e-5)
    np.testing.assert_allclose(unrolled.state.h.numpy(), state.h.numpy(), atol=1e-5)
    np.testing.assert_allclose(unrolled.state.c.numpy(), state.c.numpy(), atol=1e-5)


def test_a_network_with_sound_saves_and_restores_into_a_fresh_one(tmp_path):
    net, fresh = hearing_network(seed=1), hearing_network(seed=2)
    observations = observations_with_sound((2,), seed=5)
    starts = tf.ones([2])
    expected = net.step(observations, net.initial_state(2), starts)
    before = fresh.step(observations, fresh.initial_state(2), starts)
    assert np.abs(before.values.numpy() - expected.values.numpy()).max() > 1e-4  # other seeds, other weights
    path = tf.train.Checkpoint(model=net).save(str(tmp_path / "hearing"))
    tf.train.Checkpoint(model=fresh).restore(path).assert_existing_objects_matched()
    restored = fresh.step(observations, fresh.initial_state(2), starts)
    np.testing.assert_allclose(restored.logits.numpy(), expected.logits.numpy(), atol=1e-6)
    np.testing.assert_allclose(restored.values.numpy(), expected.values.numpy(), atol=1e-6)


# ---- the sound in observations ----------------------------------------------------------------------------------
def test_network_inputs_of_records_with_sound_give_the_audio_as_int16():
    with_variables = np.zeros((5, 3), observation_dtype(FRAME, 2, audio_shape=(SAMPLES, 2)))
    with_variables["audio"] = np.arange(5 * 3 * SAMPLES * 2).reshape(5, 3, SAMPLES, 2) % 30000
    inputs = network_inputs(with_variables)
    assert sorted(inputs) == ["audio", "frame", "variables"]
    assert inputs["audio"].dtype == np.int16 and inputs["audio"].shape == (5, 3, SAMPLES, 2)
    np.testing.assert_array_equal(inputs["audio"], with_variables["audio"])
    assert inputs["audio"].flags["C_CONTIGUOUS"]
    sound_only = network_inputs(np.zeros((4,), observation_dtype(FRAME, 0, audio_shape=(SAMPLES, 2))))
    assert sorted(sound_only) == ["audio", "frame"]  # no variables: none passed on
    assert sound_only["frame"].shape == (4, *FRAME) and sound_only["audio"].shape == (4, SAMPLES, 2)


def test_a_frame_stacks_record_keeps_the_sound_field():
    stacked = with_frame_shape(observation_dtype(FRAME, 2, audio_shape=(SAMPLES, 2)), (20, 20, 4))
    assert stacked.names == ("frame", "variables", "audio")
    assert stacked["frame"].shape == (20, 20, 4) and stacked["audio"].shape == (SAMPLES, 2)
    assert stacked["audio"].base == np.int16


def test_the_gymnasium_dict_carries_the_sound_bit_for_bit():
    rng = np.random.default_rng(2)
    record = np.zeros((), observation_dtype(FRAME, 2, audio_shape=(SAMPLES, 2)))
    record["frame"] = rng.integers(0, 256, FRAME)
    record["variables"] = [0.5, -3.25]
    record["audio"] = rng.integers(-32768, 32768, (SAMPLES, 2))
    record["audio"][0] = [-32768, 32767]  # both ends of int16
    as_gym = gym_observation(record)
    assert sorted(as_gym) == ["audio", "frame", "variables"]
    assert as_gym["audio"].dtype == np.int16 and as_gym["audio"].shape == (SAMPLES, 2)
    space = observation_space(None, record)
    assert space["audio"] == spaces.Box(-32768, 32767, (SAMPLES, 2), np.int16)
    assert space.contains(as_gym)
    back = record_observation(as_gym)
    assert back.dtype == record.dtype and back.tobytes() == record.tobytes()


# ---- silence and OpenAL -----------------------------------------------------------------------------------------
def test_a_game_silent_to_its_first_episodes_end_is_refused_in_one_line_naming_libopenal1():
    watch = SilenceWatch("basic_audio.cfg")
    for _ in range(3):
        watch.hear(np.zeros((SAMPLES, 2), np.int16))
    with pytest.raises(ConfigError) as refused:
        watch.check_episode()
    message = str(refused.value)
    assert "\n" not in message and "libopenal1" in message and "basic_audio.cfg" in message


def test_one_sample_of_sound_shows_the_engine_makes_sound_and_a_quiet_episode_after_it_passes():
    """Once a game was heard, an episode where nothing made a noise is the map's own quiet, not a broken engine."""
    watch = SilenceWatch("basic_audio.cfg")
    silent = np.zeros((SAMPLES, 2), np.int16)
    one_sample = silent.copy()
    one_sample[700, 1] = -1
    for buffer in (silent, one_sample, silent):
        watch.hear(buffer)
    watch.check_episode()
    watch.hear(silent)  # the next episode: silent throughout
    watch.check_episode()


def test_openal_problem_is_none_where_the_library_loads(monkeypatch):
    opened = []
    monkeypatch.setattr(engine_audio, "ctypes", types.SimpleNamespace(CDLL=opened.append))
    assert engine_audio.openal_problem() is None
    assert opened == ["libopenal.so.1"]
    engine_audio.check_openal("--audio")  # no error


def test_openal_problem_says_how_to_install_the_library_where_it_is_missing(monkeypatch):
    def missing(name):
        raise OSError(f"{name}: cannot open shared object file: No such file or directory")

    monkeypatch.setattr(engine_audio, "ctypes", types.SimpleNamespace(CDLL=missing))
    problem = engine_audio.openal_problem()
    assert "apt-get install libopenal1" in problem and "libopenal.so.1" in problem and "\n" not in problem
    with pytest.raises(ConfigError, match=r"^--audio: .*apt-get install libopenal1"):
        engine_audio.check_openal("--audio")


# ---- the config -------------------------------------------------------------------------------------------------
def vector_config(**overrides) -> TrainConfig:
    """A resolved config for a vector env with 2 actions."""
    values = {"scenario": "fake", "env_kind": "vector", "scenario_path": "fake-v0", "actions": [["LEFT"], ["RIGHT"]],
              "frame_skip": 1, "reward_scale": 1.0, "clip_rewards": False, "lstm_size": 8, "hidden_size": 8,
              "audio": False}
    return TrainConfig(**{**values, **overrides})


@pytest.mark.parametrize("rate", [8000, 16000, 32000])
def test_a_rate_vizdoom_does_not_take_is_refused_in_one_line_naming_the_flag(rate):
    with pytest.raises(ConfigError, match="--audio-sampling-rate") as refused:
        vector_config(audio_sampling_rate=rate).validate()
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("rate", [11025, 22050, 44100])
def test_vizdoom_rates_are_taken(rate):
    assert vector_config(audio_sampling_rate=rate).validate().audio_sampling_rate == rate


def test_audio_is_refused_for_a_scenario_without_a_doom_engine(tmp_path):
    with pytest.raises(ConfigError, match="^--audio: for ViZDoom scenarios") as refused:
        resolve_new_run({"scenario": "CartPole-v1", "audio": True, "model_dir": str(tmp_path / "m")})
    assert "\n" not in str(refused.value)
    assert resolve_new_run({"scenario": "CartPole-v1", "model_dir": str(tmp_path / "m")}).audio is False


def test_a_config_saved_before_audio_existed_loads_deaf():
    data = vector_config().to_dict()
    del data["audio"], data["audio_sampling_rate"]
    config = upgrade_saved_config(data, "old/last.ckpt")
    assert config.audio is False and config.audio_sampling_rate == 11025
    assert build_actor_critic(config, 2, (4,), "global").audio_samples == 0


def test_resume_refuses_a_change_of_audio_or_its_rate(tmp_path):
    saved = resolve_new_run({"scenario": "basic", "model_dir": str(tmp_path / "m")})
    assert saved.audio is False and saved.audio_sampling_rate == 11025
    with pytest.raises(ConfigError, match=r"cannot change --audio \(trained with False\) on --resume"):
        resolve_resumed_run(saved, {"audio": True}, "models/last.ckpt")
    with pytest.raises(ConfigError, match=r"cannot change --audio-sampling-rate \(trained with 11025\) on --resume"):
        resolve_resumed_run(saved, {"audio_sampling_rate": 44100}, "models/last.ckpt")
    same = resolve_resumed_run(saved, {"audio": False, "audio_sampling_rate": 11025}, "models/last.ckpt")
    assert same.audio is False and same.audio_sampling_rate == 11025
