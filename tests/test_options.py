"""Each algorithm option does what its flag says, on small fakes: epsilon-greedy, reward clipping,
n-step targets, gradient normalisation, learning-rate annealing, the network variants, presets,
and episode reporting across an Atari-style life loss."""
from typing import NamedTuple

import keras
import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.config import ConfigError, TrainConfig
from doom_a3c.exploration import EpsilonSchedule
from doom_a3c.network import ActorCritic, LSTMState, build_actor_critic
from doom_a3c.returns import discounted_returns, n_step_targets
from doom_a3c.scenarios import ATARI, DOOM, VECTOR, environment_kind, with_preset_defaults
from doom_a3c.worker import Rollout, SharedState, Worker

VECTOR_SHAPE = (4,)


class LifeStep(NamedTuple):
    observation: np.ndarray
    reward: float
    done: bool
    game_over: bool


class LivesEnv:
    """A vector env with 3 lives of 4 steps each, +1 per step: a life loss is a learning terminal only,
    the whole game (12 steps, score 12) is one episode."""

    num_actions = 2
    action_names = ["a", "b"]
    observation_shape = VECTOR_SHAPE

    def reset(self):
        self.t = 0
        return np.zeros(VECTOR_SHAPE, np.float32)

    def step(self, action):
        self.t += 1
        over = self.t == 12
        return LifeStep(np.full(VECTOR_SHAPE, self.t, np.float32), 1.0, self.t % 4 == 0, over)

    def screen(self):
        return np.zeros((8, 8, 3), np.uint8)

    def close(self):
        pass


def make_worker(config, envs=None, epsilon=None, clip_rewards=False, shape=VECTOR_SHAPE, actions=2):
    global_net = build_actor_critic(config, actions, shape, name="global")
    optimizer = keras.optimizers.Adam(config.learning_rate)
    optimizer.build(global_net.trainable_variables)
    shared = SharedState(global_net, optimizer)
    local = build_actor_critic(config, actions, shape, name="worker_0")
    worker = Worker(0, config, envs or [LivesEnv()], local, shared, reward_scale=1.0, seed=0,
                    clip_rewards=clip_rewards, epsilon=epsilon)
    worker.sync()
    return worker, shared


def small_config(**overrides):
    return TrainConfig(scenario="CartPole-v1", lstm_size=8, hidden_size=8, **overrides).validate()


def fake_rollout(rewards, dones, values, bootstrap):
    steps, batch = rewards.shape
    zeros = np.zeros((batch, 8), np.float32)
    return Rollout(np.zeros((steps, batch, *VECTOR_SHAPE), np.float32), np.zeros((steps, batch), np.int32),
                   rewards.astype(np.float32), dones.astype(np.float32), np.zeros((steps, batch), np.float32),
                   values.astype(np.float32), LSTMState(zeros, zeros), np.asarray(bootstrap, np.float32))


def targets_seen_by_learn(worker, rollout):
    """(returns, advantages) that learn() hands to the gradient step."""
    seen = {}

    def record(observations, actions, starts, h, c, returns, advantages):
        seen["returns"], seen["advantages"] = np.asarray(returns), np.asarray(advantages)
        return [], [0.0] * 5, False  # not finite: nothing is applied

    worker._gradients = record
    worker.learn(rollout)
    return seen["returns"], seen["advantages"]


# ---- epsilon-greedy --------------------------------------------------------------------------------
def test_epsilon_one_gives_uniform_actions_over_a_confident_policy():
    worker, _ = make_worker(small_config(), epsilon=EpsilonSchedule(1.0, 1.0, 0), actions=4)
    logits = np.tile([[50.0, 0.0, 0.0, 0.0]], (20_000, 1))  # the policy always picks action 0
    counts = np.bincount(worker._sample(logits), minlength=4) / 20_000
    np.testing.assert_allclose(counts, 0.25, atol=0.015)


def test_no_epsilon_follows_the_policy_and_epsilon_decays_with_global_steps():
    worker, shared = make_worker(small_config(), epsilon=None)
    logits = np.tile([[50.0, 0.0]], (5000, 1))
    assert np.all(worker._sample(logits) == 0)
    worker.epsilon = EpsilonSchedule(1.0, 0.0, 1000)
    shared.env_steps = 1000  # fully decayed: epsilon 0
    assert np.all(worker._sample(logits) == 0)
    shared.env_steps = 500  # epsilon 0.5: half the actions random, half of those are action 1
    assert np.mean(worker._sample(logits) == 1) == pytest.approx(0.25, abs=0.03)


