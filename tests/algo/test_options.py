"""Each algorithm option does what its flag says, on small fakes: epsilon-greedy, reward clipping,
n-step targets, gradient normalisation, learning-rate annealing, the network variants, presets,
and episode reporting across an Atari-style life loss."""
import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo.exploration import EpsilonSchedule
from doom_a3c.algo.learner import GlobalLearner, GradientStep, uses_clipped_passes
from doom_a3c.algo.local_copy import LocalCopy
from doom_a3c.algo.model.actor_critic import LSTMState, build_actor_critic
from doom_a3c.algo.returns import discounted_returns, n_step_targets
from doom_a3c.algo.rollout import GameRunner
from doom_a3c.config import TrainConfig, build_parser, given_values
from doom_a3c.envs.batch import EnvBatch
from doom_a3c.envs.doom.scenario_files import shipped_scenarios_dir
from doom_a3c.envs.interface import Step
from doom_a3c.envs.scenario import ATARI, DOOM, VECTOR, environment_kind
from doom_a3c.errors import ConfigError
from doom_a3c.modes.a3c import A3CWorker
from doom_a3c.run.presets import own_map_defaults
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.saved_config import resolve_resumed_run, upgrade_saved_config
from doom_a3c.runtime.state import RunState

from support import VECTOR_SHAPE, fake_rollout


class LivesEnv:
    """A vector env with 3 lives of 4 steps each, +1 per step: a life loss is a learning terminal only,
    the whole game (12 steps, score 12) is one episode."""

    num_actions = 2
    action_names = ["a", "b"]
    observation_shape = VECTOR_SHAPE
    seconds_per_step = 0.02

    def reset(self):
        self.t = 0
        return np.zeros(VECTOR_SHAPE, np.float32)

    def step(self, action):
        self.t += 1
        over = self.t == 12
        return Step(np.full(VECTOR_SHAPE, self.t, np.float32), 1.0, self.t % 4 == 0, over)

    def screen(self):
        return np.zeros((8, 8, 3), np.uint8)

    def close(self):
        pass


class ConfidentPolicy:
    """A `Policy` whose logits always favour one action by far (its own sample picks it every time)."""

    def __init__(self, logits, batch):
        self.logits = np.tile(np.asarray(logits, np.float32), (batch, 1))

    def start_state(self):
        return LSTMState(np.zeros((len(self.logits), 0), np.float32), np.zeros((len(self.logits), 0), np.float32))

    def act(self, observations, starts):
        return self.logits, np.zeros(len(self.logits), np.float32)

    def value(self, observations, starts):
        return np.zeros(len(self.logits), np.float32)


def sampled_actions(logits, epsilon, env_steps=0, games=20, steps=1000):
    """The actions a GameRunner takes over `steps` x `games` steps from a confident policy, with the run's
    global step count at `env_steps` (the epsilon schedule's clock)."""
    run = RunState()
    run.counters.env_steps = env_steps
    runner = GameRunner(0, small_config(), EnvBatch([LivesEnv() for _ in range(games)]),
                        ConfidentPolicy(logits, games), run, seed=0, epsilon=epsilon)
    return runner.collect(steps).actions.ravel()


def make_worker(config, envs=None, epsilon=None, shape=VECTOR_SHAPE, actions=2):
    """A thread-A3C worker over the shared core: the global learner, a local copy and a GameRunner."""
    run = RunState()
    learner = GlobalLearner(config, build_actor_critic(config, actions, shape, name="global"), run.counters)
    games = EnvBatch(envs or [LivesEnv()])
    local = LocalCopy(build_actor_critic(config, actions, shape, name="worker_0"), config, len(games))
    parts = SimpleNamespace(config=config, run=run, learner=learner)  # what A3CWorker takes from a ThreadRun
    worker = A3CWorker(0, parts, games, local)
    worker.runner.epsilon = epsilon
    worker.sync()
    return worker, run, learner


def small_config(**overrides):
    """CartPole-sized networks; rewards unscaled and unclipped unless an option says otherwise."""
    values = {"reward_scale": 1.0, "clip_rewards": False, **overrides}
    return TrainConfig(scenario="CartPole-v1", lstm_size=8, hidden_size=8, **values).validate()


