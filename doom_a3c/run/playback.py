"""play.py's episodes: a trained checkpoint's agent (doom_a3c/run/agent.py) plays them greedily or sampling,
with videos and a results.json summary of the game's own scores; with `window`, shown in a window as they play, at
the game's own speed (ViZDoom's 35 tics a second).
"""
from __future__ import annotations

import json
import os
import sys
import time
from typing import NamedTuple

import numpy as np

from doom_a3c.envs.display import display_problem
from doom_a3c.envs.gymnasium_env import GameEnv
from doom_a3c.envs.interface import AUDIO
from doom_a3c.errors import CheckpointError, ConfigError, one_line
from doom_a3c.run.agent import Agent, load_agent
from doom_a3c.run.recording import VIDEO_FORMATS, Soundtrack, write_video
from doom_a3c.run.speaker import Speaker
from doom_a3c.runtime.checkpoint import resolve_prefix
from doom_a3c.runtime.files import atomic_write_text, ensure_writable_dir


class EpisodeSummary(NamedTuple):
    reward: float
    length: int  # agent steps
    gif: str  # the first video written (the GIF unless --video mp4)
    videos: list[str]
    frames: int  # video frames: every game tic for ViZDoom, one per step otherwise
    match: dict | None = None  # a deathmatch: frags, deaths, frags_per_minute, place, players; None otherwise
    seconds: float = 0.0  # wall-clock time the episode took (a window's: the game's own speed)
    tics: int | None = None  # ViZDoom: the game's clock at its end, its start's tics included (the window's pace)


def match_caption(report: dict) -> str:
    """A deathmatch's standing as a video shows it under each frame."""
    return (f"frags {report['frags']:g}  deaths {report['deaths']:g}  place {report['place']:g} of "
            f"{report['players']:g}")


def play_episode(agent: Agent, env: GameEnv, captions: list[str] | None = None, sounds: list[np.ndarray] | None = None,
                 speaker: Speaker | None = None) -> tuple[float, int, list[np.ndarray], dict | None]:
    """One whole game: (reward, steps, the screens a person sees, a deathmatch's report of the match or None).
    ViZDoom games show every tic. An Atari life loss resets the LSTM (the agent reads it in `info`), as in
    training, and the game goes on. A deathmatch host's game with a `captions` list: each screen's standing (frags,
    deaths, place) is appended to it, one caption a screen. A game that is heard (--audio): each step's sound is
    appended to `sounds` and played on `speaker`, where given (the last step's is silence: the engine shows no state
    once the game is over)."""
    captions = captions if captions is not None and hasattr(env.game, "match_report") else None
    tic_by_tic = hasattr(env.game, "record_tics")  # ViZDoom: a frame per tic, not per frame_skip tics
    if tic_by_tic:
        env.game.record_tics = True
    observation, info = env.reset()
    frames = [np.array(env.game.screen())]
    if captions is not None:
        captions.append(match_caption(env.game.match_report()))
    total, length, game_over = 0.0, 0, False
    while not game_over:
        observation, reward, terminated, truncated, info = env.step(agent.act(observation, info))
        total, length, game_over = total + reward, length + 1, terminated or truncated
        if isinstance(observation, dict) and AUDIO in observation:
            if sounds is not None:
                sounds.append(observation[AUDIO])
            if speaker is not None:
                speaker.play(observation[AUDIO])
        shown = len(frames)
        if tic_by_tic:
            frames.extend(env.game.tic_screens)
        elif not game_over:
            frames.append(np.array(env.game.screen()))
        if captions is not None:  # the final report once the match is over: the engine has no state left
            report = info["match"] if game_over else env.game.match_report()
            captions.extend([match_caption(report)] * (len(frames) - shown))
    return total, length, frames, info.get("match")


