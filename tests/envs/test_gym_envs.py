"""Gymnasium environments (doom_a3c/envs/gym/) on real Atari games and CartPole."""
import gymnasium as gym
import numpy as np
import pytest

from doom_a3c.config import TrainConfig
from doom_a3c.envs.gym.atari import AtariEnvironment
from doom_a3c.envs.gym.factory import make_gym_environment
from doom_a3c.envs.gym.games import VectorEnvironment
from doom_a3c.envs.gym.registry import is_gym_id, looks_like_gym_id, registered_atari_ids
from doom_a3c.envs.interface import Step
from doom_a3c.errors import ConfigError

MAX_AGENT_STEPS = 5000  # a random Atari game ends far sooner; this only guards against a hang


def gym_environment(env_id: str, seed: int, frame_skip: int = 4, frame_size: int = 84):
    """make_gym_environment for a config naming this id, as doom_a3c/run/resolve.py completes one (frame skip and
    frame size apply to Atari only)."""
    config = TrainConfig(scenario=env_id, scenario_path=env_id, frame_skip=frame_skip, frame_size=frame_size)
    return make_gym_environment(config, seed)


class AleCallRecorder:
    """Records every (action, reward) at the raw ALE env, below all preprocessing: the reference for the
    game's true score and for which buttons were really pressed."""

    def __init__(self, environment: AtariEnvironment):
        base = environment._env.unwrapped
        self._step = base.step
        self.actions: list[int] = []
        self.rewards: list[float] = []
        base.step = self  # wrappers look `step` up on the instance, so this sees every emulator frame

    def __call__(self, action):
        result = self._step(action)
        self.actions.append(int(action))
        self.rewards.append(float(result[1]))
        return result


def play_random_game(environment, seed: int) -> list[Step]:
    rng = np.random.default_rng(seed)
    environment.reset()
    steps = []
    for _ in range(MAX_AGENT_STEPS):
        steps.append(environment.step(int(rng.integers(environment.num_actions))))
        if steps[-1].game_over:
            return steps
    pytest.fail("random game did not end")


@pytest.fixture(scope="module")
def breakout():
    environment = gym_environment("ALE/Breakout-v5", seed=0)
    yield environment
    environment.close()


@pytest.mark.parametrize("name", ["ALE/Pong-v5", "PongNoFrameskip-v4", "CartPole-v1", "ALE/Breakout-v5"])
def test_registered_gym_ids_are_recognised(name):
    assert is_gym_id(name)


@pytest.mark.parametrize("name", ["basic.wad", "basic", "my.cfg", "scenarios/deadly_corridor.cfg", "Pongg-v5", ""])
def test_vizdoom_names_and_unknown_ids_are_not_gym_ids(name):
    assert not is_gym_id(name)


def test_misspelt_ids_still_look_like_gym_ids_but_doom_names_do_not():
    assert looks_like_gym_id("Pongg-v5") and looks_like_gym_id("ALE/Breakout-v5")
    assert not any(looks_like_gym_id(name) for name in ["basic.wad", "basic", "my.cfg"])


@pytest.mark.parametrize("env_id", ["ALE/Pong-v5", "PongNoFrameskip-v4", "Pong-v4"])
def test_atari_observations_are_84x84_grey_uint8_and_screen_is_full_colour(env_id):
    environment = gym_environment(env_id, seed=1)
    try:
        assert isinstance(environment, AtariEnvironment) and environment.kind == "image"
        assert environment.observation_shape == (84, 84, 1) and environment.observation_dtype == np.uint8
        assert environment.num_actions == len(environment.action_names) == 6
        assert environment.seconds_per_step == 4 / 60  # frame skip 4 at the console's 60 frames per second
        observation = environment.reset()
        for _ in range(20):
            result = environment.step(environment.num_actions - 1)
        for frame in (observation, result.observation):
            assert frame.shape == (84, 84, 1) and frame.dtype == np.uint8
        assert 0 < result.observation.max() <= 255 and result.observation.std() > 0  # a real picture
        screen = environment.screen()
        assert screen.shape == (210, 160, 3) and screen.dtype == np.uint8
        assert not np.array_equal(screen[..., 0], screen[..., 1])  # colour, not grey copied thrice
    finally:
        environment.close()


