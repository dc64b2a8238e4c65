"""play.py's matches: trained checkpoints playing one multiplayer game of ViZDoom together, each agent in its own
engine, with its own checkpoint's config (action set, frame size and stack, game variables, LSTM), on one map.

A match is a fault domain. Its engines talk over a UDP port chosen free for it alone, and each player's engine is
stepped by a thread of its own (ViZDoom releases the GIL while an engine runs; a network game advances a tic only
when every player has sent its input, so one blocked player blocks all). A watchdog in the calling thread ends
the match, with one line on stderr, when a player fails (its engine died) or stops answering (`step_timeout`; the
start, while the host waits for the others, `start_timeout`): every engine of the match is killed and the match is
recorded as not finished. The line names the player whose engine exited when one did (its death stalls every
other player's step, whichever timed out first), else the one whose engine is stopped. Engines start through the
engine leash (envs/engine.py), so none outlives play.py.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import threading
import time
from typing import Any, NamedTuple

import numpy as np

from doom_a3c.algo.rollout import MAX_RECORDED_FRAMES
from doom_a3c.config import TrainConfig
from doom_a3c.envs.doom.action_sets import missing_buttons
from doom_a3c.envs.doom.game import locate_cfg
from doom_a3c.envs.doom.multiplayer import (CONNECT_TIMEOUT_SECONDS, DEFAULT_MATCH_MINUTES, MatchEngines, Seat,
                                            free_udp_port, is_multiplayer, kill_match_engines, player_name,
                                            seat_game_args, time_limit)
from doom_a3c.envs.engine import prepare_leash, quiet_engines
from doom_a3c.envs.factory import make_environment
from doom_a3c.errors import CheckpointError, ConfigError, one_line
from doom_a3c.run.agent import PLAY_SEED_OFFSET, Agent, load_agent
from doom_a3c.run.doom_values import doom_buttons
from doom_a3c.run.recording import VIDEO_FORMATS, write_video
from doom_a3c.run.saved_config import upgrade_saved_config
from doom_a3c.runtime.checkpoint import read_checkpoint, resolve_prefix
from doom_a3c.runtime.files import atomic_write_text, ensure_writable_dir

STEP_TIMEOUT_SECONDS = 30.0  # a player whose step has not returned by then has stalled the match
START_TIMEOUT_SECONDS = CONNECT_TIMEOUT_SECONDS + 30.0  # engines started, the host waiting for the others
MATCH_SEED_STRIDE = 100  # match m's player i plays seed + 10,000 + 100 m + i
WATCH_SECONDS = 0.05  # how often the watchdog looks at the players
FIND_ENGINES_SECONDS = 0.5  # how often it scans for the engines of seats not found yet
START_ATTEMPTS = 2  # a match that ends before its first step is played again on a fresh port, once


class PlayerGame(threading.Thread):
    """One player of a match: its engine made, stepped with its agent until the match ends, its scores read and the
    engine closed. The watchdog reads `heartbeat` (the monotonic time of its last sign of life), `started`,
    `finished` and `error`."""

    def __init__(self, name: str, agent: Agent, config: TrainConfig, seed: int, record: bool):
        super().__init__(name=f"match player {name}", daemon=True)
        self.agent, self.config, self.seed, self.record = agent, config, seed, record
        self.heartbeat = time.monotonic()
        self.started = False  # every engine joined: the match is on
        self.finished = False  # the match ended and the scores were read
        self.error: str | None = None
        self.scores: dict[str, int] | None = None
        self.steps = 0
        self.frames: list[np.ndarray] = []  # the player's screen after each step, when `record`

    def run(self) -> None:
        game = None
        try:
            game = make_environment(self.config, self.seed)  # the host's init waits here for every other player
            observation = game.reset()
            self.started, self.heartbeat = True, time.monotonic()
            self.agent.reset()
            if self.record:
                self.frames.append(np.array(game.screen()))
            while True:
                step = game.step(self.agent.act(observation))
                self.steps, self.heartbeat = self.steps + 1, time.monotonic()
                self.scores = game.scores()
                if step.game_over:
                    break
                observation = step.observation
                if self.record and len(self.frames) < MAX_RECORDED_FRAMES:  # a match's first 4 minutes
                    self.frames.append(np.array(game.screen()))
            self.finished = True
        except BaseException as error:  # an engine killed, lost or refusing: the watchdog reports it
            self.error = one_line(error) or type(error).__name__
        finally:
            if game is not None:
                try:
                    game.close()
                except BaseException:
                    pass


class MatchResult(NamedTuple):
    finished: bool
    error: str | None
    port: int
    steps: int  # the first player's agent steps
    players: list[dict[str, Any]]  # per player: name, checkpoint, frags, deaths, place (None where unknown)
    videos: list[str]


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


def play_match(agents: list[Agent], map_config: TrainConfig, minutes: float, bots: int, seed: int,
               step_timeout: float = STEP_TIMEOUT_SECONDS, start_timeout: float = START_TIMEOUT_SECONDS,
               on_start=None) -> tuple[MatchResult, list[np.ndarray]]:
    """One match of `agents` (the first hosts and is recorded), on a fresh port; its result and the first player's
    screens. `on_start(port)` is called once the players' threads run (tests kill an engine there)."""
    port = free_udp_port()
    seats = [Seat(i, len(agents), port, minutes) for i in range(len(agents))]
    players = [PlayerGame(player_name(i), agent, seat_config(agent.config, map_config, seat, bots), seed + i,
                          record=i == 0) for i, (agent, seat) in enumerate(zip(agents, seats))]
    for player in players:
        player.start()
    if on_start is not None:
        on_start(port)
    error = watch(players, step_timeout, start_timeout, MatchEngines(port, len(players)))
    if error is not None:
        let_starts_end(players, start_timeout)
        kill_match_engines(port)
        for player in players:
            player.join(10.0)
    else:
        for player in players:
            player.join()
    frags = [p.scores["frags"] if p.scores else None for p in players]
    results = [{"name": player_name(i), "checkpoint": p.agent.checkpoint, "frags": frag,
                "deaths": p.scores["deaths"] if p.scores else None, "place": place}
               for i, (p, frag, place) in enumerate(zip(players, frags, places(frags)))]
    return MatchResult(error is None, error, port, players[0].steps, results, []), players[0].frames


