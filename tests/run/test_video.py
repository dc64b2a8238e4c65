"""Videos: MP4 through imageio's ffmpeg plugin at the right frame count and rate, small screens upscaled, and
ViZDoom episodes recorded tic by tic (a frame per game tic) without changing the game."""
import dataclasses

import imageio.v3 as iio
import numpy as np
import pytest
from PIL import Image

from doom_a3c.run.recording import CAPTION_HEIGHT, write_video


def distinct_frames(count, height=120, width=160):
    rng = np.random.default_rng(0)
    return [rng.integers(0, 255, (height, width, 3), dtype=np.uint8) for _ in range(count)]


@pytest.mark.slow
def test_mp4_has_every_frame_at_the_game_rate_and_is_upscaled(tmp_path):
    paths = write_video(str(tmp_path / "episode"), distinct_frames(12), 1 / 35, "both")
    assert [p.rsplit(".", 1)[1] for p in paths] == ["gif", "mp4"]
    mp4 = iio.imread(paths[1], plugin="FFMPEG")
    assert mp4.shape == (12, 240, 320, 3)  # 160x120 doubled
    assert iio.immeta(paths[1], plugin="FFMPEG")["fps"] == pytest.approx(35.0)
    gif = iio.imread(paths[0], index=None)
    assert gif.shape[:3] == (12, 240, 320)


def test_odd_sizes_are_padded_for_h264_and_wide_frames_kept(tmp_path):
    paths = write_video(str(tmp_path / "cartpole"), distinct_frames(5, 201, 333), 1 / 50, "mp4")
    mp4 = iio.imread(paths[0], plugin="FFMPEG")
    assert mp4.shape == (5, 202, 334, 3)  # no upscaling past 320 wide; one black row and column
    assert iio.immeta(paths[0], plugin="FFMPEG")["fps"] == pytest.approx(50.0)


def test_captions_go_in_a_band_under_each_frame_and_leave_the_frame_alone(tmp_path):
    frames = distinct_frames(3)
    captions = ["frags 0  deaths 0  place 9 of 9", "frags 1  deaths 0  place 4 of 9", ""]
    paths = write_video(str(tmp_path / "match"), frames, 1 / 35, "gif", captions)
    gif = iio.imread(paths[0], index=None)[..., :3]
    assert gif.shape[:3] == (3, 240 + CAPTION_HEIGHT, 320)
    band = gif[:, 240:]
    assert band[0].max() > 128 and band[1].max() > 128  # white text on black
    assert band[2].max() < 40  # an empty caption: a black band (up to the GIF palette's nearest colour)
    assert not np.array_equal(band[0], band[1])  # the caption of each frame, not one for all
    uncaptioned = iio.imread(write_video(str(tmp_path / "plain"), frames, 1 / 35, "gif")[0], index=None)
    assert uncaptioned.shape[1] == 240
    with pytest.raises(ValueError, match="2 captions for 3 frames"):
        write_video(str(tmp_path / "bad"), frames, 1 / 35, "gif", captions[:2])


def basic_config(tmp_path):
    from doom_a3c.run.resolve import resolve_new_run

    return resolve_new_run({"scenario": "basic.wad", "model_dir": str(tmp_path)})


def scripted_episode(config, record_tics):
    from doom_a3c.envs.doom.game import DoomEnvironment

    env = DoomEnvironment(config, seed=5)
    env.record_tics = record_tics
    try:
        env.reset()
        steps, tics = [], 1
        rng = np.random.default_rng(1)
        while True:
            step = env.step(int(rng.integers(env.num_actions)))
            steps.append((step.reward, step.done, step.game_over))
            tics += len(env.tic_screens)
            if step.game_over:
                game = env._game
                return steps, tics, game.get_episode_time() - game.get_episode_start_time()
    finally:
        env.close()


def test_tic_by_tic_steps_play_the_same_game(tmp_path):
    config = basic_config(tmp_path)
    plain, _, plain_tics = scripted_episode(config, record_tics=False)
    recorded, frames, recorded_tics = scripted_episode(config, record_tics=True)
    assert recorded == plain  # the same rewards, terminals and length
    assert recorded_tics == plain_tics
    assert frames == recorded_tics  # the first screen and one per tic but the last (the engine shows none then)
    assert (len(plain) - 1) * config.frame_skip < frames <= len(plain) * config.frame_skip


