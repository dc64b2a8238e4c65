"""play.py's matches: trained checkpoints playing one multiplayer game of ViZDoom together, each agent in its own
engine, with its own checkpoint's config (action set, frame size and stack, game variables, LSTM), on one map.

A match's start, watch and end are doom_a3c/envs/doom/match_lifecycle.py's, as self-play's are: a fresh UDP port,
the engines started one at a time, every player playing on its own in its seat's thread while the calling thread
watches them (an engine that exited, a step not returned within `step_timeout`), and a failure that kills every
engine of the match, recorded as not finished with one line on stderr. Engines start through the engine leash
(envs/engine.py), so none outlives play.py.

With `person` (play.py --human) a person hosts the match at the keyboard and mouse of a visible window (ViZDoom's
ASYNC_SPECTATOR host, its engine keeping the game's own 35 tics a second) and every checkpoint joins as a player of
its own, its engine hidden and on the same clock (ASYNC_PLAYER: an engine that waited for its player's steps would
hold the host's start, which waits for the others' tics, until the start timed out). The person's seat is watched like any other; its engine exiting (the window closed) or Ctrl-C ends the
match, every engine reaped, the scores so far recorded.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
import time
from typing import Any, NamedTuple

import numpy as np

from doom_a3c.algo.rollout import MAX_RECORDED_FRAMES
from doom_a3c.config import TrainConfig
from doom_a3c.envs.display import display_problem, show_windows
from doom_a3c.envs.doom.action_sets import missing_buttons
from doom_a3c.envs.doom.game import locate_cfg
from doom_a3c.envs.doom.match_lifecycle import (START_TIMEOUT_SECONDS, MatchLost, MatchStopped, seat_seeds,
                                                start_match)
from doom_a3c.envs.doom.multiplayer import (DEFAULT_MATCH_MINUTES, Seat, is_multiplayer, player_name,
                                            seat_game_args, time_limit)
from doom_a3c.envs.engine import quiet_engines
from doom_a3c.envs.factory import make_environment
from doom_a3c.envs.interface import Environment
from doom_a3c.errors import CheckpointError, ConfigError
from doom_a3c.run.agent import PLAY_SEED_OFFSET, Agent, load_agent
from doom_a3c.run.doom_values import doom_buttons
from doom_a3c.run.recording import VIDEO_FORMATS, write_video
from doom_a3c.run.saved_config import upgrade_saved_config
from doom_a3c.runtime.checkpoint import read_checkpoint, resolve_prefix
from doom_a3c.runtime.files import atomic_write_text, ensure_writable_dir

STEP_TIMEOUT_SECONDS = 30.0  # a player whose step has not returned by then has stalled the match
# The person's engine keeps the game's clock (a step is a tic): one silent this long has stopped answering, as an
# engine whose window was closed can, deadlocked in its exit.
PERSON_STEP_TIMEOUT_SECONDS = 10.0
PERSON_RESOLUTION = "RES_640X480"  # the person's window (the agents see theirs at their own resolution)
PERSON = "you"  # how the person is named in the lines printed and in failures


class PlayerTally:
    """What one player's play leaves: its agent steps, the monotonic time of its last one (the watch reads it),
    its latest scores and, when recorded, its screens."""

    def __init__(self):
        self.steps, self.heartbeat = 0, time.monotonic()
        self.scores: dict[str, int] | None = None
        self.frames: list[np.ndarray] = []


def play_seat(game: Environment, observation: np.ndarray, agent: Agent, tally: PlayerTally, record: bool) -> None:
    """One player's play, in its seat's thread: stepped with its agent until its game is over."""
    agent.reset()
    if record:
        tally.frames.append(np.array(game.screen()))
    while True:
        step = game.step(agent.act(observation))
        tally.steps, tally.heartbeat = tally.steps + 1, time.monotonic()
        tally.scores = game.scores()
        if step.game_over:
            return
        observation = step.observation
        if record and len(tally.frames) < MAX_RECORDED_FRAMES:  # a match's first 4 minutes
            tally.frames.append(np.array(game.screen()))


class WindowClosed(Exception):
    """The person's engine exited under a step: its window was closed."""