def test_trainer_gives_each_worker_its_own_final_epsilon(tmp_path, monkeypatch):
    from doom_a3c import trainer as trainer_module
    from doom_a3c.trainer import Trainer

    monkeypatch.setattr(trainer_module, "configure_threads", lambda workers: None)  # TF is already running

    config = TrainConfig(scenario="CartPole-v1", workers=3, envs_per_worker=1, epsilon_start=0.4, epsilon_end=0.1,
                         epsilon_decay_steps=100, epsilon_spread="linear", model_dir=str(tmp_path / "m"),
                         frames_dir=str(tmp_path / "f"), lstm_size=8, hidden_size=8).validate()
    trainer = Trainer(config)
    trainer._prepare()
    trainer._build()
    try:
        schedules = [w.epsilon for w in trainer.workers]
        assert [s.start for s in schedules] == [0.4] * 3
        np.testing.assert_allclose([s.end for s in schedules], [0.1, 0.25, 0.4])
        assert all(s.decay_steps == 100 for s in schedules)
    finally:
        trainer.log.close()
        trainer._close_workers()


# ---- learning targets ------------------------------------------------------------------------------
REWARDS = np.array([[5.0], [-3.0], [0.5], [2.0]])
VALUES = np.array([[1.0], [2.0], [3.0], [4.0]])
DONES = np.array([[0], [0], [1], [0]])


def test_reward_clipping_changes_the_learning_targets_only():
    worker, _ = make_worker(small_config(gae_lambda=1.0), clip_rewards=True)
    returns, advantages = targets_seen_by_learn(worker, fake_rollout(REWARDS, DONES, VALUES, [10.0]))
    clipped = np.array([[1.0], [-1.0], [0.5], [1.0]])
    np.testing.assert_allclose(returns, discounted_returns(clipped, DONES, [10.0], 0.99), rtol=1e-6)
    np.testing.assert_allclose(advantages, returns - VALUES, rtol=1e-5)


def test_normalized_advantages_have_mean_0_and_std_1_and_leave_the_returns_alone():
    worker, _ = make_worker(small_config(gae_lambda=1.0, normalize_advantages=True))
    returns, advantages = targets_seen_by_learn(worker, fake_rollout(REWARDS, DONES, VALUES, [10.0]))
    np.testing.assert_allclose(returns, discounted_returns(REWARDS, DONES, [10.0], 0.99), rtol=1e-6)
    raw = returns - VALUES
    np.testing.assert_allclose(advantages, (raw - raw.mean()) / raw.std(), rtol=1e-5)
    assert abs(advantages.mean()) < 1e-6 and advantages.std() == pytest.approx(1.0, rel=1e-5)


@pytest.mark.parametrize("variant", ["zero", "max"])
def test_nstep_advantage_uses_n_step_targets(variant):
    worker, _ = make_worker(small_config(advantage="nstep", n_step=2, n_step_variant=variant, gamma=0.5))
    returns, advantages = targets_seen_by_learn(worker, fake_rollout(REWARDS, np.zeros((4, 1)), VALUES, [10.0]))
    # by hand, gamma 0.5, n 2: t0 = 5 - 1.5 + 0.25*3 = 4.25, t1 = -3 + 0.25 + 0.25*4 = -1.75,
    # t2 = 0.5 + 1 + 0.25*10 = 4; t3 ("max") = 2 + 0.5*10 = 7, ("zero") = 2 (its horizon overruns)
    expected = [4.25, -1.75, 4.0, 7.0 if variant == "max" else 2.0]
    np.testing.assert_allclose(returns[:, 0], expected)
    np.testing.assert_allclose(returns, n_step_targets(REWARDS, VALUES, np.zeros((4, 1)), [10.0], 0.5, 2, variant))
    np.testing.assert_allclose(advantages, returns - VALUES)


# ---- gradients and learning rate -------------------------------------------------------------------
def _gradients(worker, rollout):
    advantages = np.ones_like(rollout.rewards)
    grads, metrics, finite = worker._gradients(rollout.observations, rollout.actions, rollout.starts,
                                               rollout.initial_state.h, rollout.initial_state.c,
                                               rollout.rewards * 100, advantages)
    return [g.numpy() for g in grads], float(metrics[3])


