"""--frame-stack K (doom_a3c/envs/frame_stack.py): the stack's shapes for grey, colour and record observations; where it
starts again (reset, a game's end, an Atari life lost) and where it must not (a time limit, whose last observation
learning bootstraps from), on a scripted game whose frames are distinct constants; a whole run with K = 4 through
train.py, play.py, --resume and --export; the config's checks; and a checkpoint from before the flag, which plays
with K = 1."""
import json
import os

import numpy as np
import pytest

from doom_a3c.cli import play_main, train_main
from doom_a3c.config import TrainConfig, build_parser, given_values
from doom_a3c.envs.batch import EnvBatch
from doom_a3c.envs.factory import make_environment
from doom_a3c.envs.frame_stack import FrameStack, stack_frames
from doom_a3c.envs.interface import Step, observation_dtype, spec_of
from doom_a3c.errors import ConfigError
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.saved_config import resolve_resumed_run, upgrade_saved_config

from support import REPO_ROOT, first_observation_and_policy

FAKES = "tests.fixtures.fake_image_envs"
PLAIN, LIFE_LOST, GAME_END, TIME_LIMIT = (False, False, False), (True, False, False), (True, True, False), \
    (False, True, True)  # a step's (done, game_over, truncated)


class ScriptedGame:
    """An image game of 2x2 frames: its n-th observation (reset's or a step's) is the frame filled with n (channel c
    of a colour frame: n + 100 c), with n in its variables too when it has any; `script` lists its steps' (done,
    game_over, truncated), plain steps after it."""

    num_actions, action_names, seconds_per_step = 2, ["LEFT", "RIGHT"], 0.1

    def __init__(self, channels: int = 1, variables: int = 0, script=()):
        self.observation_shape = (2, 2, channels)
        self._record = observation_dtype(self.observation_shape, variables) if variables else None
        self.script, self.count, self.closed, self.seeds = list(script), 0, False, []

    def _observe(self) -> np.ndarray:
        self.count += 1
        frame = np.stack([np.full((2, 2), self.count + 100 * c, np.uint8)
                          for c in range(self.observation_shape[2])], axis=-1)
        if self._record is None:
            return frame
        record = np.zeros((), self._record)
        record["frame"], record["variables"] = frame, self.count
        return record

    def reset(self) -> np.ndarray:
        return self._observe()

    def step(self, action: int) -> Step:
        done, game_over, truncated = self.script.pop(0) if self.script else PLAIN
        return Step(self._observe(), 1.0, done, game_over, truncated=truncated)

    def screen(self) -> np.ndarray:
        return np.full((4, 6, 3), self.count, np.uint8)

    def reseed(self, seed: int) -> None:
        self.seeds.append(seed)

    def close(self) -> None:
        self.closed = True


def frames(observation: np.ndarray) -> list[int]:
    """A grey stack [2, 2, K] (or a record's) as its K frames' numbers, oldest first (0: a padding zero frame)."""
    frame = observation["frame"] if observation.dtype.names else observation
    assert (frame == frame[:1, :1]).all()  # each frame one constant
    return [int(value) for value in frame[0, 0]]


def test_grey_colour_and_record_stacks_have_the_stacked_shape():
    grey = FrameStack(ScriptedGame(channels=1), 4)
    assert grey.observation_shape == (2, 2, 4) and spec_of(grey).observation_shape == (2, 2, 4)
    assert grey.reset().shape == (2, 2, 4) and grey.reset().dtype == np.uint8
    colour = FrameStack(ScriptedGame(channels=3), 4)
    assert spec_of(colour).observation_shape == (2, 2, 12)
    colour.reset()
    stacked = colour.step(0).observation
    # Each frame's 3 channels together, the oldest frame first: zeros, zeros, frame 1, frame 2.
    assert stacked.shape == (2, 2, 12) and list(stacked[0, 0]) == [0] * 6 + [1, 101, 201, 2, 102, 202]
    record = FrameStack(ScriptedGame(channels=1, variables=2), 3)
    record.reset()
    observation = record.step(0).observation
    assert observation.dtype == observation_dtype((2, 2, 3), 2) and observation.shape == ()
    assert frames(observation) == [0, 1, 2] and list(observation["variables"]) == [2.0, 2.0]  # the newest only