def soundtrack(sounds: list[np.ndarray] | None, sampling_rate: int) -> Soundtrack | None:
    """A heard episode's steps' sounds as its video's track: a tic of silence under the first frame (the screen
    before the first step), then each step's tics as they played; None for a game not heard."""
    if not sounds:
        return None
    from doom_a3c.envs.doom.game import DOOM_TICS_PER_SECOND

    first_frame = np.zeros((sampling_rate // DOOM_TICS_PER_SECOND, 2), np.int16)
    return Soundtrack(np.concatenate([first_frame, *sounds]), sampling_rate)


def seconds_per_frame(env: GameEnv) -> float:
    if hasattr(env.game, "record_tics"):
        from doom_a3c.envs.doom.game import DOOM_TICS_PER_SECOND

        return 1.0 / DOOM_TICS_PER_SECOND
    return env.game.seconds_per_step


class WindowClosed(Exception):
    """The game's window was closed (its engine exited) or Ctrl-C pressed while a window showed the episodes."""


def play(model: str, out: str, episodes: int = 3, greedy: bool = False, seed: int = 0,
         video: str = "gif", window: bool = False) -> list[EpisodeSummary]:
    """Play `episodes` games of a checkpoint; videos (`video`: gif, mp4 or both) and results.json in `out`. With
    `window`, each game is shown in a window as it plays, at the game's own speed; closing the window (or Ctrl-C)
    stops the episodes, the finished ones written as usual, and raises WindowClosed."""
    if video not in VIDEO_FORMATS:
        raise ConfigError(f"--video must be one of {', '.join(VIDEO_FORMATS)}, got {video!r}")
    if window and (problem := display_problem()) is not None:
        raise ConfigError(f"--window: {problem}")
    prefix = resolve_prefix(model)
    ensure_writable_dir(out, "--out")
    agent = load_agent(prefix, greedy, seed)
    env = agent.make_env(render_mode="human" if window else "rgb_array")
    if window:  # the first act builds the compiled step: not while the game's own clock runs
        agent.policy(env.observation_space.sample())
        agent.reset()
    heard = bool(agent.config.audio)
    speaker = Speaker(agent.config.audio_sampling_rate) if window and heard else None
    if speaker is not None and not speaker.playing:
        print(f"note: the window plays silent: no sound device ({speaker.problem})", flush=True)
    summaries, stopped = [], None
    try:
        for index in range(episodes):
            started = time.monotonic()
            captions: list[str] | None = [] if agent.config.plays_deathmatch() else None
            sounds: list[np.ndarray] | None = [] if heard else None
            try:
                total, length, frames, match = play_episode(agent, env, captions, sounds, speaker)
            except KeyboardInterrupt:
                if not window:
                    raise
                stopped = "stopped by Ctrl-C"
                break
            except Exception as error:  # noqa: BLE001 - a window's engine exits when its window is closed
                if not window or type(error).__name__ != "ViZDoomUnexpectedExitException":
                    raise
                stopped = f"the window was closed ({one_line(error)})"
                break
            seconds = time.monotonic() - started
            tics = env.game.episode_tics() if hasattr(env.game, "episode_tics") else None
            paths = write_video(os.path.join(out, f"episode_{index + 1:03d}"), frames, seconds_per_frame(env), video,
                                captions, soundtrack(sounds, agent.config.audio_sampling_rate))
            summaries.append(EpisodeSummary(total, length, paths[0], paths, len(frames), match, seconds, tics))
    finally:
        env.close()
        if speaker is not None:
            speaker.close()
    rewards = [s.reward for s in summaries]
    results = {
        "checkpoint": agent.checkpoint, "scenario": agent.config.scenario,
        "trained_env_steps": agent.trained_env_steps, "greedy": greedy, "window": window,
        "episodes": [s._asdict() for s in summaries],
        "mean_reward": float(np.mean(rewards)) if rewards else None,
        "std_reward": float(np.std(rewards)) if rewards else None,
        "mean_length": float(np.mean([s.length for s in summaries])) if rewards else None,
    }
    atomic_write_text(os.path.join(out, "results.json"), json.dumps(results, indent=2) + "\n")
    if stopped is not None:
        raise WindowClosed(f"{stopped} after {len(summaries)} of {episodes} episodes; they are in "
                           f"{os.path.join(out, 'results.json')}")
    return summaries


def main(model: str, out: str, episodes: int, greedy: bool, seed: int, video: str = "gif",
         export: str | None = None, window: bool = False) -> int:
    """play.py: play and record (with `window`, shown as they play), or with `export` write the acting step as a
    SavedModel (and TFLite). 0, or 1 when the window was closed before the last episode, 2 for bad input."""
    try:
        if export is not None:
            from doom_a3c.run.export import export_policy

            exported = export_policy(load_agent(model, greedy, seed), export)
            print(f"SavedModel of the acting step in {exported.saved_model}")
            print(f"TFLite: {exported.tflite}" if exported.tflite else f"TFLite: not written ({exported.tflite_error})")
            return 0
        summaries = play(model, out, episodes, greedy, seed, video, window)
    except (ConfigError, CheckpointError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except WindowClosed as closed:
        print(f"stopped: {closed}", file=sys.stderr)
        return 1
    rewards = np.array([s.reward for s in summaries])
    for i, s in enumerate(summaries, 1):
        match = "" if s.match is None else (f" ({s.match['frags']:g} frags, {s.match['deaths']:g} deaths, "
                                            f"{s.match['frags_per_minute']:.2f} frags/min, place "
                                            f"{s.match['place']:g} of {s.match['players']:g})")
        print(f"episode {i}: reward {s.reward:.1f}{match}, {s.length} steps in {s.seconds:.1f} s -> "
              f"{', '.join(s.videos)}")
    print(f"mean reward {rewards.mean():.1f} +- {rewards.std():.1f} over {len(rewards)} episodes; "
          f"results in {os.path.join(out, 'results.json')}")
    return 0