def test_gradient_normalisation_caps_each_tensor_and_clipping_the_global_norm():
    rollout = fake_rollout(np.ones((4, 1)), np.zeros((4, 1)), VALUES, [0.0])
    rollout = rollout._replace(observations=np.random.default_rng(0).normal(size=(4, 1, 4)).astype(np.float32))
    worker, _ = make_worker(small_config(gradient_mode="normalize", normalize_norm=1e-4))
    grads, norm_before = _gradients(worker, rollout)
    assert norm_before > 1.0
    for g in grads:
        assert np.linalg.norm(g) / g.size <= 1e-4 * (1 + 1e-4)
    worker, _ = make_worker(small_config(gradient_mode="clip", clip_norm=0.5))
    grads, norm_before = _gradients(worker, rollout)
    assert np.sqrt(sum(np.sum(g ** 2) for g in grads)) == pytest.approx(0.5, rel=1e-4)


def test_linear_schedule_anneals_the_learning_rate_with_global_steps():
    worker, shared = make_worker(small_config(lr_schedule="linear", max_steps=1000, learning_rate=1e-3))
    shared.env_steps = 250
    worker.learn(worker.collect_rollout(4))  # collect adds 4 steps: 254 -> lr 1e-3 * (1 - 0.254)
    assert float(shared.optimizer.learning_rate.numpy()) == pytest.approx(1e-3 * (1 - 254 / 1000), rel=1e-5)
    shared.env_steps = 5000
    worker.learn(worker.collect_rollout(4))
    assert float(shared.optimizer.learning_rate.numpy()) == 0.0


def test_linear_schedule_needs_max_steps():
    with pytest.raises(ConfigError, match="--max-steps"):
        TrainConfig(lr_schedule="linear").validate()


# ---- true scores across lives -------------------------------------------------------------------------
def test_life_loss_ends_learning_episodes_but_reports_the_whole_game():
    worker, shared = make_worker(small_config())
    rollout = worker.collect_rollout(24)  # two games of 3 lives
    np.testing.assert_array_equal(np.flatnonzero(rollout.dones[:, 0]), [3, 7, 11, 15, 19, 23])
    np.testing.assert_array_equal(np.flatnonzero(rollout.starts[:, 0]), [0, 4, 8, 12, 16, 20])  # LSTM resets
    episodes = [shared.episodes.get_nowait() for _ in range(shared.episodes.qsize())]
    assert [(e.reward, e.length) for e in episodes] == [(12.0, 12), (12.0, 12)]


# ---- network variants ----------------------------------------------------------------------------------
def test_dense_torso_no_lstm_and_separate_critic_shapes():
    net = build_actor_critic(small_config(no_lstm=True), 3, VECTOR_SHAPE, "n")
    out = net.step(tf.ones([5, 4]), net.initial_state(5), tf.zeros([5]))
    assert out.logits.shape == (5, 3) and out.values.shape == (5,) and out.state.h.shape == (5, 0)
    assert not any("lstm" in v.path for v in net.trainable_variables)
    net = build_actor_critic(small_config(separate_networks=True), 3, VECTOR_SHAPE, "s")
    assert net.initial_state(2).h.shape == (2, 16)  # actor and critic LSTM states side by side
    conv = build_actor_critic(small_config(), 3, (84, 84, 1), "c")
    assert conv.torso == "conv" and net.torso == "dense"


def test_separate_critic_shares_no_weights_with_the_actor():
    net = build_actor_critic(small_config(separate_networks=True), 3, VECTOR_SHAPE, "s")
    observations = tf.random.normal([2, 3, 4])
    with tf.GradientTape(persistent=True) as tape:
        out = net.unroll(observations, net.initial_state(3), tf.zeros([2, 3]))
        value, policy = tf.reduce_sum(out.values), tf.reduce_sum(out.logits)
    value_grads = tape.gradient(value, net.trainable_variables)
    policy_grads = tape.gradient(policy, net.trainable_variables)
    touches = lambda g: g is not None and bool(np.any(g.numpy() != 0))  # noqa: E731
    for variable, vg, pg in zip(net.trainable_variables, value_grads, policy_grads):
        assert touches(vg) != touches(pg), variable.path  # each weight serves exactly one of the two
        assert ("critic_" in variable.path or "value" in variable.path) == touches(vg), variable.path


