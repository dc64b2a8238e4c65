"""Evaluation during training: every --eval-every-minutes, and once more when the run ends, the global weights
play --eval-episodes whole episodes on games of their own, in a thread of its own so that training goes on. A
periodic evaluation due at the end of --max-minutes (every 5 minutes in a 5-minute run) is left to the final one,
which plays the same weights a moment later.

The evaluator's network is a copy built in the main thread at start (Keras builds models there); each evaluation
loads a snapshot of the global weights into it and plays with it, then hands its result to the coordinator and
waits until the coordinator has handled it. The copy therefore still holds exactly the evaluated weights when the
coordinator saves it as best.ckpt, whatever the global network has learnt since.

The games, built at the first evaluation, are made as training's (make_env_batch: ViZDoom's in child processes
under the --game-timeout watchdog, a crashed game restarted), seeded apart from training's and play.py's. A
restarted game's unfinished episode is dropped and the game plays another. `abort` (Ctrl-C, SIGTERM, a failed
run) ends an evaluation within a step, or within the watchdog's poll when a game does not answer.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Callable, NamedTuple

import numpy as np

from doom_a3c.algo.local_copy import LocalCopy
from doom_a3c.algo.rollout import sample_actions
from doom_a3c.config import TrainConfig
from doom_a3c.envs.batch import GameBatch
from doom_a3c.envs.factory import make_env_batch
from doom_a3c.envs.interface import EnvSpec
from doom_a3c.errors import Stopped
from doom_a3c.modes.build import build_network
from doom_a3c.modes.threads import close_games_within
from doom_a3c.runtime.state import Counters

EVAL_SEED_OFFSET = 20_000  # apart from training's games (seed + 1000 w + e, for w < 20) and play's (+ 10,000)
JOIN_SECONDS = 10.0  # for the evaluator to end once aborted (a stalled game in this process can hold it longer)
# A periodic evaluation due this close to the end of --max-minutes, or after it, is the final one's: the run's clock
# starts a little before the evaluator's and looks at the budget every 0.2 s.
END_MARGIN_SECONDS = 1.0


class EvalResult(NamedTuple):
    """One evaluation: the weights of the global network at `env_steps`, and the scores they played."""

    wall_seconds: float
    env_steps: int
    updates: int
    scores: list[float]  # the game's own score of each episode
    restarts: list[str]  # why each restarted game failed (its episode was dropped and played again)

    def row(self) -> dict[str, float]:
        """eval.csv's row (summaries.EVAL_FIELDS)."""
        scores = np.asarray(self.scores, np.float64)
        return {"wall_s": round(self.wall_seconds, 2), "env_steps": self.env_steps, "episodes": len(scores),
                "mean": float(scores.mean()), "std": float(scores.std()), "min": float(scores.min()),
                "max": float(scores.max())}


def improves(mean: float, best: float | None) -> bool:
    """True when an evaluation's mean beats the best so far (None: no evaluation yet); a tie keeps the older."""
    return best is None or mean > best


def due_before_the_end(seconds: float, max_minutes: float) -> bool:
    """Whether a periodic evaluation due `seconds` after the start comes before the end of --max-minutes (always
    without that budget, 0); one due at the end would play the weights the final evaluation plays."""
    return not max_minutes or seconds < max_minutes * 60.0 - END_MARGIN_SECONDS


