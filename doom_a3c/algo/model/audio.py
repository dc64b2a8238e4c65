"""The audio torso's fixed front end: a step's stereo sound -> each channel's log magnitudes in frequency bands.

The buffer (ViZDoom's, [samples, 2] int16: doom_a3c/envs/doom/audio.py) is cut into windows of about 23 ms (256
samples at 11,025 Hz, half overlapping), each window's magnitude spectrum taken with `tf.signal.stft`, averaged over
the step's windows and over AUDIO_BANDS equal bands of frequency, then compressed by log1p(magnitude / floor): 0 for
silence, about 1 a factor e louder above the floor. Left and right stay apart, so the level difference that says
where a sound comes from is a difference of two inputs. No weights: the learnt part is the dense layer after it
(doom_a3c/algo/model/actor_critic.py). As Sample Factory's "Agents that Listen" FFT encoder (log magnitudes,
pooled, then dense layers), at a quarter of its rate and with time windows.
"""
from __future__ import annotations

from doom_a3c.quiet_import import tf

AUDIO_BANDS = 32  # bands a channel: 172 Hz each at 11,025 Hz
WINDOW_SECONDS = 256 / 11025  # 23 ms: 256 samples at the default rate
AUDIO_FLOOR = 0.01  # magnitudes (full scale 1.0) this far below a loud sound's still count; silence reads 0


def window_length(sampling_rate: int) -> int:
    """Samples a spectrum window: about 23 ms, a whole multiple of 2 * AUDIO_BANDS so the bins split evenly."""
    unit = 2 * AUDIO_BANDS
    return max(unit, round(WINDOW_SECONDS * sampling_rate / unit) * unit)


def band_features(sound: tf.Tensor, sampling_rate: int) -> tf.Tensor:
    """sound [N, S, 2] int16 (S at least one window) -> [N, 2 * AUDIO_BANDS] float32: the left channel's bands, lowest
    first, then the right's."""
    length = window_length(sampling_rate)
    waveform = tf.transpose(tf.cast(sound, tf.float32) / 32768.0, [0, 2, 1])  # [N, 2, S] in [-1, 1)
    spectrum = tf.abs(tf.signal.stft(waveform, frame_length=length, frame_step=length // 2,
                                     window_fn=tf.signal.hann_window, pad_end=False))  # [N, 2, windows, length/2 + 1]
    magnitude = tf.reduce_mean(spectrum[..., 1:], axis=2)  # [N, 2, length / 2]: the constant (bin 0) left out
    batch = tf.shape(magnitude)[0]
    bands = tf.reduce_mean(tf.reshape(magnitude, [batch, 2, AUDIO_BANDS, -1]), axis=-1)  # [N, 2, AUDIO_BANDS]
    return tf.reshape(tf.math.log1p(bands / AUDIO_FLOOR), [batch, 2 * AUDIO_BANDS])