def let_starts_end(players: list[PlayerGame], start_timeout: float) -> None:
    """Before a failed match's engines are killed, wait for the players still in their start (up to its bound from
    their last sign of life): ViZDoom 1.3.2 crashes the whole process (a segmentation fault in DoomGame.init) when an
    engine dies before its first frame, as self-play's _end_match waits (doom_a3c/envs/doom/self_play.py)."""
    def starting() -> list[PlayerGame]:
        return [p for p in players if p.is_alive() and not p.started and p.error is None]

    while starting() and time.monotonic() < max(p.heartbeat for p in starting()) + start_timeout:
        time.sleep(WATCH_SECONDS)


def watch(players: list[PlayerGame], step_timeout: float, start_timeout: float,
          engines: MatchEngines) -> str | None:
    """Wait for the match to end; None when every player finished, else what ended it (`match_failure`)."""
    last_search = -FIND_ENGINES_SECONDS
    while not all(p.finished for p in players):
        time.sleep(WATCH_SECONDS)
        now = time.monotonic()
        if now - last_search >= FIND_ENGINES_SECONDS:
            engines.find()
            last_search = now
        failure = match_failure(players, engines, now, step_timeout, start_timeout)
        if failure is not None:
            return failure
    return None


def match_failure(players: list[PlayerGame], engines: MatchEngines, now: float, step_timeout: float,
                  start_timeout: float) -> str | None:
    """What ends the match at `now`, or None while it goes on. First a player whose engine exited (its thread's error
    or none: the thread may be blocked in ViZDoom for good), then a player's error, a player's thread that ended
    early, and last a step (or the start) not returned within its bound. Any blocked player blocks all, so the
    player whose bound ran out first need not be the cause: a stopped engine's player is named when there is one."""
    def name(index: int) -> str:
        return f"{player_name(index)} ({players[index].agent.checkpoint})"

    for index in engines.exited():
        if not players[index].finished:  # a finished player's engine closes
            return f"player {name(index)} failed: {players[index].error or 'its engine exited'}"
    for index, player in enumerate(players):
        if player.error is not None:
            return f"player {name(index)} failed: {player.error}"
        if not player.is_alive() and not player.finished:
            return f"player {name(index)} stopped"
    for index, player in enumerate(players):
        bound = step_timeout if player.started else start_timeout
        if not player.finished and now - player.heartbeat > bound:
            what = "step" if player.started else "engine start (every player joining the host)"
            stopped = [i for i in engines.stopped() if not players[i].finished]
            if stopped:
                return f"player {name(stopped[0])}'s engine is stopped: the match's {what} did not return within " \
                       f"{bound:g} s"
            return f"player {name(index)}'s {what} did not return within {bound:g} s"
    return None


