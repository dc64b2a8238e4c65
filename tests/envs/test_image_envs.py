"""Any gymnasium image env: the fake image envs of tests/fixtures/fake_image_envs.py (a Box image, a
Dict of an image and a vector) train a few hundred steps, play and export through the commands' own entry
points; ViZDoom's own gymnasium ids train and play, and leave no engine behind a trainer killed with kill -9;
what the network cannot take is one line."""
import json
import os
import subprocess
import sys

import imageio.v3 as iio
import numpy as np
import pytest
from gymnasium import spaces

from doom_a3c.cli import play_main, train_main
from doom_a3c.envs.gym.games import ImageEnvironment, image_layout
from doom_a3c.envs.gym.registry import import_env_module
from doom_a3c.errors import ConfigError

from support import REPO_ROOT, clean_up, engines_under, first_observation_and_policy, running, wait_for

pytestmark = pytest.mark.slow

FAKES = "tests.fixtures.fake_image_envs"
SMALL = ["--workers", 1, "--envs-per-worker", 2, "--rollout", 10, "--frame-size", 42, "--lstm-size", 16,
         "--hidden-size", 32, "--log-every-seconds", 1, "--gif-every", 2,
         "--no-evaluate"]  # evaluation during training is tested in test_eval_during_training.py, not here


def train_args(tmp_path, scenario, *flags):
    return [str(a) for a in ["--scenario", scenario, "--model-dir", tmp_path / "model", "--frames-dir",
                             tmp_path / "frames", *SMALL, *flags]]


def config_of(model):
    return json.loads((model / "config.json").read_text())


@pytest.fixture(scope="module")
def dict_run(tmp_path_factory):
    """FakeDictImage-v0 (an image and a vector), 300 steps, its games in a child process."""
    base = tmp_path_factory.mktemp("dict_image")
    assert train_main(train_args(base, "FakeDictImage-v0", "--env-module", FAKES, "--max-steps", 300,
                                 "--env-processes", 1)) == 0
    return base / "model"


def test_a_dict_image_env_trains_with_its_vector_as_standardised_game_variables(dict_run):
    config = config_of(dict_run)
    assert config["env_kind"] == "image" and config["env_module"] == FAKES and config["frame_skip"] == 1
    assert config["game_variables"] == [["vector[0]", 1.0], ["vector[1]", 1.0]] and config["normalize_variables"]
    rows = (dict_run / "progress.csv").read_text().splitlines()[1:]
    assert len(rows) >= 10  # 15-step episodes (the time limit) of 2 games


def test_a_dict_image_env_plays_and_exports(dict_run, tmp_path):
    assert play_main(["--model", str(dict_run / "last.ckpt"), "--out", str(tmp_path / "play"), "--episodes", "1"]) == 0
    episode = json.loads((tmp_path / "play" / "results.json").read_text())["episodes"][0]
    assert episode["length"] == 15 and 0 <= episode["reward"] <= 15
    assert iio.imread(tmp_path / "play" / "episode_001.gif", index=None).shape[-1] == 3  # the env's rgb_array
    assert play_main(["--model", str(dict_run / "last.ckpt"), "--export", str(tmp_path / "export")]) == 0
    policy = json.loads((tmp_path / "export" / "policy.json").read_text())
    assert policy["observation_shape"] == [42, 42, 1] and len(policy["game_variables"]) == 2

    import tensorflow as tf

    from doom_a3c.run.agent import load_agent

    agent = load_agent(str(dict_run / "last.ckpt"))
    observation, expected = first_observation_and_policy(agent)
    step = tf.saved_model.load(str(tmp_path / "export" / "saved_model")).signatures["serving_default"]
    h = c = np.zeros([1, 16], np.float32)
    out = step(observation=observation["frame"][None], game_variables=observation["variables"][None], state_h=h,
               state_c=c, episode_start=np.ones(1, np.float32))
    np.testing.assert_allclose(out["probabilities"].numpy()[0], expected, atol=1e-5)


def test_a_box_image_env_trains_in_colour_plays_and_exports(tmp_path):
    """FakeImage-v0 (HxWx3 uint8), --color, its games in this process; rgb_array frames in the GIFs."""
    assert train_main(train_args(tmp_path, "FakeImage-v0", "--env-module", FAKES, "--max-steps", 200, "--color",
                                 "--env-processes", 0)) == 0
    config = config_of(tmp_path / "model")
    assert config["env_kind"] == "image" and config["color"] is True and config["game_variables"] == []
    assert sorted((tmp_path / "frames").glob("episode_*.gif"))
    assert play_main(["--model", str(tmp_path / "model"), "--out", str(tmp_path / "play"), "--episodes", "1"]) == 0
    assert json.loads((tmp_path / "play" / "results.json").read_text())["episodes"][0]["length"] == 20
    assert play_main(["--model", str(tmp_path / "model"), "--export", str(tmp_path / "export")]) == 0
    assert json.loads((tmp_path / "export" / "policy.json").read_text())["observation_shape"] == [42, 42, 3]


