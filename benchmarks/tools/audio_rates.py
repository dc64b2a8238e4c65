#!/usr/bin/env python
"""What the audio buffer costs ViZDoom's engine at each sampling rate, and where the sound's energy lies.

    python benchmarks/tools/audio_rates.py [--seconds 15] [--scenario basic_audio] [--frame-skip 4]

1. Engine steps/s of one game with uniformly random actions, the screen and (when on) the audio buffer read at each
   step: the buffer off, then on at 11,025, 22,050 and 44,100 Hz (`frame_skip` tics a step, `+snd_efx 0`), then off
   again (the machine's drift). No preprocessing and no network: the engine's own cost.
2. The sound of 40 steps standing still (or walking one way) in each of 6 episodes at 44,100 Hz: each channel's
   mean magnitude in octave bands, and the left-to-right level ratio step by step (a Cacodemon to one side is
   louder on that side, and the ratio moves as the player walks).

Needs the system's OpenAL library (libopenal1). Figures to quote need a quiet machine (../shared/tools/timed).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/tools/ is two below
sys.path.insert(0, ROOT)

from doom_a3c.envs.doom.audio import NO_SOUND_EFFECTS, openal_problem  # noqa: E402

RATES = (11025, 22050, 44100)
OCTAVES = [(0, 250), (250, 500), (500, 1000), (1000, 2000), (2000, 4000), (4000, 8000), (8000, 22050)]


def make_game(scenario: str, rate: int | None, frame_skip: int):
    import vizdoom as vzd

    game = vzd.DoomGame()
    game.load_config(os.path.join(vzd.scenarios_path, f"{scenario}.cfg"))
    game.set_window_visible(False)
    game.set_screen_resolution(vzd.ScreenResolution.RES_160X120)
    game.add_game_args(NO_SOUND_EFFECTS)
    if rate:
        game.set_audio_buffer_enabled(True)
        game.set_audio_sampling_rate(getattr(vzd.SamplingRate, f"SR_{rate}"))
        game.set_audio_buffer_size(frame_skip)
    else:
        game.set_audio_buffer_enabled(False)
    game.init()
    return game


def steps_per_second(scenario: str, rate: int | None, frame_skip: int, seconds: float) -> float:
    game = make_game(scenario, rate, frame_skip)
    buttons = game.get_available_buttons_size()
    actions = [[float(i == b) for i in range(buttons)] for b in range(buttons)]
    rng = np.random.default_rng(0)
    steps, started = 0, time.perf_counter()
    game.new_episode()
    while time.perf_counter() - started < seconds:
        if game.is_episode_finished():
            game.new_episode()
        state = game.get_state()
        _ = state.screen_buffer, (state.audio_buffer if rate else None)
        game.make_action(actions[rng.integers(buttons)], frame_skip)
        steps += 1
    game.close()
    return steps / (time.perf_counter() - started)


def sound_report(scenario: str, frame_skip: int, rate: int = 44100) -> None:
    game = make_game(scenario, rate, frame_skip)
    buttons = game.get_available_buttons_size()
    for episode in range(6):
        game.new_episode()
        walk = [float(episode % 2 and i == 0) for i in range(buttons)]  # odd episodes hold the first button
        buffers = []
        while not game.is_episode_finished() and len(buffers) < 40:
            buffers.append(game.get_state().audio_buffer.astype(np.float32) / 32768.0)
            game.make_action(walk, frame_skip)
        sound = np.stack(buffers)  # [steps, samples, 2]
        spectrum = np.abs(np.fft.rfft(sound * np.hanning(sound.shape[1])[None, :, None], axis=1)).mean(0)
        frequencies = np.fft.rfftfreq(sound.shape[1], 1.0 / rate)
        bands = " ".join(f"{low}-{high}: {spectrum[(frequencies >= low) & (frequencies < high), 0].mean():.2f}/"
                         f"{spectrum[(frequencies >= low) & (frequencies < high), 1].mean():.2f}"
                         for low, high in OCTAVES)
        ratio = np.sqrt((sound[..., 0] ** 2).mean(1) / np.maximum((sound[..., 1] ** 2).mean(1), 1e-12))
        print(f"episode {episode} ({'walking' if episode % 2 else 'standing'}): left/right magnitude by band (Hz) "
              f"{bands}; left/right level, first 12 steps {np.round(ratio[:12], 2).tolist()}", flush=True)
    game.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--scenario", default="basic_audio")
    parser.add_argument("--frame-skip", type=int, default=4)
    args = parser.parse_args()
    problem = openal_problem()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    off = steps_per_second(args.scenario, None, args.frame_skip, args.seconds)
    print(f"audio buffer off: {off:,.0f} engine steps/s", flush=True)
    for rate in RATES:
        on = steps_per_second(args.scenario, rate, args.frame_skip, args.seconds)
        print(f"{rate} Hz: {on:,.0f} engine steps/s ({on / off:.2f} of off)", flush=True)
    print(f"audio buffer off again: {steps_per_second(args.scenario, None, args.frame_skip, args.seconds):,.0f} "
          f"engine steps/s", flush=True)
    sound_report(args.scenario, args.frame_skip)
    return 0


if __name__ == "__main__":
    sys.exit(main())