def targets_seen_by_gradient_step(config, rollout, monkeypatch):
    """(returns, advantages) that the learning step takes its gradient against."""
    from doom_a3c.algo import learner as learning

    seen = {}
    compute = learning.learning_targets

    def record(config, rollout):
        seen["returns"], seen["advantages"] = compute(config, rollout)
        return seen["returns"], seen["advantages"]

    monkeypatch.setattr(learning, "learning_targets", record)
    net = build_actor_critic(config, 2, VECTOR_SHAPE, name="t")
    GradientStep(net, config)(rollout)
    return seen["returns"], seen["advantages"]


# ---- epsilon-greedy --------------------------------------------------------------------------------
def test_epsilon_one_gives_uniform_actions_over_a_confident_policy():
    actions = sampled_actions([50.0, 0.0, 0.0, 0.0], EpsilonSchedule(1.0, 1.0, 0))  # the policy always picks 0
    counts = np.bincount(actions, minlength=4) / len(actions)
    np.testing.assert_allclose(counts, 0.25, atol=0.015)


def test_no_epsilon_follows_the_policy_and_epsilon_decays_with_global_steps():
    logits = [50.0, 0.0]
    assert np.all(sampled_actions(logits, None, steps=250) == 0)
    schedule = EpsilonSchedule(1.0, 0.0, 1000)
    assert np.all(sampled_actions(logits, schedule, env_steps=1000, steps=250) == 0)  # fully decayed: epsilon 0
    # epsilon 0.5: half the actions random, half of those are action 1
    assert np.mean(sampled_actions(logits, schedule, env_steps=500, steps=250) == 1) == pytest.approx(0.25, abs=0.03)


def test_each_worker_gets_its_own_final_epsilon(tmp_path, monkeypatch):
    """The run built for --epsilon-spread linear gives worker i its own schedule (thread A3C's wiring)."""
    from doom_a3c.modes import build
    from doom_a3c.modes.a3c import a3c_workers

    config = resolve_new_run(dict(scenario="CartPole-v1", workers=3, envs_per_worker=1, epsilon_start=0.4,
                                  epsilon_end=0.1, epsilon_decay_steps=100, epsilon_spread="linear",
                                  model_dir=str(tmp_path / "m"), frames_dir=str(tmp_path / "f"), lstm_size=8,
                                  hidden_size=8))
    parts = build.build_thread_run(config)
    workers = a3c_workers(parts)
    try:
        schedules = [w.runner.epsilon for w in workers]
        assert [s.start for s in schedules] == [0.4] * 3
        np.testing.assert_allclose([s.end for s in schedules], [0.1, 0.25, 0.4])
        assert all(s.decay_steps == 100 for s in schedules)
    finally:
        for worker in workers:
            worker.close()


# ---- learning targets ------------------------------------------------------------------------------
REWARDS = np.array([[5.0], [-3.0], [0.5], [2.0]])
VALUES = np.array([[1.0], [2.0], [3.0], [4.0]])
DONES = np.array([[0], [0], [1], [0]])


def test_reward_clipping_changes_the_learning_targets_only(monkeypatch):
    returns, advantages = targets_seen_by_gradient_step(small_config(gae_lambda=1.0, clip_rewards=True),
                                                        fake_rollout(REWARDS, DONES, VALUES, [10.0]), monkeypatch)
    clipped = np.array([[1.0], [-1.0], [0.5], [1.0]])
    np.testing.assert_allclose(returns, discounted_returns(clipped, DONES, [10.0], 0.99), rtol=1e-6)
    np.testing.assert_allclose(advantages, returns - VALUES, rtol=1e-5)


def test_reward_clipping_leaves_the_reported_scores_alone():
    """With --clip-rewards the rollout still holds the (scaled) game rewards and episodes report true scores."""
    class BigRewards(LivesEnv):
        def step(self, action):
            return super().step(action)._replace(reward=5.0)

    worker, run, _ = make_worker(small_config(clip_rewards=True), envs=[BigRewards()])
    rollout = worker.runner.collect(12)
    np.testing.assert_array_equal(rollout.rewards, 5.0)
    assert [(e.reward, e.length) for e in run.finished_episodes()] == [(60.0, 12)]


def test_normalized_advantages_have_mean_0_and_std_1_and_leave_the_returns_alone(monkeypatch):
    returns, advantages = targets_seen_by_gradient_step(small_config(gae_lambda=1.0, normalize_advantages=True),
                                                        fake_rollout(REWARDS, DONES, VALUES, [10.0]), monkeypatch)
    np.testing.assert_allclose(returns, discounted_returns(REWARDS, DONES, [10.0], 0.99), rtol=1e-6)
    raw = returns - VALUES
    np.testing.assert_allclose(advantages, (raw - raw.mean()) / raw.std(), rtol=1e-5)
    assert abs(advantages.mean()) < 1e-6 and advantages.std() == pytest.approx(1.0, rel=1e-5)


