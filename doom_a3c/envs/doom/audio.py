"""The game's sound as the agent hears it: ViZDoom's audio buffer, set up so that it holds real sound.

ViZDoom mixes the game's sound through OpenAL Soft into a buffer of int16 stereo samples, `rate / 35` a tic
(ViZDoom's `SamplingRate`). Kept at `frame_skip` tics, each step's buffer holds every tic the step covers, the oldest
first, [frame_skip * rate / 35, 2] (left, right): a monster to the right is louder on the right.

Two traps of the engine, both silent or fatal without these steps:
- Without the system's OpenAL library (Debian's `libopenal1`) the engine starts and every buffer is zeros, with no
  warning: an agent would learn from silence. `openal_problem` says so before any engine starts.
- With it, OpenAL Soft 1.19's reverb filter may abort the engine (`BiquadFilter_setParams: Assertion 'gain >
  0.00001f' failed`, as reported on ViZDoom's tracker); `+snd_efx 0` turns the effects off, and the buffer keeps the
  sound and its direction.
"""
from __future__ import annotations

import ctypes

import numpy as np

from doom_a3c.errors import ConfigError

TICS_PER_SECOND = 35
OPENAL_LIBRARY = "libopenal.so.1"  # what ViZDoom's engine loads, beside it first, then from the system
NO_SOUND_EFFECTS = "+snd_efx 0"
INSTALL_OPENAL = "install the system's OpenAL library (Debian and Ubuntu: apt-get install libopenal1)"


def samples_per_step(sampling_rate: int, frame_skip: int) -> int:
    """Samples a channel in one step's buffer: `frame_skip` tics of `sampling_rate / 35` each (11025 Hz: 315 a tic)."""
    per_tic, rest = divmod(sampling_rate, TICS_PER_SECOND)
    if rest:
        raise ValueError(f"{sampling_rate} Hz is not a whole number of samples a tic")
    return per_tic * frame_skip


def audio_shape(sampling_rate: int, frame_skip: int) -> tuple[int, int]:
    """One step's buffer: [samples, 2] int16, left and right."""
    return samples_per_step(sampling_rate, frame_skip), 2


def openal_problem() -> str | None:
    """Why the engine's audio buffer would stay silent on this machine (no OpenAL library), or None."""
    try:
        ctypes.CDLL(OPENAL_LIBRARY)
    except OSError:
        return f"ViZDoom's sound needs {OPENAL_LIBRARY}, which this machine lacks (every buffer would be silent): " \
               f"{INSTALL_OPENAL}"
    return None


def check_openal(where: str) -> None:
    """ConfigError naming `where` (a flag, a checkpoint) when the engine could not make sound here."""
    problem = openal_problem()
    if problem:
        raise ConfigError(f"{where}: {problem}")


def set_up_audio(game, vzd, sampling_rate: int, frame_skip: int) -> None:
    """A DoomGame, before init(), that fills the audio buffer with each step's tics at `sampling_rate`."""
    check_openal("--audio")
    game.set_audio_buffer_enabled(True)
    game.set_audio_sampling_rate(getattr(vzd.SamplingRate, f"SR_{sampling_rate}"))
    game.set_audio_buffer_size(frame_skip)
    game.add_game_args(NO_SOUND_EFFECTS)


class SilenceWatch:
    """Whether a game's engine makes sound at all: a whole episode of zeros before any sound was heard means it does not
    (no OpenAL device, a broken library), and the agent must not learn from it. Once a game was heard, a quiet episode
    later is the game's own (a map where nothing made a noise), not a fault."""

    def __init__(self, scenario: str):
        self._scenario = scenario
        self._heard = False

    def hear(self, buffer: np.ndarray) -> None:
        self._heard = self._heard or bool(buffer.any())

    def check_episode(self) -> None:
        """At an episode's end: ConfigError if the game has been silent from its start to here."""
        if not self._heard:
            raise ConfigError(f"--audio: ViZDoom's audio buffer stayed silent for a whole episode of {self._scenario}, "
                              f"so the agent would learn from silence; check that OpenAL works ({INSTALL_OPENAL}), "
                              f"or train without --audio")