def episode_targets(episodes: int, games: int) -> list[int]:
    """Each game's share of `episodes`: fixed before playing, so that games with short episodes do not fill the
    evaluation with them (Stable-Baselines3's evaluate_policy does the same)."""
    return [(episodes + game) // games for game in range(games)]


def play_episodes(games: GameBatch, policy: LocalCopy, episodes: int, greedy: bool, rng: np.random.Generator,
                  abort: threading.Event) -> tuple[list[float], list[str]]:
    """`episodes` whole episodes of `policy` on `games`, side by side: (their scores, restart reasons). An
    episode ends at the game's real end; the LSTM state resets where training resets it (an Atari life loss).
    Raises Stopped once `abort` is set."""
    targets = episode_targets(episodes, len(games))
    finished = [0] * len(games)
    totals = np.zeros(len(games), np.float64)
    scores: list[float] = []
    restarts = [why for _, why in games.take_start_failures()]
    observations = games.reset()
    restarts += [why for _, why in games.take_start_failures()]
    starts = np.ones(len(games), np.float32)
    while any(done < target for done, target in zip(finished, targets)):
        if abort.is_set():
            raise Stopped
        logits, _ = policy.act(observations, starts)
        actions = logits.argmax(axis=1) if greedy else sample_actions(logits, rng)
        step = games.step(actions)
        totals += step.rewards
        for game in np.flatnonzero(step.game_overs | (step.crashes != "")):
            if step.crashes[game]:
                restarts.append(str(step.crashes[game]))
            elif finished[game] < targets[game]:
                scores.append(float(totals[game]))
                finished[game] += 1
            totals[game] = 0.0
        starts = (step.dones | step.game_overs).astype(np.float32)
        observations = step.observations
    return scores, restarts


class Evaluator:
    """The evaluation thread and its games and network. Build it in the main thread; `start` it with the clock
    and weights of the run; take its results with `results()` and acknowledge each with `handled()`."""

    def __init__(self, config: TrainConfig, spec: EnvSpec, counters: Counters):
        self.config = config
        self.counters = counters
        self.abort = threading.Event()  # also the games' stop flag: no wait on a game outlasts it by much
        self._finish = threading.Event()  # the run ended: one last evaluation of the final weights, then stop
        self._handled = threading.Event()
        self._results: queue.Queue[EvalResult | BaseException] = queue.Queue()
        self._seeds = [config.seed + EVAL_SEED_OFFSET + game for game in range(min(config.eval_episodes,
                                                                                  config.envs_per_worker))]
        self.games: GameBatch | None = None  # built by the first evaluation: no idle engines before it
        self.policy = LocalCopy(build_network(config, spec, "evaluation"), config, len(self._seeds))
        self.net = self.policy.net
        self._rng = np.random.default_rng(config.seed + EVAL_SEED_OFFSET)
        self._thread: threading.Thread | None = None
        self._weights: Callable[[], list[np.ndarray]] = list
        self._wall_seconds: Callable[[], float] = float

    def start(self, weights: Callable[[], list[np.ndarray]], wall_seconds: Callable[[], float]) -> None:
        self._weights, self._wall_seconds = weights, wall_seconds
        self._thread = threading.Thread(target=self._run_thread, name="evaluator", daemon=True)
        self._thread.start()

    def _run_thread(self) -> None:
        interval = self.config.eval_every_minutes * 60.0
        started = time.monotonic()
        intervals = 1  # the next periodic evaluation is due this many intervals after the start
        try:
            while not self.abort.is_set():
                if due_before_the_end(intervals * interval, self.config.max_minutes):
                    self._finish.wait(max(0.0, started + intervals * interval - time.monotonic()))
                else:  # due at the end of the run: the final evaluation plays those weights
                    self._finish.wait()
                if self.abort.is_set():
                    return
                final = self._finish.is_set()
                self._evaluate()
                if final:
                    return
                while started + intervals * interval <= time.monotonic():  # one that outlasted the interval:
                    intervals += 1  # the next one due
        except Stopped:  # aborted while a game did not answer
            pass
        except BaseException as error:  # noqa: BLE001 - the coordinator reports it; training goes on
            self._results.put(error)

    def _evaluate(self) -> None:
        env_steps, updates = self.counters.env_steps, self.counters.updates
        wall_seconds = self._wall_seconds()
        self.policy.load(self._weights())
        if self.games is None:
            self.games = make_env_batch(self.config, self._seeds, stop=self.abort)
        scores, restarts = play_episodes(self.games, self.policy, self.config.eval_episodes, self.config.eval_greedy,
                                         self._rng, self.abort)
        self._handled.clear()
        self._results.put(EvalResult(wall_seconds, env_steps, updates, scores, restarts))
        while not (self._handled.wait(0.2) or self.abort.is_set()):  # the copy must hold these weights until then
            pass

    def results(self) -> list[EvalResult | BaseException]:
        """The evaluations finished since the last call (an error ends the evaluations, not the run)."""
        return [self._results.get_nowait() for _ in range(self._results.qsize())]

    def handled(self) -> None:
        """The coordinator is done with the last result: the network may take the next weights."""
        self._handled.set()

    def finish(self) -> None:
        """The run ended normally: after the evaluation under way, one more of the final weights."""
        self._finish.set()

    def stop_now(self) -> None:
        """Ctrl-C, SIGTERM, a failed run: end an evaluation under way and wake the thread from its wait."""
        self.abort.set()
        self._finish.set()  # the thread checks `abort` first once awake: no final evaluation

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def close(self) -> None:
        """Abort whatever runs and close the games (bounded, as training's)."""
        self.stop_now()
        if self._thread is not None:
            self._thread.join(timeout=JOIN_SECONDS)
        if self.games is not None:
            close_games_within(self.games.close, "the evaluation games")