def play_person(game: Environment, tally: PlayerTally) -> None:
    """The person's seat, in its thread: the game's tics let pass (the person's keys and mouse play them) until it
    is over, the person's scores kept as they change."""
    while True:
        try:
            step = game.step(0)
        except Exception as error:  # noqa: BLE001 - the person's engine exits when its window is closed
            if type(error).__name__ == "ViZDoomUnexpectedExitException":
                raise WindowClosed("the window was closed") from error
            raise
        tally.steps, tally.heartbeat = tally.steps + 1, time.monotonic()
        tally.scores = game.scores()
        if step.game_over:
            return


class MatchResult(NamedTuple):
    finished: bool
    error: str | None
    port: int
    steps: int  # the first agent's steps
    players: list[dict[str, Any]]  # per player: name, checkpoint, person, frags, deaths, place (None where unknown)
    videos: list[str]
    stopped: bool = False  # ended by the person: the window closed, or Ctrl-C


def places(frags: list[int | None]) -> list[int | None]:
    """Each player's place by frags: 1 for the most, tied players share the better place."""
    known = [f for f in frags if f is not None]
    return [None if f is None else 1 + sum(other > f for other in known) for f in frags]


def checked_config(path: str, role: str) -> tuple[str, TrainConfig]:
    """A checkpoint's prefix and saved config, if it can play a match: a ViZDoom agent of a multiplayer map.
    ConfigError or CheckpointError otherwise, before any engine starts."""
    prefix = resolve_prefix(path)
    config = upgrade_saved_config(read_checkpoint(prefix).config, prefix)
    if config.env_kind != "doom":
        raise ConfigError(f"{role} {path} plays {config.scenario} ({config.env_kind}): only ViZDoom agents play "
                          f"matches")
    if not is_multiplayer(config.game_args):
        raise ConfigError(f"{role} {path} was trained on {os.path.basename(config.scenario_path)}, a single-player "
                          f"map: only an agent of a multiplayer map (cig) plays matches")
    return prefix, config


def match_map(model_config: TrainConfig, scenario: str | None) -> TrainConfig:
    """The config whose map (.cfg) and game rules the matches play: the model's own, or `scenario`'s preset."""
    if scenario is None:
        return model_config
    from doom_a3c.run.resolve import resolve_python_config

    config = resolve_python_config(TrainConfig(scenario=scenario))
    if config.env_kind != "doom" or not is_multiplayer(config.game_args):
        raise ConfigError(f"--scenario {scenario} is not a multiplayer ViZDoom map: its scenario passes no -host or "
                          f"-deathmatch (cig's preset does)")
    return config


def check_buttons(checked: list[tuple[str, TrainConfig]], map_config: TrainConfig) -> None:
    """Every player's action set presses only buttons the match's .cfg makes available (read without an engine)."""
    cfg_path = locate_cfg(map_config.scenario_path)
    buttons = doom_buttons(cfg_path)
    for prefix, config in checked:
        unknown = missing_buttons(config.actions, buttons)
        if unknown:
            raise ConfigError(f"{prefix} acts with buttons {unknown} that the match's {os.path.basename(cfg_path)} "
                              f"does not make available ({buttons})")


def seat_config(config: TrainConfig, map_config: TrainConfig, seat: Seat, bots: int) -> TrainConfig:
    """A player's own config seated in a match: the map's .cfg (its map and buttons) and engine arguments for its
    seat; the host adds the bots. Action set, frame size, frame skip and game variables stay the player's."""
    return dataclasses.replace(config, scenario_path=map_config.scenario_path,
                               game_args=seat_game_args(map_config.game_args, seat),
                               bots=bots if seat.index == 0 else 0)


def person_config(map_config: TrainConfig) -> TrainConfig:
    """The person's seat: the match's map and rules, rendered at PERSON_RESOLUTION for the window; no labels
    buffer (--enemy-coef's, for learning only) and no audio buffer (an agent's ears: the person has their own)."""
    return dataclasses.replace(map_config, screen_resolution=PERSON_RESOLUTION, enemy_coef=0.0, audio=False)