def test_the_grey_base_env_changes_nothing_the_agent_sees(monkeypatch):
    """The base ALE env observes in grey (cheaper than colour, and the preprocessing reads the ALE itself):
    observations, rewards and episode ends equal those of a colour base env, step by step."""
    from doom_a3c.envs.gym import atari

    grey = AtariEnvironment("ALE/Breakout-v5", seed=3)
    make = atari.gym_make
    monkeypatch.setattr(atari, "gym_make", lambda env_id, **kwargs: make(env_id, **{**kwargs, "obs_type": "rgb"}))
    colour = AtariEnvironment("ALE/Breakout-v5", seed=3)
    assert grey._env.unwrapped._obs_type == "grayscale" and colour._env.unwrapped._obs_type == "rgb"
    np.testing.assert_array_equal(grey.reset(), colour.reset())
    rng = np.random.default_rng(0)
    for _ in range(400):
        action = int(rng.integers(grey.num_actions))
        a, b = grey.step(action), colour.step(action)
        np.testing.assert_array_equal(a.observation, b.observation)
        assert (a.reward, a.done, a.game_over) == (b.reward, b.done, b.game_over)
        if a.game_over:
            np.testing.assert_array_equal(grey.reset(), colour.reset())
    np.testing.assert_array_equal(grey.screen(), colour.screen())  # GIFs still get the colour screen
    assert grey.screen().shape == (210, 160, 3)
    grey.close()
    colour.close()


def test_atari_frame_size_is_the_preprocessing_screen_size():
    """--frame-size reaches gymnasium's AtariPreprocessing: 42x42 grey frames, the same game."""
    environment = gym_environment("ALE/Pong-v5", seed=1, frame_size=42)
    try:
        assert environment.observation_shape == (42, 42, 1)
        assert environment.reset().shape == (42, 42, 1)
        assert environment.step(0).observation.shape == (42, 42, 1)
    finally:
        environment.close()


def test_breakout_life_loss_is_terminal_for_learning_only_and_rewards_sum_to_the_true_score(breakout):
    recorder = AleCallRecorder(breakout)
    steps = play_random_game(breakout, seed=0)
    life_losses = [i for i, step in enumerate(steps) if step.done and not step.game_over]
    assert len(life_losses) == 4  # Breakout-v5 has 5 lives: 4 lost mid-game, the 5th ends it
    assert steps[-1].done and steps[-1].game_over
    assert all(not step.game_over for step in steps[:-1])  # play went on without reset() after each loss
    for i in life_losses:  # the observation after a lost life is a live frame to continue from
        assert steps[i].observation.shape == (84, 84, 1) and steps[i].observation.any()
    assert sum(step.reward for step in steps) == sum(recorder.rewards)


def test_breakout_presses_fire_after_reset_and_after_each_lost_life(breakout):
    assert breakout.fires_on_reset and breakout.action_names[1] == "FIRE"
    recorder = AleCallRecorder(breakout)
    breakout.reset()
    frame_skip = 4
    # after the random no-ops: FIRE then action 2, each held for frame_skip frames
    assert recorder.actions[-2 * frame_skip:] == [1] * frame_skip + [2] * frame_skip
    assert set(recorder.actions[:-2 * frame_skip]) <= {0}
    del recorder.actions[:]
    result = breakout.step(0)
    while not result.done:
        result = breakout.step(0)  # never fire ourselves: the ball is lost after the serve
    assert not result.game_over
    assert recorder.actions[-2 * frame_skip:] == [1] * frame_skip + [2] * frame_skip
    assert recorder.actions.count(1) == frame_skip  # only the automatic serve after the life loss


def test_games_without_fire_are_not_fired():
    environment = gym_environment("ALE/Freeway-v5", seed=0)
    try:
        assert "FIRE" not in environment.action_names and not environment.fires_on_reset
        recorder = AleCallRecorder(environment)
        environment.reset()
        assert set(recorder.actions) <= {0}  # only the no-ops
    finally:
        environment.close()


def test_registered_atari_ids_are_the_v5_image_games():
    ids = registered_atari_ids()
    assert {"ALE/Pong-v5", "ALE/Backgammon-v5", "ALE/Zaxxon-v5"} <= set(ids) and len(ids) >= 100
    assert all(i.startswith("ALE/") and i.endswith("-v5") and "ram" not in i for i in ids)


@pytest.mark.parametrize("env_id", ["ALE/Backgammon-v5", "ALE/VideoCheckers-v5"])
def test_games_whose_first_action_is_not_noop_start_without_noops_or_serve(env_id):
    # Their action 0 is FIRE: random no-op starts would press it (gymnasium refuses), and FireResetEnv's
    # serve is for games whose actions begin NOOP, FIRE.
    environment = gym_environment(env_id, seed=0)
    try:
        assert environment.action_names[0] == "FIRE" and not environment.fires_on_reset
        recorder = AleCallRecorder(environment)
        observation = environment.reset()
        assert observation.shape == (84, 84, 1) and recorder.actions == []
        environment.step(environment.num_actions - 1)
        assert recorder.actions == [environment.num_actions - 1] * 4
    finally:
        environment.close()


def test_life_loss_can_be_left_non_terminal():
    environment = AtariEnvironment("ALE/Breakout-v5", seed=0, life_loss_terminal=False)
    try:
        steps = play_random_game(environment, seed=0)
        assert [step.done for step in steps] == [step.game_over for step in steps]
        assert steps[-1].game_over
    finally:
        environment.close()