@pytest.mark.parametrize("variant", ["zero", "max"])
def test_nstep_advantage_uses_n_step_targets(variant, monkeypatch):
    config = small_config(advantage="nstep", n_step=2, n_step_variant=variant, gamma=0.5)
    returns, advantages = targets_seen_by_gradient_step(config, fake_rollout(REWARDS, np.zeros((4, 1)), VALUES,
                                                                             [10.0]), monkeypatch)
    # by hand, gamma 0.5, n 2: t0 = 5 - 1.5 + 0.25*3 = 4.25, t1 = -3 + 0.25 + 0.25*4 = -1.75,
    # t2 = 0.5 + 1 + 0.25*10 = 4; t3 ("max") = 2 + 0.5*10 = 7, ("zero") = 2 (its horizon overruns)
    expected = [4.25, -1.75, 4.0, 7.0 if variant == "max" else 2.0]
    np.testing.assert_allclose(returns[:, 0], expected)
    np.testing.assert_allclose(returns, n_step_targets(REWARDS, VALUES, np.zeros((4, 1)), [10.0], 0.5, 2, variant))
    np.testing.assert_allclose(advantages, returns - VALUES)


# ---- gradients and learning rate -------------------------------------------------------------------
def _gradient(config, rollout):
    """The processed gradients of the learning step and the global norm before processing."""
    gradient = GradientStep(build_actor_critic(config, 2, VECTOR_SHAPE, name="g"), config)(rollout)
    assert gradient.finite
    return [np.asarray(g) for g in gradient.grads], gradient.grad_norm


def test_gradient_normalisation_caps_each_tensor_and_clipping_the_global_norm():
    # rewards of 100 per step: returns in the hundreds, a value loss with a large gradient
    rollout = fake_rollout(np.full((4, 1), 100.0), np.zeros((4, 1)), VALUES, [0.0])
    rollout = rollout._replace(observations=np.random.default_rng(0).normal(size=(4, 1, 4)).astype(np.float32))
    grads, norm_before = _gradient(small_config(gradient_mode="normalize", normalize_norm=1e-4), rollout)
    assert norm_before > 1.0
    for g in grads:
        assert np.linalg.norm(g) / g.size <= 1e-4 * (1 + 1e-4)
    grads, norm_before = _gradient(small_config(gradient_mode="clip", clip_norm=0.5), rollout)
    assert norm_before > 0.5
    assert np.sqrt(sum(np.sum(g ** 2) for g in grads)) == pytest.approx(0.5, rel=1e-4)


def test_linear_schedule_anneals_the_learning_rate_with_global_steps():
    worker, run, learner = make_worker(small_config(lr_schedule="linear", max_steps=1000, learning_rate=1e-3))
    run.counters.env_steps = 250
    worker.learn(worker.runner.collect(4))  # collect adds 4 steps: 254 -> lr 1e-3 * (1 - 0.254)
    assert float(learner.optimizer.learning_rate.numpy()) == pytest.approx(1e-3 * (1 - 254 / 1000), rel=1e-5)
    assert learner.learning_rate == pytest.approx(1e-3 * (1 - 254 / 1000), rel=1e-5)
    run.counters.env_steps = 5000
    worker.learn(worker.runner.collect(4))
    assert float(learner.optimizer.learning_rate.numpy()) == 0.0
    assert run.counters.updates == 2 and run.counters.skipped_updates == 0


def test_linear_schedule_needs_max_steps():
    with pytest.raises(ConfigError, match="--max-steps"):
        TrainConfig(lr_schedule="linear").validate()


# ---- true scores across lives -------------------------------------------------------------------------
def test_life_loss_ends_learning_episodes_but_reports_the_whole_game():
    worker, run, _ = make_worker(small_config())
    rollout = worker.runner.collect(24)  # two games of 3 lives
    np.testing.assert_array_equal(np.flatnonzero(rollout.dones[:, 0]), [3, 7, 11, 15, 19, 23])
    np.testing.assert_array_equal(np.flatnonzero(rollout.starts[:, 0]), [0, 4, 8, 12, 16, 20])  # LSTM resets
    episodes = run.finished_episodes()
    assert [(e.reward, e.length) for e in episodes] == [(12.0, 12), (12.0, 12)]


