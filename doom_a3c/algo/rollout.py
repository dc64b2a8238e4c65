"""Games -> rollouts, the same for every mode: sampling (and epsilon), learning rewards, episode reports, GIFs.

Where the logits come from is a `Policy`'s business: a worker's local copy (A3C, Ray) or the GA3C predictor.
"""
from __future__ import annotations

import time
from typing import NamedTuple, Protocol

import numpy as np

from doom_a3c.algo.exploration import EpsilonSchedule, apply_epsilon
from doom_a3c.algo.model.actor_critic import LSTMState
from doom_a3c.config import TrainConfig
from doom_a3c.envs.batch import GameBatch
from doom_a3c.runtime.state import EpisodeResult, RunState, group_restarts

# A recorded episode keeps its first frames only: 2,100 are 4 minutes of Doom at frame skip 4 (Sample Factory's match
# length). A whole 12-minute cig match made a 153 MB GIF, whose writing stalled its worker for about 100 s.
MAX_RECORDED_FRAMES = 2100


class Rollout(NamedTuple):
    observations: np.ndarray  # [T, B, *obs]
    actions: np.ndarray  # [T, B] int32
    rewards: np.ndarray  # [T, B] float32, game reward + shaping, scaled for learning (learning_targets clips)
    dones: np.ndarray  # [T, B] float32, 1 where the episode ended at this step (a terminal or a time limit)
    starts: np.ndarray  # [T, B] float32, 1 where the episode began at this step (LSTM reset)
    values: np.ndarray  # [T, B] float32, V(s_t) from acting
    initial_state: LSTMState  # [B, L] each, before step 0
    bootstrap_values: np.ndarray  # [B], V(s_T)
    end_values: np.ndarray  # [T, B] float32, where dones: V(final observation) after a time limit, 0 after a terminal
    # [T, B] float32, log pi(a_t | s_t) of the policy that chose the actions (before epsilon): the clipped passes'
    # denominator. None in a rollout made by hand (a test) that only the one-pass A3C update reads.
    log_probs: np.ndarray | None = None


def concatenate_rollouts(rollouts: list[Rollout]) -> Rollout:
    """[T, B_i] rollouts -> one [T, sum B_i] rollout (games side by side)."""
    if len(rollouts) == 1:
        return rollouts[0]
    per_step = {name: np.concatenate([getattr(r, name) for r in rollouts], axis=1)
                for name in ("observations", "actions", "rewards", "dones", "starts", "values", "end_values")}
    if all(r.log_probs is not None for r in rollouts):
        per_step["log_probs"] = np.concatenate([r.log_probs for r in rollouts], axis=1)
    state = LSTMState(np.concatenate([r.initial_state.h for r in rollouts]),
                      np.concatenate([r.initial_state.c for r in rollouts]))
    return Rollout(**per_step, initial_state=state,
                   bootstrap_values=np.concatenate([r.bootstrap_values for r in rollouts]))


