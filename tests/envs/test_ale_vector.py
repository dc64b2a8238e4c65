"""ale-py's vector env behind the GameBatch interface (doom_a3c/envs/ale_vector_batch.py), against the one-game path
(doom_a3c/envs/gym/atari.py under doom_a3c/envs/frame_stack.py) on games without sticky actions and without
no-ops, where the emulator is deterministic and the two must agree pixel for pixel."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from doom_a3c.envs.batch import EnvBatch, JoinedBatch
from doom_a3c.envs.frame_stack import stack_frames
from doom_a3c.envs.ale_vector_batch import AleVectorBatch, vector_env_problem
from doom_a3c.envs.gym.atari import AtariEnvironment
from doom_a3c.envs.gym.registry import registered_spec

SHORT_PACMAN = "DoomA3cTest/MsPacmanShort-v0"  # 1,000 frames: 250 agent steps, then a time limit


@pytest.fixture(scope="module", autouse=True)
def short_pacman():
    registered_spec("ALE/Pong-v5")  # ale-py's ids registered first
    gym.register(SHORT_PACMAN, entry_point="ale_py.env:AtariEnv",
                 kwargs={"game": "ms_pacman", "repeat_action_probability": 0.0, "full_action_space": False,
                         "max_num_frames_per_episode": 1000})
    yield
    gym.registry.pop(SHORT_PACMAN, None)


def play_both(env_id: str, steps: int, seed: int = 3, **one_game):
    """The same random actions in both paths; yields (one-game step, its next observation, the batch's step)."""
    one = stack_frames(AtariEnvironment(env_id, seed, noop_max=0, **one_game), 4)
    batch = AleVectorBatch(env_id, [seed], 4, 84, 4, noop_max=0)
    try:
        first_one, first_batch = one.reset(), batch.reset()
        assert first_batch.shape == (1, 84, 84, 4) and first_batch.dtype == np.uint8
        assert np.array_equal(first_one, first_batch[0])
        rng = np.random.default_rng(0)
        for _ in range(steps):
            action = int(rng.integers(one.num_actions))
            step = one.step(action)
            following = one.reset() if step.game_over else step.observation
            yield step, following, batch.step(np.array([action]))
    finally:
        one.close()
        batch.close()


@pytest.mark.slow
@pytest.mark.parametrize("env_id", [SHORT_PACMAN, "BreakoutNoFrameskip-v4"])
def test_observations_lives_scores_and_time_limits_match_the_one_game_path(env_id):
    """MsPacman (no FIRE, 10-point rewards, a 250-step time limit) and Breakout (FIRE at the start, 5 lives)."""
    seen = {"rewards": 0, "raw": 0, "lives": 0, "game overs": 0, "time limits": 0}
    for step, following, got in play_both(env_id, 1200, vector_env_rules=True):
        assert np.array_equal(got.observations[0], following)
        assert (got.rewards[0], got.dones[0], got.game_overs[0], got.truncated[0]) == (
            step.reward, step.done, step.game_over, step.truncated)
        if step.truncated:
            assert np.array_equal(got.final_observations[0], step.observation)  # the bootstrap's observation
        seen["rewards"] += step.reward != 0
        seen["raw"] += step.reward > 1  # the true score: not clipped
        seen["lives"] += step.done and not step.game_over
        seen["game overs"] += step.game_over
        seen["time limits"] += step.truncated
    assert seen["rewards"] and seen["lives"] and seen["game overs"] >= 2, seen
    if env_id == SHORT_PACMAN:
        assert seen["raw"] and seen["time limits"] >= 2, seen


@pytest.mark.slow
def test_a_game_without_fire_matches_the_path_of_older_runs_too():
    """MsPacman has no FIRE: the one-game path of runs trained before the vector env plays it the same way."""
    for step, following, got in play_both(SHORT_PACMAN, 600):
        assert np.array_equal(got.observations[0], following)
        assert (got.rewards[0], got.dones[0], got.game_overs[0]) == (step.reward, step.done, step.game_over)


def test_the_stack_starts_again_at_a_lost_life_and_at_a_new_game():
    """The frames before a lost life are zeroed out of the stack, one fewer each step, as FrameStack clears."""
    batch = AleVectorBatch("BreakoutNoFrameskip-v4", [0, 1], 4, 84, 4, noop_max=0)
    try:
        first = batch.reset()
        assert not first[..., :3].any() and first[..., 3].any()  # a new game: only its first frame
        rng = np.random.default_rng(1)
        lost, steps_after = None, 0
        for _ in range(2000):
            got = batch.step(rng.integers(4, size=2))
            if lost is not None:
                k = steps_after + 1
                assert not got.observations[lost, :, :, :3 - k].any()
                assert got.observations[lost, :, :, 3 - k:].any(axis=(0, 1)).all()
                steps_after += 1
                if steps_after == 3:
                    break
            life_lost = got.dones & ~got.game_overs
            if lost is None and life_lost.any():
                lost, steps_after = int(np.flatnonzero(life_lost)[0]), 0
                assert not got.observations[lost, :, :, :3].any() and got.observations[lost, :, :, 3].any()
        assert lost is not None and steps_after == 3, "no life was lost in 2,000 random steps of Breakout"
    finally:
        batch.close()


def test_sticky_actions_action_set_and_frame_limit_are_the_registrations():
    batch = AleVectorBatch("ALE/Breakout-v5", [5, 6], 4, 84, 4)
    try:
        assert batch.spec.action_names == ["NOOP", "FIRE", "RIGHT", "LEFT"]
        assert batch.spec.observation_shape == (84, 84, 4) and batch.spec.num_actions == 4
        assert batch.spec.seconds_per_step == pytest.approx(4 / 60)
    finally:
        batch.close()
    import ale_py.vector_env

    made = {}
    original = ale_py.vector_env.AtariVectorEnv.__init__

    def spy(self, game, num_envs, **kwargs):
        made.update(kwargs, game=game)
        original(self, game, num_envs, **kwargs)

    ale_py.vector_env.AtariVectorEnv.__init__ = spy
    try:
        AleVectorBatch("ALE/Pong-v5", [0], 4, 84, 4).close()
        v5 = dict(made)
        AleVectorBatch("PongNoFrameskip-v4", [0], 4, 84, 4).close()
    finally:
        ale_py.vector_env.AtariVectorEnv.__init__ = original
    assert v5["game"] == "pong" and v5["repeat_action_probability"] == 0.25  # the class's own default is 0
    assert made["repeat_action_probability"] == 0.0 and made["max_num_frames_per_episode"] == 108_000
    assert not v5["reward_clipping"] and not v5["episodic_life"] and v5["autoreset_mode"] == "SameStep"


@pytest.mark.slow
def test_the_same_seeds_give_the_same_games_with_sticky_actions():
    def play(seeds):
        batch = AleVectorBatch("ALE/Breakout-v5", seeds, 4, 84, 4)
        try:
            frames = [batch.reset()]
            rng = np.random.default_rng(0)
            frames += [batch.step(rng.integers(4, size=len(seeds))).observations for _ in range(200)]
            return np.stack(frames)
        finally:
            batch.close()

    first, again, other = play([10, 11]), play([10, 11]), play([12, 11])
    assert np.array_equal(first, again)
    assert not np.array_equal(first[:, 0], other[:, 0]) and np.array_equal(first[:, 1], other[:, 1])


def test_registrations_the_vector_env_cannot_take_are_named():
    assert vector_env_problem("ALE/Breakout-v5") == ""
    gym.register("DoomA3cTest/BreakoutMode-v0", entry_point="ale_py.env:AtariEnv",
                 kwargs={"game": "breakout", "mode": 4, "difficulty": 1})
    try:
        assert vector_env_problem("DoomA3cTest/BreakoutMode-v0") == (
            "its registration sets difficulty, mode, which ale-py's vector env does not take")
    finally:
        gym.registry.pop("DoomA3cTest/BreakoutMode-v0")


def test_a_joined_batch_steps_each_part_with_its_own_actions_and_finds_game_i():
    """Game 0 on the one-game path (GIFs need its colour screen) beside the vector env's games."""
    one = EnvBatch([stack_frames(AtariEnvironment("BreakoutNoFrameskip-v4", 0, noop_max=0, vector_env_rules=True),
                                 4)])
    joined = JoinedBatch([one, AleVectorBatch("BreakoutNoFrameskip-v4", [0, 1], 4, 84, 4, noop_max=0)])
    try:
        first = joined.reset()
        assert len(joined) == 3 and first.shape == (3, 84, 84, 4)
        assert np.array_equal(first[0], first[1])  # the same seed, the same game on either path
        assert joined.screen(0).shape == (210, 160, 3)
        with pytest.raises(NotImplementedError):
            joined.screen(1)
        for _ in range(50):
            got = joined.step(np.array([2, 2, 3]))  # games 0 and 1 move alike, game 2 otherwise
        assert np.array_equal(got.observations[0], got.observations[1])
        assert not np.array_equal(got.observations[1], got.observations[2])
        assert joined.take_start_failures() == [] and joined.record_tics(2, True) == 0.0
    finally:
        joined.close()
