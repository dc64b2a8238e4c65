"""Truncation is not termination: a game ended by a time limit bootstraps from the value of its last observation
(in GAE, discounted returns and n-step targets), while the LSTM state still resets for the next game."""
import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from doom_a3c.algo.learner import learning_targets
from doom_a3c.algo.model.actor_critic import LSTMState
from doom_a3c.algo.returns import discounted_returns, generalized_advantages, n_step_targets
from doom_a3c.algo.rollout import GameRunner
from doom_a3c.config import TrainConfig
from doom_a3c.envs.batch import EnvBatch
from doom_a3c.envs.interface import Step
from doom_a3c.envs.process_batch import ProcessEnvBatch
from doom_a3c.runtime.state import RunState

GAMMA = 0.9
# One rollout of 5 steps, reward 1 each, an episode end after step 2, the rollout cut after step 4 (V(s_5) = 2).
# Column 0: the end was a time limit whose last observation is worth 5; column 1: the same steps, a terminal.
REWARDS = np.ones((5, 2), np.float32)
VALUES = np.tile(np.array([[0.5], [0.6], [0.7], [0.8], [0.9]], np.float32), (1, 2))
DONES = np.zeros((5, 2), np.float32)
DONES[2] = 1.0
END_VALUES = np.zeros((5, 2), np.float32)
END_VALUES[2, 0] = 5.0
BOOTSTRAP = np.array([2.0, 2.0], np.float32)


def test_discounted_returns_bootstrap_a_truncation_from_its_end_value():
    returns = discounted_returns(REWARDS, DONES, BOOTSTRAP, GAMMA, END_VALUES)
    # t=2: 1 + 0.9 * 5 = 5.5; t=1: 1 + 0.9 * 5.5; t=0: 1 + 0.9 * 5.95. Terminal: 1, 1.9, 2.71.
    # After the end both columns go on alike: t=4: 1 + 0.9 * 2 = 2.8, t=3: 1 + 0.9 * 2.8 = 3.52.
    np.testing.assert_allclose(returns[:, 0], [6.355, 5.95, 5.5, 3.52, 2.8], rtol=1e-6)
    np.testing.assert_allclose(returns[:, 1], [2.71, 1.9, 1.0, 3.52, 2.8], rtol=1e-6)
    np.testing.assert_allclose(discounted_returns(REWARDS, DONES, BOOTSTRAP, GAMMA)[:, 0], returns[:, 1])  # default


def test_gae_bootstraps_a_truncation_from_its_end_value():
    advantages = generalized_advantages(REWARDS, VALUES, DONES, BOOTSTRAP, GAMMA, 0.5, END_VALUES)
    # deltas: t=0: 1 + 0.9*0.6 - 0.5 = 1.04; t=1: 1 + 0.9*0.7 - 0.6 = 1.03; t=2: 1 + 0.9*5 - 0.7 = 4.8 (terminal:
    # 1 - 0.7 = 0.3); t=3: 1 + 0.9*0.9 - 0.8 = 1.01; t=4: 1 + 0.9*2 - 0.9 = 1.9. gamma * lambda = 0.45.
    a2 = 4.8
    a1 = 1.03 + 0.45 * a2
    a0 = 1.04 + 0.45 * a1
    a4 = 1.9
    a3 = 1.01 + 0.45 * a4
    np.testing.assert_allclose(advantages[:, 0], [a0, a1, a2, a3, a4], rtol=1e-6)
    t2 = 0.3
    t1 = 1.03 + 0.45 * t2
    np.testing.assert_allclose(advantages[:, 1], [1.04 + 0.45 * t1, t1, t2, a3, a4], rtol=1e-6)


@pytest.mark.parametrize("variant,last", [("max", 2.8), ("zero", 1.0)])
def test_n_step_targets_bootstrap_a_truncation_from_its_end_value_in_both_variants(variant, last):
    targets = n_step_targets(REWARDS, VALUES, DONES, BOOTSTRAP, GAMMA, 2, variant, END_VALUES)
    # n = 2. t=0: 1 + 0.9 + 0.81 V(s_2) = 2.467; t=1: 1 + 0.9 + 0.81 * 5 = 5.95; t=2: 1 + 0.9 * 5 = 5.5. The end
    # value is data both variants have; they differ only at the rollout's cut: t=3 = 1 + 0.9 + 0.81 * 2 = 3.52,
    # t=4 = 1 + 0.9 * 2 ("max") or 1 ("zero": V(s_6) is beyond the data).
    np.testing.assert_allclose(targets[:, 0], [2.467, 5.95, 5.5, 3.52, last], rtol=1e-6)
    np.testing.assert_allclose(targets[:, 1], [2.467, 1.9, 1.0, 3.52, last], rtol=1e-6)


def test_learning_targets_take_the_rollouts_end_values():
    from support import fake_rollout

    rollout = fake_rollout(REWARDS, DONES, VALUES, BOOTSTRAP)._replace(end_values=END_VALUES)
    config = TrainConfig(scenario="CartPole-v1", gamma=GAMMA, gae_lambda=1.0, reward_scale=1.0, clip_rewards=False)
    returns, advantages = learning_targets(config, rollout)
    np.testing.assert_allclose(returns[:, 0], [6.355, 5.95, 5.5, 3.52, 2.8], rtol=1e-6)
    np.testing.assert_allclose(advantages, returns - VALUES, rtol=1e-6)
    nstep = dataclasses.replace(config, advantage="nstep", n_step=2)
    np.testing.assert_allclose(learning_targets(nstep, rollout)[0][:, 0], [2.467, 5.95, 5.5, 3.52, 2.8], rtol=1e-6)


