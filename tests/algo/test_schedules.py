"""--lr-schedule linear (doom_a3c/algo/schedules.py): the annealed rate against hand numbers over a step budget, a time
budget and both, never below 0, and a --resume going on over the run's whole training time (restored from the
checkpoint's wall_seconds, --max-minutes counting each leg)."""
import numpy as np
import pytest

from doom_a3c.algo.learner import GlobalLearner
from doom_a3c.algo.model.actor_critic import build_actor_critic
from doom_a3c.algo.schedules import RunClock, budget_fraction, learning_rate_at
from doom_a3c.config import TrainConfig
from doom_a3c.envs.interface import EnvSpec
from doom_a3c.errors import ConfigError
from doom_a3c.modes.build import build_global
from doom_a3c.modes.ray.parameter_server import ParameterServer

SPEC = EnvSpec(2, (4,), 0.02, ["LEFT", "RIGHT"])


def linear(**budget):
    return TrainConfig(lr_schedule="linear", learning_rate=1e-3, **budget)


class FakeTime:
    """A clock the test moves by hand."""

    def __init__(self, now=100.0):
        self.now = now

    def __call__(self):
        return self.now


def test_annealed_learning_rate():
    steps_budget = TrainConfig(learning_rate=1e-3, lr_schedule="linear", max_steps=1000)
    assert learning_rate_at(steps_budget, 250) == pytest.approx(7.5e-4)
    assert learning_rate_at(steps_budget, 5000) == 0.0
    no_budget = TrainConfig(learning_rate=1e-3, lr_schedule="linear")
    assert learning_rate_at(no_budget, 5000) == 1e-3  # no budget: no annealing


def test_a_step_budget():
    config = linear(max_steps=1000)
    assert learning_rate_at(config, 0) == 1e-3
    assert learning_rate_at(config, 250, elapsed_seconds=10_000) == pytest.approx(1e-3 * 0.75)  # time: no budget
    assert learning_rate_at(config, 1000) == 0.0


def test_a_time_budget():
    config = linear(max_minutes=10)  # 600 s
    assert learning_rate_at(config, 10**9, elapsed_seconds=0.0) == 1e-3  # steps: no budget
    assert learning_rate_at(config, 0, elapsed_seconds=150.0) == pytest.approx(1e-3 * (1 - 150 / 600))
    assert learning_rate_at(config, 0, elapsed_seconds=450.0) == pytest.approx(2.5e-4)
    assert learning_rate_at(config, 0, elapsed_seconds=600.0) == 0.0


def test_both_budgets_the_larger_fraction_wins():
    config = linear(max_steps=1000, max_minutes=10)
    assert learning_rate_at(config, 100, elapsed_seconds=300.0) == pytest.approx(1e-3 * (1 - 0.5))  # time leads
    assert learning_rate_at(config, 800, elapsed_seconds=60.0) == pytest.approx(1e-3 * (1 - 0.8))  # steps lead
    assert budget_fraction(config, 100, 300.0) == pytest.approx(0.5)


def test_never_below_zero():
    config = linear(max_steps=1000, max_minutes=10)
    assert learning_rate_at(config, 5000, elapsed_seconds=60.0) == 0.0
    assert learning_rate_at(config, 10, elapsed_seconds=7200.0) == 0.0
    assert learning_rate_at(config, -5, elapsed_seconds=-1.0) == 1e-3  # nonsense in, the base rate out


def test_constant_schedule_ignores_the_budget():
    config = TrainConfig(learning_rate=1e-3, max_steps=1000, max_minutes=10)
    assert learning_rate_at(config, 900, elapsed_seconds=590.0) == 1e-3


def test_a_resumed_leg_goes_on_over_the_whole_run():
    """Leg 1 trained 600 s of --max-minutes 10; the resumed leg trains 10 more minutes (--max-minutes counts each
    leg), so the run's time budget is 1200 s and the rate goes on from the half of it already spent."""
    config = linear(max_minutes=10)
    assert learning_rate_at(config, 0, elapsed_seconds=600.0, earlier_seconds=600.0) == pytest.approx(5e-4)
    assert learning_rate_at(config, 0, elapsed_seconds=900.0, earlier_seconds=600.0) == pytest.approx(2.5e-4)
    assert learning_rate_at(config, 0, elapsed_seconds=1200.0, earlier_seconds=600.0) == 0.0  # as the leg stops
    # A run stopped at 200 s (Ctrl-C) resumes at 200 / 800 of its budget, and reaches 0 when the new leg ends.
    assert learning_rate_at(config, 0, elapsed_seconds=200.0, earlier_seconds=200.0) == pytest.approx(7.5e-4)
    assert learning_rate_at(config, 0, elapsed_seconds=800.0, earlier_seconds=200.0) == 0.0