def play_match(agents: list[Agent], map_config: TrainConfig, minutes: float, bots: int, seed: int, index: int = 0,
               step_timeout: float = STEP_TIMEOUT_SECONDS, start_timeout: float = START_TIMEOUT_SECONDS,
               on_start=None, on_retry=None, person: bool = False) -> tuple[MatchResult, list[np.ndarray]]:
    """The `index`-th match from `seed` of `agents` (the first hosts, or with `person` the person hosts in a
    window and the agents join), on a fresh port; its result and the first agent's screens. `on_retry(failure)`
    before a failed start's second try; `on_start(port)` once the players play (tests stop an engine or send keys
    there). Ctrl-C ends the match as a failure does, recorded as stopped."""
    seats: list[Agent | None] = ([None] if person else []) + list(agents)  # None: the person
    first_agent = 1 if person else 0

    def name(seat: int) -> str:
        player = seats[seat]
        return f"{PERSON} ({player_name(seat)})" if player is None else \
            f"player {player_name(seat)} ({player.checkpoint})"

    def makers(port: int) -> list:
        seeds = seat_seeds(seed, index, len(seats))
        return [functools.partial(make_environment, seat_config(person_config(map_config) if player is None
                                                                 else player.config, map_config,
                                                                 Seat(i, len(seats), port, minutes), bots),
                                  seeds[i], **({"window": "person"} if player is None else
                                               {"real_time": True} if person else {}))
                for i, player in enumerate(seats)]

    tallies = [PlayerTally() for _ in seats]
    try:
        match = start_match(len(seats), makers, name, start_timeout=start_timeout, on_retry=on_retry)
    except (MatchLost, MatchStopped) as lost:  # MatchStopped: Ctrl-C during the start
        return match_result(seats, tallies, str(lost), lost.port, isinstance(lost, MatchStopped)), []
    plays = {seat: match.play(seat, functools.partial(play_person, match.games[seat], tallies[seat])
                              if player is None else
                              functools.partial(play_seat, match.games[seat], match.observations[seat], player,
                                                tallies[seat], seat == first_agent))
             for seat, player in enumerate(seats)}
    stopped = False
    try:
        if on_start is not None:
            on_start(match.port)
        bounds = {seat: PERSON_STEP_TIMEOUT_SECONDS if player is None else step_timeout
                  for seat, player in enumerate(seats)}
        match.watch(plays, lambda: {seat: tallies[seat].heartbeat for seat, play in plays.items() if not play.done()},
                    bounds)
    except KeyboardInterrupt:
        match.fail("stopped by Ctrl-C")
        stopped = True
    finally:
        match.end()
    error = match.failure
    # The person's engine exits when its window is closed (seen by the watch, or first by the person's own step),
    # or it stops answering, deadlocked in its exit.
    if person and (match.exited_seat == 0 or (plays[0].done() and isinstance(plays[0].exception(), WindowClosed))):
        error, stopped = f"{PERSON} closed the window", True
    elif person and match.late_seat == 0:
        error = f"your game stopped answering for {PERSON_STEP_TIMEOUT_SECONDS:g} s (its window closed?)"
        stopped = True
    return match_result(seats, tallies, error, match.port, stopped), tallies[first_agent].frames


def match_result(seats: list[Agent | None], tallies: list[PlayerTally], error: str | None, port: int,
                 stopped: bool = False) -> MatchResult:
    """A match's result from its players' tallies (`seats`: each seat's agent, None for the person)."""
    frags = [t.scores["frags"] if t.scores else None for t in tallies]
    players = [{"name": player_name(i), "checkpoint": None if player is None else player.checkpoint,
                "person": player is None, "frags": frag, "deaths": t.scores["deaths"] if t.scores else None,
                "place": place}
               for i, (player, t, frag, place) in enumerate(zip(seats, tallies, frags, places(frags)))]
    first_agent = next(i for i, player in enumerate(seats) if player is not None)
    return MatchResult(error is None, error, port, tallies[first_agent].steps, players, [], stopped)


def warn_of_retry(number: int, lost: MatchLost) -> None:
    """Match `number`'s start failed (nothing was played yet: another program taking the port can make it fail)."""
    print(f"warning: match {number} ended before its first step ({lost}); starting it again on a fresh port",
          file=sys.stderr, flush=True)


