"""--enemy-coef, the learning-only target of whether an enemy is in view: the target from a labels buffer made by
hand, its loss against hand numbers, the head's gradient, and a checkpoint trained with it that plays, exports and
resumes; without it, the network and the update are what they were."""
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo.learner import GradientStep
from doom_a3c.algo.losses import enemy_target_loss
from doom_a3c.envs.doom.labels import MIN_ENEMY_PIXELS, enemy_in_view
from doom_a3c.envs.interface import ENEMY, enemy_targets, network_inputs, observation_dtype
from doom_a3c.modes.build import build_global

from support import GAMES, SHAPE, STEPS, fixed_rollouts, run, small_config, spec


def label(name, value):
    return SimpleNamespace(object_name=name, value=value)


def test_an_enemy_is_in_view_when_a_monster_or_player_covers_enough_of_the_labels_buffer():
    buffer = np.zeros((12, 16), np.uint8)
    buffer[0, :MIN_ENEMY_PIXELS] = 3  # a bot, exactly enough pixels
    buffer[5, :12] = 7  # a medikit: many pixels, no enemy
    assert enemy_in_view(buffer, [label("Medikit", 7), label("DoomPlayer", 3)]) == 1.0
    buffer[0, 0] = 0  # one pixel short
    assert enemy_in_view(buffer, [label("Medikit", 7), label("DoomPlayer", 3)]) == 0.0
    buffer[9, :10] = 4
    assert enemy_in_view(buffer, [label("Medikit", 7), label("Cacodemon", 4)]) == 1.0
    assert enemy_in_view(None, [label("Cacodemon", 4)]) == 0.0  # no buffer (an episode's end)
    own = np.full((12, 16), 255, np.uint8)  # the agent's own weapon, labelled as a player
    assert enemy_in_view(own, [label("DoomPlayer", 255)]) == 0.0


def test_the_enemy_loss_matches_hand_computation():
    # logits 0: ln 2 a step whatever the target; logit ln 3 with target 1: -ln(3/4); with target 0: -ln(1/4)
    logits = tf.constant([[0.0, math.log(3.0)], [math.log(3.0), 0.0]])
    targets = tf.constant([[1.0, 1.0], [0.0, 0.0]])
    expected = (math.log(2) - math.log(0.75) - math.log(0.25) + math.log(2)) / 2  # summed over T, / B
    assert float(enemy_target_loss(logits, targets)) == pytest.approx(expected, abs=1e-6)


def test_a_record_carries_the_target_beside_the_frame_and_the_network_never_sees_it():
    observations = np.zeros((STEPS, GAMES), observation_dtype(SHAPE, 0, enemy_target=True))
    observations[ENEMY][2, 1] = 1.0
    assert enemy_targets(observations).shape == (STEPS, GAMES) and enemy_targets(observations)[2, 1] == 1.0
    frames = network_inputs(observations)  # no game variables: the frames alone
    assert isinstance(frames, np.ndarray) and frames.shape == (STEPS, GAMES, *SHAPE)
    assert enemy_targets(np.zeros((2, *SHAPE), np.uint8)) is None


def enemy_rollout(lstm_size):
    rollout = fixed_rollouts(1, lstm_size)[0]
    observations = np.zeros((STEPS, GAMES), observation_dtype(SHAPE, 0, enemy_target=True))
    observations["frame"] = rollout.observations
    observations[ENEMY][..., 0] = (np.arange(STEPS * GAMES).reshape(STEPS, GAMES) % 2).astype(np.float32)
    return rollout._replace(observations=observations)


def test_the_head_trains_beside_the_actor_critic_and_is_absent_without_the_flag(tmp_path):
    config = small_config(tmp_path, enemy_coef=0.5)
    parts = build_global(config, spec())
    net = parts.learner.net
    head = {id(v) for v in net.enemy_head.trainable_variables}
    gradient = GradientStep(net, config)(enemy_rollout(config.lstm_size))
    assert gradient.enemy_loss == pytest.approx(math.log(2), abs=0.1)  # a fresh head: about ln 2 a step
    for variable, grad in zip(net.trainable_variables, gradient.grads):
        if id(variable) in head:
            assert float(tf.norm(grad)) > 0
    # Off: no head, no enemy loss, the same variables as a network made before the flag
    plain = build_global(small_config(tmp_path / "off"), spec()).learner
    assert plain.net.enemy_head is None
    assert len(plain.net.trainable_variables) == len(net.trainable_variables) - len(head)
    assert GradientStep(plain.net, small_config(tmp_path / "off"))(fixed_rollouts(1, 16)[0]).enemy_loss is None


def test_the_enemy_coef_is_refused_off_vizdoom(tmp_path):
    from doom_a3c.errors import ConfigError
    from doom_a3c.run.resolve import resolve_new_run

    with pytest.raises(ConfigError, match="--enemy-coef needs a ViZDoom scenario"):
        resolve_new_run({"scenario": "CartPole-v1", "enemy_coef": 0.1, "model_dir": str(tmp_path / "m")}).validate()


@pytest.mark.slow
def test_a_checkpoint_trained_with_the_head_plays_exports_and_resumes(tmp_path):
    """defend_the_center's monsters are in view on most frames: the games report the target, the run trains the
    head (TensorBoard's Losses/Enemy Loss), play.py and --export take the policy without it, --resume keeps it."""
    model = tmp_path / "models"
    common = ["--scenario", "defend_the_center", "--enemy-coef", "0.1", "--model-dir", model,
              "--frames-dir", tmp_path / "frames", "--workers", "1", "--no-evaluate", "--gif-every", "0"]
    first = run("train.py", *common, "--max-steps", "800", timeout=300)
    assert first.returncode == 0, first.stderr
    saved = json.loads((model / "config.json").read_text())
    assert saved["enemy_coef"] == 0.1
    played = run("play.py", "--model", model / "last.ckpt", "--out", tmp_path / "play", "--episodes", "1",
                 "--video", "gif", timeout=300)
    assert played.returncode == 0, played.stderr
    assert json.loads((tmp_path / "play" / "results.json").read_text())["episodes"]
    exported = run("play.py", "--model", model / "last.ckpt", "--export", tmp_path / "export", timeout=300)
    assert exported.returncode == 0, exported.stderr
    resumed = run("train.py", *common, "--resume", "--max-steps", "1600", timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((model / "config.json").read_text())["enemy_coef"] == 0.1


@pytest.mark.slow
def test_a_vizdoom_game_reports_whether_an_enemy_is_in_view(tmp_path):
    from doom_a3c.envs.doom.game import DoomEnvironment
    from doom_a3c.run.resolve import resolve_new_run

    config = resolve_new_run({"scenario": "defend_the_center", "enemy_coef": 0.1, "model_dir": str(tmp_path / "m")})
    env = DoomEnvironment(config, seed=1)
    try:
        seen = [float(env.reset()[ENEMY][0])]
        for _ in range(30):
            step = env.step(0)
            if step.game_over:
                break
            seen.append(float(step.observation[ENEMY][0]))
    finally:
        env.close()
    assert set(seen) <= {0.0, 1.0} and 1.0 in seen, seen  # defend_the_center's monsters walk in from every side