def play_matches(model: str, opponents: list[str], out: str, matches: int = 1, bots: int = 0,
                 minutes: float | None = None, scenario: str | None = None, greedy: bool = False, seed: int = 0,
                 video: str = "gif", step_timeout: float = STEP_TIMEOUT_SECONDS) -> list[MatchResult]:
    """`matches` matches of `model` against `opponents` (and `bots` bots), each `minutes` long (default: the map's
    +timelimit); videos from the model's view and results.json in `out`. A match that ends before its first step
    starts again once, with a warning; one that fails after it, or twice before it, is recorded as not finished and
    the next one starts on fresh engines."""
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
    import vizdoom

    prepare_leash(vizdoom)  # here, before the players' threads start engines side by side
    agents = [load_agent(prefix, greedy, seed + i) for i, (prefix, _) in enumerate(checked)]
    seconds_per_frame = agents[0].config.frame_skip / 35.0
    summaries = []
    for index in range(matches):
        match_seed = seed + PLAY_SEED_OFFSET + MATCH_SEED_STRIDE * index
        for attempt in range(1, START_ATTEMPTS + 1):
            result, frames = play_match(agents, map_config, minutes, bots, match_seed, step_timeout)
            if result.error is None or result.steps > 0 or attempt == START_ATTEMPTS:
                break
            # Nothing was played yet: the start failed, as another program taking the port can make it fail.
            print(f"warning: match {index + 1} ended before its first step ({result.error}); starting it again on "
                  f"a fresh port", file=sys.stderr, flush=True)
        if result.error is not None:
            print(f"error: match {index + 1} ended early, its engines killed: {result.error}", file=sys.stderr,
                  flush=True)
        videos = write_video(os.path.join(out, f"match_{index + 1:03d}"), frames, seconds_per_frame, video) \
            if len(frames) > 1 else []
        summaries.append(result._replace(videos=videos))
    results = {
        "scenario": map_config.scenario_path, "minutes": minutes, "bots": bots, "greedy": greedy,
        "matches": [{"match": i + 1, **s._asdict()} for i, s in enumerate(summaries)],
    }
    atomic_write_text(os.path.join(out, "results.json"), json.dumps(results, indent=2) + "\n")
    return summaries


def main(model: str, opponents: list[str], out: str, matches: int, bots: int, minutes: float | None,
         scenario: str | None, greedy: bool, seed: int, video: str) -> int:
    """play.py --opponent: 0 when every match finished, 1 when one ended early, 2 for bad input."""
    try:
        summaries = play_matches(model, opponents, out, matches, bots, minutes, scenario, greedy, seed, video)
    except (ConfigError, CheckpointError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for index, summary in enumerate(summaries, 1):
        scores = ", ".join(f"{p['name']} {p['frags']} frags {p['deaths']} deaths" for p in summary.players)
        state = "" if summary.finished else " (ended early)"
        videos = f" -> {', '.join(summary.videos)}" if summary.videos else ""
        print(f"match {index}{state}: {scores}{videos}")
    print(f"results in {os.path.join(out, 'results.json')}")
    return 0 if all(s.finished for s in summaries) else 1