@pytest.mark.parametrize("options", [{"no_lstm": True}, {"separate_networks": True}])
def test_unroll_equals_chained_steps_for_the_variants(options):
    net = build_actor_critic(small_config(**options), 3, VECTOR_SHAPE, "u")
    observations = tf.random.normal([6, 2, 4], seed=1)
    starts = tf.constant([[1, 1], [0, 0], [0, 1], [1, 0], [0, 0], [0, 0]], tf.float32)
    rolled = net.unroll(observations, net.initial_state(2), starts)
    state, logits = net.initial_state(2), []
    for t in range(6):
        out = net.step(observations[t], state, starts[t])
        state = out.state
        logits.append(out.logits)
    np.testing.assert_allclose(rolled.logits.numpy(), tf.stack(logits).numpy(), atol=1e-5)


# ---- environment kinds and presets ----------------------------------------------------------------------
@pytest.mark.parametrize("value,kind", [("basic.wad", DOOM), ("defend_the_center", DOOM), ("ALE/Pong-v5", ATARI),
                                        ("ALE/SpaceInvaders-v5", ATARI), ("CartPole-v1", VECTOR),
                                        ("Acrobot-v1", VECTOR)])
def test_one_flag_selects_three_kinds(value, kind):
    assert environment_kind(value) == kind


def test_misspelt_atari_id_is_an_error_naming_what_is_supported():
    with pytest.raises(ConfigError, match="did you mean 'ALE/Pong-v5'.*supported: Atari"):
        environment_kind("ALE/Pongg-v5")


def test_preset_fills_only_the_flags_not_given():
    config = TrainConfig(scenario="CartPole-v1", learning_rate=0.01)
    preset = with_preset_defaults(config, explicit={"scenario", "learning_rate"})
    assert preset.learning_rate == 0.01  # given on the command line: kept
    assert preset.no_lstm is True and preset.envs_per_worker == 16  # from scenarios/CartPole-v1.toml
    assert with_preset_defaults(TrainConfig(scenario="defend_the_center"), explicit=set()) == TrainConfig(
        scenario="defend_the_center")  # no [train] table: the defaults stay
    basic = with_preset_defaults(TrainConfig(), explicit=set())
    assert (basic.frame_size, basic.envs_per_worker, basic.rollout, basic.gamma) == (42, 8, 10, 0.9)  # basic.toml


def test_every_atari_game_takes_the_atari_preset_unless_a_flag_is_given():
    """scenarios/atari.toml's [train] table applies to any ALE id, named in a preset or not."""
    for game in ("ALE/Pong-v5", "ALE/Qbert-v5"):
        preset = with_preset_defaults(TrainConfig(scenario=game), explicit={"scenario"})
        assert preset.rollout == 20 and preset.envs_per_worker == 4 and preset.gae_lambda == 0.95
    kept = with_preset_defaults(TrainConfig(scenario="ALE/Pong-v5", rollout=30), explicit={"scenario", "rollout"})
    assert kept.rollout == 30
    assert with_preset_defaults(TrainConfig(scenario="ALE/Pong-v5", gae_lambda=1.0),
                                explicit={"scenario", "gae_lambda"}).gae_lambda == 1.0
    assert with_preset_defaults(TrainConfig(scenario="CartPole-v1"), explicit={"scenario"}).rollout == 10  # not Atari


def test_new_options_round_trip_through_the_saved_config():
    config = TrainConfig(advantage="nstep", n_step=3, n_step_variant="zero", separate_networks=True, no_lstm=True,
                         epsilon_start=0.4, epsilon_end=0.1, epsilon_decay_steps=10, epsilon_spread="geometric",
                         gradient_mode="normalize", normalize_norm=0.2, lr_schedule="linear", max_steps=5,
                         clip_rewards="off", hidden_size=32, target_reward=1.0).validate()
    import json

    assert TrainConfig.from_dict(json.loads(config.to_json())) == config


@pytest.mark.parametrize("field,value,flag", [("n_step", 0, "--n-step"), ("epsilon_start", 1.5, "--epsilon-start"),
                                              ("normalize_norm", 0.0, "--normalize-norm"),
                                              ("hidden_size", 0, "--hidden-size"),
                                              ("epsilon_spread", "geometric", "--epsilon-spread")])
def test_bad_option_values(field, value, flag):
    with pytest.raises(ConfigError, match=flag):
        TrainConfig(**{field: value}).validate()