def test_space_invaders_rewards_are_raw_and_sum_to_the_true_score():
    environment = gym_environment("ALE/SpaceInvaders-v5", seed=2)
    try:
        recorder = AleCallRecorder(environment)
        steps = play_random_game(environment, seed=2)
        rewards = [step.reward for step in steps]
        assert max(rewards) > 1  # aliens are worth 5 to 30 points: nothing was clipped
        assert sum(rewards) == sum(recorder.rewards) > 0
        assert any(step.done and not step.game_over for step in steps)  # it has lives too
    finally:
        environment.close()


def test_same_seed_gives_the_same_game_and_another_seed_does_not():
    games = []
    for seed in (7, 7, 8):
        environment = gym_environment("ALE/Breakout-v5", seed=seed)
        observations = [environment.reset()]
        observations += [environment.step(action % 4).observation for action in range(40)]
        games.append(np.stack(observations))
        environment.close()
    np.testing.assert_array_equal(games[0], games[1])
    assert not np.array_equal(games[0], games[2])


@pytest.mark.parametrize("env_id", ["ALE/Breakout-v5", "CartPole-v1"])
def test_only_the_first_reset_is_seeded(env_id):
    environment = gym_environment(env_id, seed=5)
    base = environment._env.unwrapped
    original_reset, seeds = base.reset, []
    base.reset = lambda seed=None, options=None: seeds.append(seed) or original_reset(seed=seed, options=options)
    try:
        environment.reset()
        environment.reset()
        assert seeds == [5, None]
    finally:
        environment.close()


def test_cartpole_is_a_float32_vector_env_whose_episode_ends():
    environment = gym_environment("CartPole-v1", seed=0)
    try:
        assert isinstance(environment, VectorEnvironment) and environment.kind == "vector"
        assert environment.observation_shape == (4,) and environment.observation_dtype == np.float32
        assert environment.num_actions == len(environment.action_names) == 2
        assert environment.seconds_per_step == 1 / 50  # CartPole renders at 50 fps: GIFs play at its speed
        observation = environment.reset()
        assert observation.shape == (4,) and observation.dtype == np.float32
        steps = [environment.step(0)]
        while not steps[-1].game_over:  # always pushing left topples the pole within ~10 steps
            steps.append(environment.step(0))
            assert len(steps) < 100
        assert steps[-1].done and all(not step.done for step in steps[:-1])
        assert all(step.reward == 1.0 and step.observation.dtype == np.float32 for step in steps)
        screen = environment.screen()
        assert screen.ndim == 3 and screen.shape[2] == 3 and screen.dtype == np.uint8
        assert environment.reset().shape == (4,)  # a new episode after game_over
    finally:
        environment.close()


def test_a_time_limit_ends_the_game_without_a_terminal():
    env_id = "doom_a3c_test/CartPoleThreeSteps-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point="gymnasium.envs.classic_control.cartpole:CartPoleEnv",
                     max_episode_steps=3)
    environment = gym_environment(env_id, seed=0)
    try:
        environment.reset()
        steps = [environment.step(action) for action in (0, 1, 0)]  # balanced: only the limit ends it
        # Truncated, not done: learning bootstraps from the last observation's value.
        assert [(step.done, step.game_over, step.truncated) for step in steps] == \
            [(False, False, False), (False, False, False), (False, True, True)]
    finally:
        environment.close()


@pytest.mark.parametrize("env_id, expected", [
    ("Pongg-v5", "unknown gymnasium environment 'Pongg-v5'; did you mean 'ALE/Pong-v5'"),
    ("Pong-v5", "did you mean 'ALE/Pong-v5'"),
    ("cartpole-v1", "did you mean 'CartPole-v1'"),
    ("basic.wad", "e.g. ALE/Pong-v5"),
    ("Pendulum-v1", "Pendulum-v1 has a continuous action space; only discrete actions are supported. Supported: "),
    ("FrozenLake-v1", "FrozenLake-v1 observes Discrete(16), which the network cannot take"),
])
def test_bad_ids_raise_one_helpful_config_error(env_id, expected):
    with pytest.raises(ConfigError) as error:
        gym_environment(env_id, seed=0)
    assert expected in str(error.value) and "\n" not in str(error.value)


def test_each_class_rejects_the_other_kind():
    with pytest.raises(ConfigError, match="not an Atari"):
        AtariEnvironment("CartPole-v1", seed=0)
    with pytest.raises(ConfigError, match="is an Atari game"):
        VectorEnvironment("ALE/Pong-v5", seed=0)
    with pytest.raises(ConfigError, match="frame skip must be >= 1 for Atari"):
        gym_environment("ALE/Pong-v5", seed=0, frame_skip=0)
    with pytest.raises(ConfigError, match="--frame-skip must be > 0, got -1"):  # before any game is built
        TrainConfig(scenario="ALE/Pong-v5", frame_skip=-1).validate()