class Policy(Protocol):
    def start_state(self) -> LSTMState:
        """The LSTM state [B, L] each (NumPy) that the next `act` starts from."""

    def act(self, observations: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """logits [B, A] and values [B] for this step; advances the LSTM state."""

    def value(self, observations: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """values [B] of the observations after a rollout; leaves the LSTM state alone."""


def sample_actions(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One action per row of logits [B, A], drawn from their softmax; [B] int32."""
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    cumulative = np.cumsum(probs, axis=1)
    draws = rng.random((len(logits), 1)) * cumulative[:, -1:]
    return np.minimum((cumulative < draws).sum(axis=1), logits.shape[1] - 1).astype(np.int32)


def log_probabilities(logits: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """log pi(a | s) of the chosen actions under the softmax of logits [B, A]; [B] float32."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return np.take_along_axis(log_probs, actions[:, None].astype(np.int64), axis=1)[:, 0].astype(np.float32)


class GameRunner:
    """Plays one batch of games with a policy and turns them into rollouts; queues finished episodes (true
    scores) and restarted games on the run state, and records game 0's episodes as GIF frames every
    `record_every` episodes."""

    def __init__(self, index: int, config: TrainConfig, games: GameBatch, policy: Policy, run: RunState,
                 seed: int, record_every: int = 0, epsilon: EpsilonSchedule | None = None):
        self.index = index
        self.games = games
        self.policy = policy
        self.run = run
        self.reward_scale = config.reward_scale
        self.record_every = record_every
        self.video_tics = config.video_tics  # ViZDoom: record game 0 tic by tic (costs the trainer speed)
        self.epsilon = epsilon  # None: act on the policy alone
        self.rng = np.random.default_rng(seed)
        batch = len(games)
        self._bot_level: int | None = None  # the level the games were last told (None: full strength)
        self._follow_bot_level()
        self._observations = games.reset()  # [B, *obs]
        for restart in group_restarts(index, games.take_start_failures()):  # nothing played: only the restart
            self.run.restarts.put(restart)
        self._starts = np.ones(batch, np.float32)
        self._episode_reward = np.zeros(batch)
        self._episode_length = np.zeros(batch, np.int64)
        self._episode_value_sum = np.zeros(batch)
        self._recorded_episodes = 0  # episodes of game 0, for GIF selection
        # Game time per recorded frame while game 0 records every tic (ViZDoom); 0.0: a frame per step.
        self._seconds_per_tic = 0.0
        self._frames: list[np.ndarray] | None = self._maybe_start_recording()

    def _maybe_start_recording(self) -> list[np.ndarray] | None:
        if self.record_every and self._recorded_episodes % self.record_every == 0:
            if self.video_tics:
                self._seconds_per_tic = self.games.record_tics(0, True)
            return [self.games.screen(0).copy()]
        if self._seconds_per_tic:  # stepping tic by tic renders every tic: only while recording
            self.games.record_tics(0, False)
            self._seconds_per_tic = 0.0
        return None

    def _follow_bot_level(self) -> None:
        """--bot-curriculum: tell the games the run's bot level when it moved; they play it from their next match."""
        level = self.run.counters.bot_level
        if level != self._bot_level:
            self.games.set_bot_level(level)
            self._bot_level = level

    def _choose(self, logits: np.ndarray) -> np.ndarray:
        actions = sample_actions(logits, self.rng)
        if self.epsilon is not None:  # epsilon-greedy on top of the sampled policy
            actions = apply_epsilon(actions, logits.shape[1], self.epsilon.at(self.run.counters.env_steps), self.rng)
        return actions

    def collect(self, steps: int) -> Rollout:
        self.run.wait_if_budget_spent()
        self._follow_bot_level()
        batch = len(self.games)
        observations = np.empty((steps, batch, *self._observations.shape[1:]), self._observations.dtype)
        actions = np.empty((steps, batch), np.int32)
        rewards = np.empty((steps, batch), np.float32)
        dones = np.empty((steps, batch), np.float32)
        starts = np.empty((steps, batch), np.float32)
        values = np.empty((steps, batch), np.float32)
        log_probs = np.empty((steps, batch), np.float32)
        end_values = np.zeros((steps, batch), np.float32)
        initial_state = self.policy.start_state()
        for t in range(steps):
            logits, step_values = self.policy.act(self._observations, self._starts)
            chosen = self._choose(logits)
            observations[t], actions[t], starts[t], values[t] = self._observations, chosen, self._starts, step_values
            log_probs[t] = log_probabilities(logits, chosen)
            self.run.steps_sent[self.index] = time.monotonic()
            try:
                result = self.games.step(chosen)
            finally:
                del self.run.steps_sent[self.index]
            # Learning sees the shaped reward; the episode reports keep the game's own score.
            rewards[t], dones[t] = (result.rewards + result.shaping) * self.reward_scale, result.dones | result.truncated
            if result.final_observations is not None:
                # A time limit is no terminal: bootstrap from the last observation's value, taken with the LSTM
                # state that would have seen it next (no reset), before the new game's reset.
                final_values = self.policy.value(result.final_observations, np.zeros(batch, np.float32))
                end_values[t] = np.where(result.truncated, final_values, 0.0)
            if self._frames is not None and self._seconds_per_tic and not result.crashes[0]:
                self._frames.extend(self.games.step_screens(0))  # the episode's last step's tics too
                del self._frames[MAX_RECORDED_FRAMES:]
            self._track_episodes(result.rewards, values[t], result.game_overs, result.matches)  # true scores
            self._drop_crashed(result.crashes)
            if (self._frames is not None and not self._seconds_per_tic and len(self._frames) < MAX_RECORDED_FRAMES
                    and not (result.game_overs[0] or result.crashes[0])):
                self._frames.append(self.games.screen(0).copy())
            self._observations = result.observations
            self._starts = dones[t].copy()
        self.run.counters.add_steps(steps * batch)
        bootstrap = self.policy.value(self._observations, self._starts)
        return Rollout(observations, actions, rewards, dones, starts, values, initial_state, bootstrap, end_values,
                       log_probs)

    def _track_episodes(self, rewards: np.ndarray, values: np.ndarray, game_overs: np.ndarray,
                        matches: np.ndarray | None = None) -> None:
        self._episode_reward += rewards
        self._episode_length += 1
        self._episode_value_sum += values
        for b in np.flatnonzero(game_overs):
            recorded = b == 0 and self._frames is not None
            self.run.episodes.put(EpisodeResult(
                self.index, float(self._episode_reward[b]), int(self._episode_length[b]),
                float(self._episode_value_sum[b] / self._episode_length[b]), self._frames if recorded else None,
                self._seconds_per_tic if recorded else 0.0, None if matches is None else matches[b]))
            self._episode_reward[b] = self._episode_length[b] = self._episode_value_sum[b] = 0
            if b == 0:
                self._recorded_episodes += 1
                # The game has already been reset: the new episode's first screen is on display.
                self._frames = self._maybe_start_recording()

    def _drop_crashed(self, crashes: np.ndarray) -> None:
        """A restarted game's unfinished episode is never reported: nothing counts it."""
        crashed = np.flatnonzero(crashes != "")
        for restart in group_restarts(self.index, [(int(b), str(crashes[b])) for b in crashed]):
            self.run.restarts.put(restart)
        for b in crashed:
            self._episode_reward[b] = self._episode_length[b] = self._episode_value_sum[b] = 0
            if b == 0 and self._frames is not None:
                self._frames = [self.games.screen(0).copy()]  # the recording starts over with the new game
                if self._seconds_per_tic:
                    self.games.record_tics(0, True)  # a new game object: tell it again

    def close(self) -> None:
        self.games.close()