# ---- network variants ----------------------------------------------------------------------------------
def test_dense_torso_no_lstm_and_separate_critic_shapes():
    net = build_actor_critic(small_config(lstm=False), 3, VECTOR_SHAPE, "n")
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


@pytest.mark.parametrize("options", [{"lstm": False}, {"separate_networks": True}])
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


def test_preset_fills_only_the_flags_not_given(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini into the working directory
    preset = resolve_new_run({"scenario": "CartPole-v1", "learning_rate": 0.01})
    assert preset.learning_rate == 0.01  # given on the command line: kept
    assert preset.lstm is False and preset.envs_per_worker == 16  # from scenarios/CartPole-v1.toml
    assert "preset for CartPole-v1 (CartPole-v1.toml): " in capsys.readouterr().out
    assert preset.is_resolved() and preset.env_kind == VECTOR and preset.scenario_path == "CartPole-v1"
    assert preset.actions == [["ACTION_0"], ["ACTION_1"]]
    assert (preset.frame_skip, preset.reward_scale, preset.clip_rewards) == (1, 1.0, False)  # a vector env's
    # A user's own .cfg has no preset (a copy, so no shipped scenario's preset applies).
    own, shipped = tmp_path / "own_line.cfg", Path(shipped_scenarios_dir())
    own.write_text((shipped / "defend_the_line.cfg").read_text())
    (tmp_path / "defend_the_line.wad").write_bytes((shipped / "defend_the_line.wad").read_bytes())
    center = resolve_new_run({"scenario": str(own)})
    # Without a preset of its own, a map takes scenarios/defaults/doom.toml's values, and the general ones else.
    defaults = dataclasses.replace(TrainConfig(scenario=str(own)), **own_map_defaults()["train"])
    environment = {"frame_skip", "reward_scale", "clip_rewards",  # filled in from the preset's top level
                   "action_set", "cfg_variables", "normalize_variables", "color",  # or, without one, the kind's
                   "env_processes",  # the kind's: ViZDoom's games in child processes, under the watchdog
                   "ale_vector",  # the kind's: Atari's games in ale-py's vector env, off for the others
                   "frame_stack",  # the preset's [train] value, else 1
                   "bots",  # the preset's top level, else 0
                   "audio",  # whether the .cfg enables the audio buffer
                   "precision"}  # "auto" resolved to what this CPU runs (doom_a3c/algo/model/precision.py)
    flags = [f for f in dataclasses.fields(TrainConfig) if f.metadata.get("flag", True) and f.name not in environment]
    assert {f.name: getattr(center, f.name) for f in flags} == {f.name: getattr(defaults, f.name) for f in flags}
    assert (center.frame_skip, center.reward_scale, center.action_set) == (defaults.frame_skip, 1.0, "combined")
    assert "own_line has no preset; the defaults for such maps (defaults/doom.toml): " in capsys.readouterr().out
    basic = resolve_new_run({})
    assert (basic.frame_size, basic.envs_per_worker, basic.rollout, basic.gamma) == (42, 8, 10, 0.9)  # basic.toml


@pytest.mark.parametrize("flags,field,value", [(["--lstm"], "lstm", True),
                                               (["--no-clip-rewards"], "clip_rewards", False),
                                               (["--clip-rewards"], "clip_rewards", True)])
def test_a_boolean_flag_beats_the_preset_both_ways(flags, field, value):
    """CartPole's preset switches the LSTM off and gymnasium envs leave clipping off; Atari clips. A flag given
    on the command line wins either way."""
    scenario = "ALE/Pong-v5" if flags == ["--no-clip-rewards"] else "CartPole-v1"
    given = given_values(build_parser("t").parse_args(["--scenario", scenario, *flags]))
    assert getattr(resolve_new_run({"scenario": scenario}), field) is not value  # the preset's
    assert getattr(resolve_new_run(given), field) is value


def test_every_atari_game_takes_the_atari_preset_unless_a_flag_is_given():
    """scenarios/atari.toml's [train] table applies to any ALE id, Pong's as well: no game has a preset of its own."""
    for game in ("ALE/Breakout-v5", "ALE/Qbert-v5", "ALE/Pong-v5"):
        preset = resolve_new_run({"scenario": game})
        assert preset.rollout == 20 and preset.envs_per_worker == 12 and preset.gae_lambda == 1.0
        assert preset.frame_stack == 4 and preset.lstm is False and preset.activation == "relu"
        assert preset.frame_norm == "pixel_background" and preset.frame_background is None
        image = np.array(preset.frame_background_image)  # measured from the game itself when the run starts
        assert image.shape == (84, 84) and 0 <= image.min() <= image.max() <= 255
        assert preset.learning_rate == 7e-4
        assert (preset.epochs, preset.minibatches, preset.clip_ratio) == (2, 2, 0.2)  # two clipped passes of two
        assert preset.weight_init == "glorot" and preset.optimizer == "adam"
        assert preset.env_kind == ATARI and preset.clip_rewards is True and preset.frame_skip == 4
    one_grey = resolve_new_run({"scenario": "ALE/Breakout-v5", "frame_norm": "background"})
    assert one_grey.frame_background == 0.0 and one_grey.frame_background_image is None  # its background is black
    assert resolve_new_run({"scenario": "ALE/Pong-v5", "rollout": 30}).rollout == 30
    assert resolve_new_run({"scenario": "ALE/Breakout-v5", "gae_lambda": 0.95}).gae_lambda == 0.95
    assert resolve_new_run({"scenario": "ALE/Breakout-v5", "activation": "elu"}).activation == "elu"
    assert resolve_new_run({"scenario": "CartPole-v1"}).rollout == 10  # not Atari
    assert resolve_new_run({"scenario": "basic.wad"}).activation == "elu"  # Doom keeps ELU


def test_the_atari_passes_give_way_to_a_flag_to_fewer_games_and_to_a_run_saved_with_one_update(capsys):
    """--epochs 1 gives back A3C's one update a rollout; one game a worker cannot be split in two, so it takes one
    minibatch (and says so); a run saved with one update a rollout resumes with one whatever the defaults say."""
    one_update = resolve_new_run({"scenario": "ALE/Breakout-v5", "epochs": 1, "minibatches": 1})
    assert not uses_clipped_passes(one_update)
    capsys.readouterr()
    one_game = resolve_new_run({"scenario": "ALE/Breakout-v5", "envs_per_worker": 1})
    assert (one_game.epochs, one_game.minibatches) == (2, 1)
    assert "epochs=2, minibatches=1" in capsys.readouterr().out

    saved = json.loads(one_update.to_json())
    resumed = resolve_resumed_run(upgrade_saved_config(saved, "old/last.ckpt"), {"max_steps": 10}, "old/last.ckpt")
    assert (resumed.epochs, resumed.minibatches) == (1, 1)
    before_the_passes = {k: v for k, v in saved.items() if k not in ("epochs", "minibatches", "clip_ratio")}
    assert not uses_clipped_passes(upgrade_saved_config(before_the_passes, "old/last.ckpt"))


@pytest.mark.parametrize("game", ["ALE/Qbert-v5", "ALE/Phoenix-v5", "ALE/Pong-v5"])
def test_every_atari_game_resolves_to_breakouts_config_but_for_the_games_own_facts(game, tmp_path):
    """One default set: a game's run differs from Breakout's only in what the game itself is (its id, its action
    set, each pixel's background), never in a learning value."""
    def saved(scenario):
        return json.loads(resolve_new_run({"scenario": scenario, "model_dir": str(tmp_path), "workers": 2}).to_json())

    breakout, other = saved("ALE/Breakout-v5"), saved(game)
    differ = {key for key in set(breakout) | set(other) if breakout.get(key) != other.get(key)}
    assert differ <= {"scenario", "scenario_path", "actions", "frame_background_image"}, differ
    assert other["scenario"] == game and len(other["actions"]) > len(breakout["actions"])  # 6 or 8 against 4


def test_new_options_round_trip_through_the_saved_config():
    config = TrainConfig(advantage="nstep", n_step=3, n_step_variant="zero", separate_networks=True, lstm=False,
                         epsilon_start=0.4, epsilon_end=0.1, epsilon_decay_steps=10, epsilon_spread="geometric",
                         gradient_mode="normalize", normalize_norm=0.2, lr_schedule="linear", max_steps=5,
                         clip_rewards=False, hidden_size=32, target_reward=1.0).validate()
    assert TrainConfig.from_dict(json.loads(config.to_json())) == config


@pytest.mark.parametrize("field,value,flag", [("n_step", 0, "--n-step"), ("epsilon_start", 1.5, "--epsilon-start"),
                                              ("normalize_norm", 0.0, "--normalize-norm"),
                                              ("hidden_size", 0, "--hidden-size"),
                                              ("epsilon_spread", "geometric", "--epsilon-spread")])
def test_bad_option_values(field, value, flag):
    with pytest.raises(ConfigError, match=flag):
        TrainConfig(**{field: value}).validate()