# ---- the games and the runner ----------------------------------------------------------------------------------
class TimeLimitEnv:
    """Observation [game, t]; +1 a step; a time limit ends the game after `limit` steps (never a terminal)."""

    num_actions = 2
    action_names = ["a", "b"]
    observation_shape = (2,)
    seconds_per_step = 0.1

    def __init__(self, ident, limit):
        self.ident, self.limit = ident, limit

    def reset(self):
        self.t = 0
        return np.array([self.ident, 0], np.float32)

    def step(self, action):
        self.t += 1
        ended = self.t == self.limit
        return Step(np.array([self.ident, self.t], np.float32), 1.0, False, ended, truncated=ended)

    def screen(self):
        return np.zeros((4, 4, 3), np.uint8)

    def close(self):
        pass


def test_a_truncated_game_is_reset_and_its_last_observation_kept():
    batch = EnvBatch([TimeLimitEnv(0, 2), TimeLimitEnv(1, 5)], threads=2)
    batch.reset()
    first = batch.step(np.zeros(2, int))
    assert first.final_observations is None and not first.truncated.any()  # nothing to ship when none ended
    second = batch.step(np.zeros(2, int))
    assert second.truncated.tolist() == [True, False] and second.game_overs.tolist() == [True, False]
    assert second.dones.tolist() == [False, False]  # no terminal
    np.testing.assert_array_equal(second.final_observations[0], [0, 2])  # the last observation of game 0
    np.testing.assert_array_equal(second.observations, [[0, 0], [1, 2]])  # game 0 already reset
    batch.close()


def time_limit_games():
    return [lambda: TimeLimitEnv(0, 5), lambda: TimeLimitEnv(1, 2), lambda: TimeLimitEnv(2, 5)]


@pytest.mark.slow
def test_child_processes_send_the_last_observation_of_a_truncated_game():
    batch = ProcessEnvBatch(time_limit_games(), processes=2)
    try:
        batch.reset()
        batch.step(np.zeros(3, int))
        second = batch.step(np.zeros(3, int))
        assert second.truncated.tolist() == [False, True, False]
        np.testing.assert_array_equal(second.final_observations[1], [1, 2])
    finally:
        batch.close()


class RecordingPolicy:
    """Value = 10 x the observation's step count; records each value() call's observations and starts."""

    def __init__(self):
        self.value_calls = []

    def start_state(self):
        return LSTMState(np.zeros((2, 0), np.float32), np.zeros((2, 0), np.float32))

    def act(self, observations, starts):
        return np.zeros((len(observations), 2), np.float32), 10 * observations[:, 1]

    def value(self, observations, starts):
        self.value_calls.append((observations.copy(), starts.copy()))
        return 10 * observations[:, 1]


def test_the_runner_bootstraps_a_truncation_and_still_resets_the_lstm():
    policy, run = RecordingPolicy(), RunState()
    games = EnvBatch([TimeLimitEnv(0, 3), TimeLimitEnv(1, 10)])
    rollout = GameRunner(0, TrainConfig(reward_scale=1.0), games, policy, run, seed=0).collect(5)
    # Game 0's time limit at step 2 (its third step): an episode end whose value is V([0, 3]) = 30.
    np.testing.assert_array_equal(rollout.dones[:, 0], [0, 0, 1, 0, 0])
    np.testing.assert_array_equal(rollout.starts[:, 0], [1, 0, 0, 1, 0])  # the LSTM resets for the new game
    np.testing.assert_array_equal(rollout.end_values[:, 0], [0, 0, 30, 0, 0])
    np.testing.assert_array_equal(rollout.end_values[:, 1], 0)
    finals, starts = policy.value_calls[0]
    np.testing.assert_array_equal(finals[0], [0, 3])
    np.testing.assert_array_equal(starts, [0, 0])  # valued as the episode's next state, not a new episode's first
    assert [(e.reward, e.length) for e in run.finished_episodes()] == [(3.0, 3)]  # a whole game, true score


def test_a_gymnasium_time_limit_is_truncation_and_a_fall_is_a_terminal():
    from doom_a3c.envs.gym.games import VectorEnvironment

    env = VectorEnvironment("CartPole-v1", seed=0)
    env._env = gym.make("CartPole-v1", max_episode_steps=3, render_mode="rgb_array")  # a short time limit
    env.reset()
    steps = [env.step(0) for _ in range(3)]
    assert [(s.done, s.game_over, s.truncated) for s in steps] == [(False, False, False)] * 2 + [(False, True, True)]
    env._env = gym.make("CartPole-v1", render_mode="rgb_array")
    env.reset()
    for _ in range(100):  # always pushing left, the pole falls within a few dozen steps
        step = env.step(0)
        if step.game_over:
            break
    assert (step.done, step.game_over, step.truncated) == (True, True, False)
    env.close()


@pytest.mark.parametrize("bootstrap", [False, True])
def test_doom_episode_timeout_is_terminal_unless_the_preset_bootstraps_it(tmp_path, bootstrap):
    """basic.wad times out after 300 tics (75 steps) when the monster is never shot."""
    from doom_a3c.envs.doom.game import DoomEnvironment
    from doom_a3c.run.resolve import resolve_new_run

    config = resolve_new_run({"scenario": "basic", "model_dir": str(tmp_path)})
    env = DoomEnvironment(dataclasses.replace(config, bootstrap_timeout=bootstrap), seed=0)
    try:
        env.reset()
        left = config.actions.index(["MOVE_LEFT"])
        steps = []
        while not (steps and steps[-1].game_over):
            steps.append(env.step(left))
        last = steps[-1]
        assert 70 <= len(steps) <= 80
        assert (last.done, last.truncated) == (not bootstrap, bootstrap)
        if bootstrap:  # the last frame the engine showed, for the value to bootstrap from
            np.testing.assert_array_equal(last.observation, steps[-2].observation)
    finally:
        env.close()
