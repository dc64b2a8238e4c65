"""What the threads of one process share while a run goes on: counters, the stop flag, finished episodes,
restarted games, the latest training metrics and the first error."""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from doom_a3c.errors import GameProcessLost, Stopped


class EpisodeResult(NamedTuple):
    worker: int
    reward: float  # the game's own score, unscaled
    length: int
    mean_value: float
    frames: list[np.ndarray] | None  # full-resolution RGB screens, when this episode was recorded
    seconds_per_frame: float = 0.0  # game time per recorded frame: a ViZDoom tic; 0.0 = one frame per step
    match: dict | None = None  # a deathmatch's report of the match: frags, deaths, frags_per_minute, place, players


class GameRestart(NamedTuple):
    """One fault: game `game` of a worker's batch, and the `count` - 1 games after it that went with it (a game
    process replaced with all its games), closed and restarted."""

    worker: int
    game: int  # index in the worker's batch
    reason: str  # the error that ended the old game, one line
    count: int = 1

    def games(self) -> str:
        return f"game {self.game}" if self.count == 1 else f"games {self.game}-{self.game + self.count - 1}"


def group_restarts(worker: int, failed: list[tuple[int, str]]) -> list[GameRestart]:
    """(game, why) pairs of one step -> one GameRestart per fault: the games of one replaced game process (their
    GameProcessLost reason names the process) are one; games that crashed each on its own stay apart, even with the
    same message."""
    restarts: list[GameRestart] = []
    for game, why in sorted(failed):
        last = restarts[-1] if restarts else None
        one_process = why.startswith(f"{GameProcessLost.__name__}:")
        if one_process and last is not None and last.reason == why and last.game + last.count == game:
            restarts[-1] = last._replace(count=last.count + 1)
        else:
            restarts.append(GameRestart(worker, game, why))
    return restarts


class TrainMetrics(NamedTuple):
    policy_loss: float  # per step
    value_loss: float
    entropy: float
    grad_norm: float  # before clipping
    var_norm: float
    applied: bool  # False when the gradient was not finite and was dropped
    policy_lag: float | None = None  # GA3C: mean global updates between acting and training (A3C: None)
    entropy_weight: float | None = None  # the entropy bonus's weight (moves with --entropy-target)
    approx_kl: float | None = None  # --epochs/--minibatches: how far the passes moved the policy from the acting one
    clip_fraction: float | None = None  # the same: share of the steps whose probability ratio was clipped
    update_share: float | None = None  # share of the thread's time since its previous rollout spent in its updates
    enemy_loss: float | None = None  # --enemy-coef: the enemy-in-view head's cross-entropy per step


@dataclass
class Counters:
    """The run's step and update counts, safe to bump from any thread; and, with --bot-curriculum, the bots' level."""

    env_steps: int = 0
    updates: int = 0
    skipped_updates: int = 0
    # --bot-curriculum: the level training games play their next matches at, 0 to 5 (doom_a3c/envs/doom/bot_levels.py),
    # moved by the coordinator alone and saved with the checkpoint; None: the bots at full strength, no curriculum
    bot_level: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add_steps(self, count: int) -> None:
        with self.lock:
            self.env_steps += count

    def count_update(self, applied: bool) -> None:
        with self.lock:
            self.updates += 1
            self.skipped_updates += 0 if applied else 1

    def raise_to(self, env_steps: int, updates: int, skipped_updates: int) -> None:
        """Take counts reported from elsewhere (a Ray parameter server); replies can arrive out of order,
        and counters only grow."""
        with self.lock:
            self.env_steps = max(self.env_steps, env_steps)
            self.updates = max(self.updates, updates)
            self.skipped_updates = max(self.skipped_updates, skipped_updates)


@dataclass
class RunState:
    counters: Counters = field(default_factory=Counters)
    stop: threading.Event = field(default_factory=threading.Event)
    max_steps: int = 0  # --max-steps (0: none): no rollout starts once the run's env steps reach it
    episodes: "queue.Queue[EpisodeResult]" = field(default_factory=queue.Queue)
    restarts: "queue.Queue[GameRestart]" = field(default_factory=queue.Queue)
    latest_metrics: dict[int, TrainMetrics] = field(default_factory=dict)
    # time.monotonic() at which each worker's (runner's) game step under way was sent, absent between steps: only a
    # step not yet answered is the games' silence, never the worker's own acting, learning or GIF writing
    steps_sent: dict[int, float] = field(default_factory=dict)
    errors: list[BaseException] = field(default_factory=list)

    def fail(self, error: BaseException) -> None:
        """Record a thread's error and stop the run (the coordinator reports the first one)."""
        with self.counters.lock:
            self.errors.append(error)
        self.stop.set()

    def wait_if_budget_spent(self) -> None:
        """A runner starts no rollout past --max-steps: it waits for the coordinator's stop (checked every 0.2 s,
        later while it writes a GIF, when fast games had run hundreds of steps past the budget), then leaves."""
        if self.max_steps and self.counters.env_steps >= self.max_steps:
            self.stop.wait()
            raise Stopped

    def finished_episodes(self) -> list[EpisodeResult]:
        """The episodes queued now (more may come while this runs: they wait for the next call)."""
        return _drain(self.episodes)

    def game_restarts(self) -> list[GameRestart]:
        """The game restarts queued now."""
        return _drain(self.restarts)


def _drain(source: queue.Queue) -> list:
    return [source.get_nowait() for _ in range(source.qsize())]