def test_run_clock_counts_earlier_legs_and_this_one_from_its_start():
    now = FakeTime(100.0)
    clock = RunClock(earlier_seconds=600.0, now=now)
    now.now = 130.0  # building the games and the networks: not training
    clock.start()
    assert clock.elapsed() == 600.0
    now.now = 430.0
    assert clock.elapsed() == 900.0


def test_the_global_learner_anneals_with_its_clock():
    config = TrainConfig(scenario="CartPole-v1", lstm_size=8, hidden_size=8, lr_schedule="linear",
                         learning_rate=1e-3, max_steps=1000, max_minutes=10)
    now = FakeTime()
    learner = GlobalLearner(config, build_actor_critic(config, 2, (4,), name="global"),
                            clock=RunClock(earlier_seconds=0.0, now=now))
    grads = [np.zeros(v.shape, np.float32) for v in learner.net.trainable_variables]
    now.now += 150.0  # a quarter of the time budget
    learner.counters.env_steps = 100  # a tenth of the step budget
    learner.apply(grads)
    assert learner.learning_rate == pytest.approx(7.5e-4)
    assert float(learner.optimizer.learning_rate.numpy()) == pytest.approx(7.5e-4)
    learner.counters.env_steps = 900
    learner.apply(grads)
    assert float(learner.optimizer.learning_rate.numpy()) == pytest.approx(1e-4)


def test_resume_restores_the_elapsed_time_and_the_schedule_goes_on(tmp_path):
    config = TrainConfig(scenario="fake", env_kind="vector", scenario_path="fake-v0", actions=[["LEFT"], ["RIGHT"]],
                         frame_skip=1, reward_scale=1.0, clip_rewards=False, lstm_size=8, hidden_size=8,
                         learning_rate=1e-3, lr_schedule="linear", max_minutes=5, model_dir=str(tmp_path))
    prefix = build_global(config, SPEC).save(episodes=0, wall_seconds=300.0)  # leg 1 trained its 5 minutes
    resumed = build_global(config, SPEC, resume_prefix=prefix).learner
    assert resumed.clock.earlier_seconds == 300.0
    # 300 s of a 600 s run, before any update; the real clock runs on meanwhile (0.55 s once on a loaded machine):
    # 1% is 6 s of it, where a schedule started over would read 1e-3
    assert resumed.learning_rate == pytest.approx(5e-4, rel=1e-2)
    now = FakeTime()
    resumed.clock = RunClock(resumed.clock.earlier_seconds, now=now)
    now.now += 150.0
    resumed.apply([np.zeros(v.shape, np.float32) for v in resumed.net.trainable_variables])
    assert resumed.learning_rate == pytest.approx(1e-3 * (1 - 450 / 600))


def test_the_parameter_server_starts_its_clock_with_the_run(tmp_path):
    config = TrainConfig(scenario="fake", env_kind="vector", scenario_path="fake-v0", actions=[["LEFT"], ["RIGHT"]],
                         frame_skip=1, reward_scale=1.0, clip_rewards=False, lstm_size=8, hidden_size=8,
                         learning_rate=1e-3, lr_schedule="linear", max_minutes=10, model_dir=str(tmp_path))
    server = ParameterServer(config.to_json(), configure_threads=False)
    assert server.build(SPEC) is None
    now = FakeTime()
    server.parts.learner.clock = RunClock(now=now)
    now.now += 30.0
    server.start_clock()
    now.now += 60.0
    reply = server.apply(0, [np.zeros(w.shape, np.float32) for w in server.weights()], 10)
    assert reply.learning_rate == pytest.approx(1e-3 * (1 - 60 / 600))


def test_linear_needs_a_budget():
    with pytest.raises(ConfigError, match="--max-steps or --max-minutes"):
        TrainConfig(lr_schedule="linear").validate()
    TrainConfig(lr_schedule="linear", max_minutes=1).validate()
    TrainConfig(lr_schedule="linear", max_steps=10).validate()