def test_the_stack_starts_again_at_reset_at_a_lost_life_and_at_a_game_end():
    game = FrameStack(ScriptedGame(script=[PLAIN, PLAIN, PLAIN, LIFE_LOST, PLAIN, GAME_END]), 3)
    assert frames(game.reset()) == [0, 0, 1]
    assert [frames(game.step(0).observation) for _ in range(3)] == [[0, 1, 2], [1, 2, 3], [2, 3, 4]]
    life_lost = game.step(0)
    assert life_lost.done and not life_lost.game_over
    assert frames(life_lost.observation) == [0, 0, 5]  # the game goes on: its next frame starts a new stack
    assert frames(game.step(0).observation) == [0, 5, 6]
    end = game.step(0)
    assert end.game_over and frames(end.observation) == [0, 0, 7]  # no frame of the ended game is left
    assert frames(game.reset()) == [0, 0, 8]
    assert frames(game.step(1).observation) == [0, 8, 9] and frames(game.reset()) == [0, 0, 10]  # reset mid-game


def test_a_time_limit_keeps_the_stack_for_the_bootstrap_value_and_the_next_game_starts_afresh():
    game = FrameStack(ScriptedGame(variables=1, script=[PLAIN, PLAIN, TIME_LIMIT]), 3)
    game.reset()
    game.step(0), game.step(0)
    last = game.step(0)
    assert last.truncated and last.game_over and not last.done
    assert frames(last.observation) == [2, 3, 4] and last.observation["variables"][0] == 4.0
    assert frames(game.reset()) == [0, 0, 5]


def test_a_batch_bootstraps_from_the_old_stack_and_starts_the_new_game_with_a_fresh_one():
    """EnvBatch resets a game that ended: `final_observations` keeps the time limit's stack, `observations` (and
    the life-lost game's) start afresh."""
    batch = EnvBatch([FrameStack(ScriptedGame(script=[PLAIN, TIME_LIMIT]), 3),
                      FrameStack(ScriptedGame(script=[PLAIN, LIFE_LOST]), 3)])
    batch.reset()
    batch.step(np.zeros(2))
    result = batch.step(np.zeros(2))
    assert list(result.truncated) == [True, False] and list(result.dones) == [False, True]
    assert frames(result.final_observations[0]) == [1, 2, 3]
    assert frames(result.observations[0]) == [0, 0, 4]  # the new game's first observation, from reset()
    assert frames(result.observations[1]) == [0, 0, 3]
    batch.close()


def test_everything_else_is_the_wrapped_games():
    inner = ScriptedGame()
    game = stack_frames(inner, 2)
    game.reset()
    game.reseed(7)
    assert inner.seeds == [7] and game.screen().shape == (4, 6, 3) and game.num_actions == 2
    assert game.action_names == ["LEFT", "RIGHT"] and game.seconds_per_step == 0.1
    assert not hasattr(game, "record_tics")  # a game that cannot record tics (EnvBatch.record_tics asks so)
    inner.record_tics, inner.tic_screens = False, ["tic"]
    game.record_tics = True  # ViZDoom's tic-by-tic recording reaches the game itself
    assert inner.record_tics and game.record_tics and game.tic_screens == ["tic"]
    game.close()
    assert inner.closed
    assert stack_frames(inner, 1) is inner  # K = 1: no wrapper at all, everything as before