def play_matches(model: str, opponents: list[str], out: str, matches: int = 1, bots: int = 0,
                 minutes: float | None = None, scenario: str | None = None, greedy: bool = False, seed: int = 0,
                 video: str = "gif", step_timeout: float = STEP_TIMEOUT_SECONDS,
                 person: bool = False) -> list[MatchResult]:
    """`matches` matches of `model` against `opponents` (and `bots` bots), each `minutes` long (default: the map's
    +timelimit); videos from the model's view and results.json in `out`. With `person`, a person hosts each match
    in a window and `model` and `opponents` join it; a match the person ends (the window closed, Ctrl-C) is the
    last. A match whose start fails starts again once, with a warning; one that fails after it, or twice at its
    start, is recorded as not finished and the next one starts on fresh engines."""
    if person and (problem := display_problem()) is not None:
        raise ConfigError(f"--human: {problem}")
    if video not in VIDEO_FORMATS:
        raise ConfigError(f"--video must be one of {', '.join(VIDEO_FORMATS)}, got {video!r}")
    if bots < 0:
        raise ConfigError(f"--bots must be >= 0, got {bots}")
    if minutes is not None and minutes <= 0:
        raise ConfigError(f"--match-minutes must be > 0, got {minutes}")
    checked = [checked_config(model, "--model")] + [checked_config(path, "--opponent") for path in opponents]
    map_config = match_map(checked[0][1], scenario)
    check_buttons(checked, map_config)
    minutes = minutes or time_limit(map_config.game_args) or DEFAULT_MATCH_MINUTES
    ensure_writable_dir(out, "--out")
    quiet_engines()
    if person:
        show_windows()
    agents = [load_agent(prefix, greedy, seed + i) for i, (prefix, _) in enumerate(checked)]
    seconds_per_frame = agents[0].config.frame_skip / 35.0
    summaries = []
    for index in range(matches):
        result, frames = play_match(agents, map_config, minutes, bots, seed + PLAY_SEED_OFFSET, index, step_timeout,
                                    on_retry=functools.partial(warn_of_retry, index + 1), person=person)
        if result.error is not None and not result.stopped:
            print(f"error: match {index + 1} ended early, its engines killed: {result.error}", file=sys.stderr,
                  flush=True)
        videos = write_video(os.path.join(out, f"match_{index + 1:03d}"), frames, seconds_per_frame, video) \
            if len(frames) > 1 else []
        summaries.append(result._replace(videos=videos))
        if result.stopped:
            break
    results = {
        "scenario": map_config.scenario_path, "minutes": minutes, "bots": bots, "greedy": greedy, "person": person,
        "matches": [{"match": i + 1, **s._asdict()} for i, s in enumerate(summaries)],
    }
    atomic_write_text(os.path.join(out, "results.json"), json.dumps(results, indent=2) + "\n")
    return summaries


def main(model: str, opponents: list[str], out: str, matches: int, bots: int, minutes: float | None,
         scenario: str | None, greedy: bool, seed: int, video: str, person: bool = False) -> int:
    """play.py --opponent, or --human: 0 when every match finished (or the person ended it), 1 when one ended
    early, 2 for bad input."""
    try:
        summaries = play_matches(model, opponents, out, matches, bots, minutes, scenario, greedy, seed, video,
                                 person=person)
    except (ConfigError, CheckpointError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if person:
        return report_person_matches(summaries, out)
    for index, summary in enumerate(summaries, 1):
        scores = ", ".join(f"{p['name']} {p['frags']} frags {p['deaths']} deaths" for p in summary.players)
        state = "" if summary.finished else " (ended early)"
        videos = f" -> {', '.join(summary.videos)}" if summary.videos else ""
        print(f"match {index}{state}: {scores}{videos}")
    print(f"results in {os.path.join(out, 'results.json')}")
    return 0 if all(s.finished for s in summaries) else 1


def report_person_matches(summaries: list[MatchResult], out: str) -> int:
    """play.py --human's report: a line per match, then one per player (frags, deaths, place)."""
    for index, summary in enumerate(summaries, 1):
        state = "played to its time limit" if summary.finished else summary.error if summary.stopped else \
            "ended early"
        videos = f" (the first agent's view: {', '.join(summary.videos)})" if summary.videos else ""
        print(f"match {index}, {state}{videos}")
        for player in summary.players:
            who = f"{PERSON} ({player['name']})" if player["person"] else f"{player['name']} ({player['checkpoint']})"
            print(f"  {who}: {player['frags']} frags, {player['deaths']} deaths, place {player['place']} of "
                  f"{len(summary.players)}")
    print(f"results in {os.path.join(out, 'results.json')}")
    return 0 if all(s.finished or s.stopped for s in summaries) else 1