@pytest.mark.slow
def test_a_played_basic_episode_gif_has_a_frame_per_tic(tmp_path):
    from doom_a3c.envs.gymnasium_env import GameEnv
    from doom_a3c.envs.interface import spec_of
    from doom_a3c.modes.build import build_network
    from doom_a3c.run.agent import Agent
    from doom_a3c.run.playback import play_episode, seconds_per_frame

    config = basic_config(tmp_path)
    env = GameEnv(config, seed=3)
    try:
        spec = spec_of(env.game)
        agent = Agent(build_network(config, spec, "global"), config, spec, "untrained", 0, seed=2)
        reward, length, frames, _ = play_episode(agent, env)
        tics = env.game._game.get_episode_time() - env.game._game.get_episode_start_time()
    finally:
        env.close()
    assert len(frames) == tics and (length - 1) * config.frame_skip < tics <= length * config.frame_skip
    (gif,) = write_video(str(tmp_path / "episode"), frames, seconds_per_frame(env), "gif")
    read = iio.imread(gif, index=None)
    # Pillow folds a frame identical to the one before into it (adding its duration): count the distinct ones.
    changes = 1 + sum(not np.array_equal(a, b) for a, b in zip(frames, frames[1:]))
    assert read.shape[0] == changes and read.shape[2] >= 320
    with Image.open(gif) as image:
        durations = []
        for index in range(image.n_frames):
            image.seek(index)
            durations.append(image.info["duration"])
    assert sum(durations) == tics * 30  # a tic's 28.6 ms in GIF's centiseconds: within 5% of the game's speed


class UniformPolicy:
    """Equal logits for 3 actions, no LSTM: the runner samples uniformly."""

    def start_state(self):
        from doom_a3c.algo.model.actor_critic import LSTMState

        return LSTMState(np.zeros((2, 0), np.float32), np.zeros((2, 0), np.float32))

    def act(self, observations, starts):
        return np.zeros((len(observations), 3), np.float32), np.zeros(len(observations), np.float32)

    def value(self, observations, starts):
        return np.zeros(len(observations), np.float32)


@pytest.mark.parametrize("processes", [0, 1])
def test_training_recordings_of_doom_show_every_tic_with_video_tics(tmp_path, processes):
    """--video-tics: game 0's recorded episodes hold a frame per tic at 1/35 s a frame, in the trainer's own games
    and in --env-processes children; the unrecorded game 1 goes on a step at a time."""
    from doom_a3c.algo.rollout import GameRunner
    from doom_a3c.envs.batch import EnvBatch
    from doom_a3c.envs.factory import make_environment
    from doom_a3c.envs.process_batch import ProcessEnvBatch
    from doom_a3c.runtime.state import RunState

    config = dataclasses.replace(basic_config(tmp_path), video_tics=True)
    if processes:
        games = ProcessEnvBatch([lambda s=s: make_environment(config, s) for s in (3, 4)], processes=processes)
    else:
        games = EnvBatch([make_environment(config, s) for s in (3, 4)])
    run = RunState()
    try:
        runner = GameRunner(0, config, games, UniformPolicy(), run, seed=0, record_every=1)
        episodes = []
        while len([e for e in episodes if e.worker == 0 and e.frames]) < 2:
            runner.collect(10)
            episodes += run.finished_episodes()
    finally:
        games.close()
    recorded = [e for e in episodes if e.frames]
    assert recorded and all(e.seconds_per_frame == pytest.approx(1 / 35) for e in recorded)
    for e in recorded:
        # basic: 4 tics a step, the last step's only up to the episode's end (the engine shows no frame then)
        assert (e.length - 1) * config.frame_skip < len(e.frames) <= e.length * config.frame_skip
        assert e.frames[0].shape == (120, 160, 3)
    assert sum(e.frames is None for e in episodes) >= 1  # game 1 is never recorded


def test_a_recorded_training_episode_keeps_its_first_frames_only(tmp_path, monkeypatch):
    """A long episode (a 12-minute cig match) is recorded up to MAX_RECORDED_FRAMES frames: the episode's start;
    its length and score still count every step."""
    import doom_a3c.algo.rollout as rollout
    from doom_a3c.envs.batch import EnvBatch
    from doom_a3c.runtime.state import RunState
    from support import CountingEnv, small_config

    monkeypatch.setattr(rollout, "MAX_RECORDED_FRAMES", 5)
    games = EnvBatch([CountingEnv(0, length=12), CountingEnv(1, length=3)])
    run = RunState()
    runner = rollout.GameRunner(0, small_config(tmp_path), games, UniformPolicy(), run, seed=0, record_every=1)
    episodes = []
    while not any(e.frames for e in episodes):
        runner.collect(4)
        episodes += run.finished_episodes()
    recorded = next(e for e in episodes if e.frames)
    assert recorded.length == 12 and len(recorded.frames) == 5  # the reset's screen and the first 4 steps'


def test_a_matchs_caption_reads_its_standing():
    from doom_a3c.run.playback import match_caption

    report = {"frags": 3.0, "deaths": 2.0, "frags_per_minute": 1.2, "place": 4.0, "players": 9.0}
    assert match_caption(report) == "frags 3  deaths 2  place 4 of 9"