def test_a_grey_image_without_rendering_and_a_unit_float_image_are_taken():
    """HxW uint8 with no rgb_array: GIFs show the image itself; floats in [0, 1] are scaled to uint8."""
    import_env_module(FAKES)
    grey = ImageEnvironment("FakeGreyImage-v0", seed=0, frame_size=42)
    try:
        assert grey.reset().shape == (42, 42, 1) and grey.screen().shape == (48, 64, 3)
    finally:
        grey.close()
    unit = ImageEnvironment("FakeUnitFloatImage-v0", seed=0, frame_size=42)
    try:
        frame = unit.reset()
        assert frame.dtype == np.uint8 and frame.max() == 250  # the bar's 250/255, back in uint8
    finally:
        unit.close()


image = spaces.Box(0, 255, (48, 64, 3), np.uint8)


@pytest.mark.parametrize("space,needle", [
    (spaces.Box(0.0, 255.0, (48, 64, 3), np.float32), "floats bounded by [0, 1]"),
    (spaces.Box(0, 255, (48, 64, 4), np.uint8), "C 1 (grey) or 3 (RGB)"),
    (spaces.Box(0, 255, (3, 48, 64), np.uint8), "channels last"),
    (spaces.Dict({"screen": image, "depth": spaces.Box(0, 255, (48, 64, 1), np.uint8)}), "one image"),
    (spaces.Dict({"screen": image, "text": spaces.Text(8)}), "1-D Box vectors only")])
def test_an_image_the_network_cannot_take_is_one_line(space, needle):
    with pytest.raises(ConfigError, match="FakeId-v0") as error:
        image_layout("FakeId-v0", space)
    assert needle in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("flags,needles", [
    (["--scenario", "FakeContinuousImage-v0", "--env-module", FAKES], ["continuous action space"]),
    (["--scenario", "FakeImage-v0", "--env-module", "no_such_module"], ["--env-module no_such_module"]),
    (["--scenario", "MyOwnImage-v0"], ["unknown gymnasium environment 'MyOwnImage-v0'", "--env-module MODULE"]),
    (["--scenario", "VizdoomBasic-MultiBinary-v1"], ["MultiBinary action space"]),
    (["--scenario", "CartPole-v1", "--color"], ["--color: for ViZDoom scenarios and image envs only"])])
def test_what_cannot_be_trained_is_one_line_and_exit_2(tmp_path, capsys, flags, needles):
    assert train_main([*flags, "--model-dir", str(tmp_path / "model")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert all(needle in lines[0] for needle in needles), lines[0]
    assert not (tmp_path / "model").exists()


def test_vizdoom_gymnasium_id_trains_and_plays_without_env_module(tmp_path):
    """VizdoomBasic-v1 (a Dict of 'screen' and 'gamevariables', Discrete(4)): its module is imported unasked."""
    assert train_main(train_args(tmp_path, "VizdoomBasic-v1", "--max-steps", 200, "--frame-skip", 4)) == 0
    config = config_of(tmp_path / "model")
    assert config["env_kind"] == "image" and config["env_module"] == "" and len(config["actions"]) == 4
    assert config["game_variables"] == [["gamevariables[0]", 1.0]] and config["env_processes"] == 2
    assert play_main(["--model", str(tmp_path / "model"), "--out", str(tmp_path / "play"), "--episodes", "1"]) == 0
    assert iio.imread(tmp_path / "play" / "episode_001.gif", index=None).shape[1:] == (240, 320, 3)


def test_no_engine_of_a_vizdoom_gymnasium_id_outlives_a_trainer_killed_with_kill_9(tmp_path):
    """gymnasium's ViZDoom env starts its engine itself, which outlives a killed Python (checked by hand); ours
    start it through engine_leash.sh (envs/gym/games.py, _leash_vizdoom_engine)."""
    log, errors = open(tmp_path / "train.log", "w"), open(tmp_path / "stderr.log", "w")
    proc = subprocess.Popen([sys.executable, os.path.join(REPO_ROOT, "train.py"),
                             *train_args(tmp_path, "VizdoomBasic-v1", "--frame-skip", 4, "--max-minutes", 3,
                                         "--env-processes", 0)],
                            cwd=REPO_ROOT, stdout=log, stderr=errors, start_new_session=True)
    proc.log, proc.errors = log, errors  # what test_faults.clean_up closes
    engines: list[int] = []
    try:
        started = wait_for(lambda: len(engines_under(proc.pid)) >= 2, seconds=120)
        assert started, (tmp_path / "stderr.log").read_text()[-3000:]
        engines = engines_under(proc.pid)
        proc.kill()
        proc.wait(timeout=30)
        assert wait_for(lambda: not any(running(p) for p in engines), seconds=10), engines
    finally:
        clean_up(proc, engines)