def test_the_flag_is_checked_and_vector_envs_refuse_a_stack():
    assert given_values(build_parser("t").parse_args(["--frame-stack", "4"])) == {"frame_stack": 4}
    for bad in (0, 17, 2.0):
        with pytest.raises(ConfigError, match="--frame-stack must be a whole number from 1 to 16"):
            TrainConfig(frame_stack=bad).validate()
    with pytest.raises(ConfigError) as error:
        resolve_new_run({"scenario": "CartPole-v1", "frame_stack": 4})
    assert "CartPole-v1 observes a vector" in str(error.value) and "\n" not in str(error.value)
    assert resolve_new_run({"scenario": "CartPole-v1"}).frame_stack == 1
    image = resolve_new_run({"scenario": "FakeImage-v0", "env_module": FAKES, "frame_size": 42})
    assert image.frame_stack == 1 and type(make_environment(image, 0)).__name__ == "ImageEnvironment"


def test_a_presets_train_table_sets_it(tmp_path, monkeypatch):
    from doom_a3c.run import presets as preset_module

    presets = tmp_path / "presets"
    presets.mkdir()
    (presets / "basic.toml").write_text("frame_skip = 4\n[train]\nframe_stack = 3\n")
    monkeypatch.setattr(preset_module, "PRESETS_DIR", presets)
    assert resolve_new_run({"scenario": "basic", "model_dir": str(tmp_path)}).frame_stack == 3
    assert resolve_new_run({"scenario": "basic", "model_dir": str(tmp_path), "frame_stack": 2}).frame_stack == 2


def test_a_real_doom_and_atari_game_stack_their_frames():
    doom = make_environment(resolve_new_run({"scenario": "basic", "frame_stack": 4, "color": True}), seed=0)
    try:
        assert doom.reset().shape == (42, 42, 12) and spec_of(doom).observation_shape == (42, 42, 12)
        doom.record_tics = True  # play.py's tic-by-tic video through the wrapper
        assert doom.step(0).observation.shape == (42, 42, 12) and len(doom.tic_screens) == 4
    finally:
        doom.close()
    breakout = make_environment(resolve_new_run({"scenario": "ALE/Breakout-v5", "frame_stack": 4}), seed=0)
    try:
        breakout.reset()
        rng = np.random.default_rng(0)
        for _ in range(2000):
            step = breakout.step(int(rng.integers(breakout.num_actions)))
            if step.done and not step.game_over:  # a life lost, the game going on: a fresh stack
                assert step.observation.shape == (84, 84, 4) and not step.observation[..., :3].any()
                assert step.observation[..., 3].any()
                break
        else:
            pytest.fail("no life lost in 2,000 random steps of Breakout")
    finally:
        breakout.close()


@pytest.fixture(scope="module")
def stacked_run(tmp_path_factory):
    """FakeDictImage-v0 (an image and a vector, a 15-step time limit) with --frame-stack 4, its games in a child
    process, 300 steps."""
    base = tmp_path_factory.mktemp("stacked")
    args = ["--scenario", "FakeDictImage-v0", "--env-module", FAKES, "--model-dir", base / "model",
            "--frames-dir", base / "frames", "--workers", 1, "--envs-per-worker", 2, "--rollout", 10,
            "--frame-size", 42, "--lstm-size", 16, "--hidden-size", 32, "--gif-every", 0, "--no-evaluate",
            "--env-processes", 1, "--log-every-seconds", 1, "--frame-stack", 4, "--max-steps", 300]
    assert train_main([str(a) for a in args]) == 0
    return base / "model"


