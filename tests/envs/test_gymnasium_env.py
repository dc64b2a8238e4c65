"""The gymnasium env users take home (doom_a3c.make_env, Agent.make_env): gymnasium's own checker on each kind of
game, seeding, the observation of a preset with game variables, and Atari's life losses as training saw them."""
import warnings

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

from doom_a3c import TrainConfig, make_env
from doom_a3c.envs.gymnasium_env import gym_observation, record_observation

pytestmark = pytest.mark.timeout(180)
NO_SPEC = "Not able to test alternative render modes"  # made without gym.make: nothing else to check
INFINITE_BOUNDS = "infinity"  # CartPole's own space has them: check_env(gym.make("CartPole-v1")) says the same


def checked(env, expected=(NO_SPEC,)) -> None:
    """gymnasium's check_env passes and warns about nothing but what `expected` names."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    problems = [str(w.message) for w in caught if not any(e in str(w.message) for e in expected)]
    assert not problems, problems


@pytest.mark.parametrize("scenario", ["basic.wad", "ALE/Pong-v5", "CartPole-v1"])
def test_check_env_passes_on_each_kind(tmp_path, scenario):
    env = make_env(TrainConfig(scenario=scenario, model_dir=str(tmp_path)))
    try:
        checked(env, (NO_SPEC, INFINITE_BOUNDS) if scenario == "CartPole-v1" else (NO_SPEC,))
        observation, info = env.reset(seed=0)
        assert env.observation_space.contains(observation) and info == {"episode_start": True}
        frame = env.render()
        assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
        assert isinstance(env.action_space, spaces.Discrete) and env.action_space.n == len(env.action_names)
    finally:
        env.close()


def test_a_seeded_reset_replays_the_same_doom_episode(tmp_path):
    env = make_env(TrainConfig(scenario="basic.wad", model_dir=str(tmp_path)))
    try:
        def episode(seed):
            observation, _ = env.reset(seed=seed)
            frames, rewards = [observation], []
            for action in [0, 1, 2, 2, 0, 1] * 3:
                observation, reward, terminated, truncated, _ = env.step(action)
                frames.append(observation)
                rewards.append(reward)
                if terminated or truncated:
                    break
            return np.stack(frames), rewards

        first, again, other = episode(5), episode(5), episode(6)
        np.testing.assert_array_equal(first[0], again[0])
        assert first[1] == again[1]
        assert not np.array_equal(first[0][0], other[0][0])  # basic's monster stands elsewhere
    finally:
        env.close()


def test_game_variables_are_a_dict_observation_that_converts_back(tmp_path):
    env = make_env(TrainConfig(scenario="health_gathering", model_dir=str(tmp_path)))
    try:
        checked(env)
        assert isinstance(env.observation_space, spaces.Dict)
        observation, _ = env.reset(seed=1)
        assert set(observation) == {"frame", "variables"} and observation["variables"].dtype == np.float32
        record = record_observation(observation)
        assert record.dtype.names == ("frame", "variables")
        np.testing.assert_array_equal(record["frame"], observation["frame"])
        back = gym_observation(record)
        np.testing.assert_array_equal(back["variables"], observation["variables"])
    finally:
        env.close()


def test_an_atari_life_loss_is_in_info_and_the_episode_ends_with_the_game(tmp_path):
    """Breakout has 5 lives: a random policy loses them one by one; the gymnasium episode ends at the game's end."""
    env = make_env(TrainConfig(scenario="ALE/Breakout-v5", model_dir=str(tmp_path)))
    try:
        env.reset(seed=3)
        lives_lost, steps, done = 0, 0, False
        while not done:
            _, _, terminated, truncated, info = env.step(env.action_space.sample())
            lives_lost += info["life_lost"]
            steps, done = steps + 1, terminated or truncated
        assert lives_lost == 4 and terminated  # the fifth life's loss is the end of the game itself
    finally:
        env.close()