@pytest.mark.slow
def test_a_stacked_run_plays_resumes_and_exports_as_trained(stacked_run, tmp_path):
    import tensorflow as tf

    from doom_a3c.run.agent import load_agent

    assert json.loads((stacked_run / "config.json").read_text())["frame_stack"] == 4
    assert play_main(["--model", str(stacked_run / "last.ckpt"), "--out", str(tmp_path / "play"),
                      "--episodes", "1"]) == 0
    assert json.loads((tmp_path / "play" / "results.json").read_text())["episodes"][0]["length"] == 15

    assert play_main(["--model", str(stacked_run / "last.ckpt"), "--export", str(tmp_path / "export")]) == 0
    policy = json.loads((tmp_path / "export" / "policy.json").read_text())
    assert policy["frame_stack"] == 4 and policy["frame_shape"] == [42, 42, 1]
    assert policy["observation_shape"] == [42, 42, 4]
    step = tf.saved_model.load(str(tmp_path / "export" / "saved_model")).signatures["serving_default"]
    assert step.structured_input_signature[1]["observation"].shape.as_list() == [None, 42, 42, 4]
    agent = load_agent(str(stacked_run / "last.ckpt"))
    observation, expected = first_observation_and_policy(agent)
    assert observation["frame"].shape == (42, 42, 4) and not observation["frame"][..., :3].any()
    h = c = np.zeros([1, 16], np.float32)
    out = step(observation=observation["frame"][None], game_variables=observation["variables"][None], state_h=h,
               state_c=c, episode_start=np.ones(1, np.float32))
    np.testing.assert_allclose(out["probabilities"].numpy()[0], expected, atol=1e-5)

    resume = ["--resume", "--model-dir", str(stacked_run), "--frames-dir", str(tmp_path / "frames")]
    assert train_main([*resume, "--max-steps", "360"]) == 0
    assert json.loads((stacked_run / "config.json").read_text())["frame_stack"] == 4


@pytest.mark.slow
def test_resume_cannot_change_the_stack(stacked_run, capsys):
    assert train_main(["--resume", "--model-dir", str(stacked_run), "--frame-stack", "2"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "cannot change --frame-stack (trained with 4) on --resume" in lines[0], lines
    saved = TrainConfig.from_dict(json.loads((stacked_run / "config.json").read_text()))
    assert resolve_resumed_run(saved, {"frame_stack": 4}, "run").frame_stack == 4  # the same value is fine


@pytest.mark.slow
def test_a_checkpoint_from_before_the_flag_plays_and_resumes_with_one_frame(tmp_path):
    """A checkpoint whose saved config has no frame_stack, as every one before this issue: upgraded to 1, its
    network built for single frames, it plays and resumes (saving frame_stack 1 from then on)."""
    import keras
    import tensorflow as tf

    from doom_a3c.algo.model.actor_critic import build_actor_critic
    from doom_a3c.run.agent import load_agent
    from doom_a3c.run.playback import play
    from doom_a3c.runtime.checkpoint import Checkpointer, RunCounters, read_checkpoint

    fixture = read_checkpoint(os.path.join(REPO_ROOT, "tests", "fixtures", "old_basic_checkpoint", "last.ckpt"))
    assert "frame_stack" not in fixture.config and upgrade_saved_config(fixture.config, "fixture").frame_stack == 1
    config = resolve_new_run({"scenario": "FakeImage-v0", "env_module": FAKES, "frame_size": 42, "lstm_size": 8,
                              "hidden_size": 16, "workers": 1, "envs_per_worker": 2, "env_processes": 0,
                              "gif_every": 0, "evaluate": False, "model_dir": str(tmp_path / "model"),
                              "frames_dir": str(tmp_path / "frames")})
    old = {k: v for k, v in config.to_dict().items() if k != "frame_stack"}
    assert upgrade_saved_config(old, "old").frame_stack == 1
    net = build_actor_critic(config, len(config.actions), (42, 42, 1), name="global")
    optimizer = keras.optimizers.Adam(1e-4)
    optimizer.build(net.trainable_variables)
    counters = RunCounters(config, len(config.actions))
    counters.config_json.assign(json.dumps(old))  # saved before the field existed
    Checkpointer(str(tmp_path / "model"), tf.train.Checkpoint(model=net, optimizer=optimizer, run=counters),
                 counters).save()
    assert "frame_stack" not in json.loads((tmp_path / "model" / "config.json").read_text())
    agent = load_agent(str(tmp_path / "model" / "last.ckpt"))
    assert agent.config.frame_stack == 1 and agent.spec.observation_shape == (42, 42, 1)
    assert play(str(tmp_path / "model" / "last.ckpt"), str(tmp_path / "play"), episodes=1)[0].length == 20
    assert train_main(["--resume", "--model-dir", str(tmp_path / "model"), "--max-steps", "60"]) == 0
    assert json.loads((tmp_path / "model" / "config.json").read_text())["frame_stack"] == 1
