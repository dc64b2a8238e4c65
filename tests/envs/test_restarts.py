"""A game that dies or raises is restarted by its worker: the unfinished episode is dropped, one warning line
is printed and counted, and too many restarts in a minute stop the run with an error and a final checkpoint. Games
in the trainer's process that do not answer a step are named once; a worker that learns meanwhile is not.
(Killing a real engine mid-run: test_faults.py.)"""
import re
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo.model.actor_critic import LSTMState
from doom_a3c.algo.rollout import GameRunner
from doom_a3c.config import TrainConfig
from doom_a3c.envs.batch import EnvBatch
from doom_a3c.envs.interface import Step
from doom_a3c.run.coordinator import Coordinator, TooManyRestarts
from doom_a3c.runtime.state import GameRestart, RunState


class ScoringEnv:
    """+1 a step, episodes of `length` steps; raises on its `fail_at`-th step (or in reset: `fail_reset`)."""

    num_actions = 2
    action_names = ["a", "b"]
    observation_shape = (1,)
    seconds_per_step = 0.1

    def __init__(self, length=4, fail_at=None, fail_reset=False):
        self.length, self.fail_at, self.steps, self.fail_reset = length, fail_at, 0, fail_reset

    def reset(self):
        if self.fail_reset:
            raise RuntimeError("engine killed before its first episode")
        self.t = 0
        return np.zeros(1, np.float32)

    def step(self, action):
        self.steps += 1
        if self.steps == self.fail_at:
            raise RuntimeError("engine killed")
        self.t += 1
        over = self.t == self.length
        return Step(np.full(1, self.t, np.float32), 1.0, over, over)

    def screen(self):
        return np.zeros((4, 4, 3), np.uint8)

    def close(self):
        pass


class ZeroPolicy:
    def start_state(self):
        return LSTMState(np.zeros((2, 0), np.float32), np.zeros((2, 0), np.float32))

    def act(self, observations, starts):
        return np.zeros((len(observations), 2), np.float32), np.zeros(len(observations), np.float32)

    def value(self, observations, starts):
        return np.zeros(len(observations), np.float32)


def test_the_unfinished_episode_of_a_restarted_game_is_dropped_and_the_restart_queued():
    run = RunState()
    games = EnvBatch([ScoringEnv(), ScoringEnv(fail_at=3)], remake=lambda index, restarts: ScoringEnv())
    runner = GameRunner(0, TrainConfig(reward_scale=1.0), games, ZeroPolicy(), run, seed=0)
    rollout = runner.collect(8)
    assert run.game_restarts() == [GameRestart(0, 1, "RuntimeError: engine killed")]
    # Game 1: two steps, the crash (reward 0, an episode end), then a whole new 4-step episode by step 6.
    np.testing.assert_array_equal(rollout.rewards[:, 1], [1, 1, 0, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(rollout.dones[:, 1], [0, 0, 1, 0, 0, 0, 1, 0])
    episodes = run.finished_episodes()
    assert sorted((e.worker, e.reward, e.length) for e in episodes) == [(0, 4.0, 4)] * 3  # 2 of game 0, 1 of game 1
    assert run.counters.env_steps == 16  # every step counted, the crashed one too


def test_a_game_that_dies_before_its_first_episode_is_restarted_and_reported_once():
    run = RunState()
    made = []

    def remake(index, restarts):
        made.append((index, restarts))
        return ScoringEnv()

    games = EnvBatch([ScoringEnv(), ScoringEnv(fail_reset=True)], remake=remake)
    runner = GameRunner(3, TrainConfig(reward_scale=1.0), games, ZeroPolicy(), run, seed=0)
    assert made == [(1, 1)]
    assert run.game_restarts() == [GameRestart(3, 1, "RuntimeError: engine killed before its first episode")]
    runner.collect(8)
    assert run.game_restarts() == []  # reported once, and nothing was played in it to drop
    episodes = run.finished_episodes()
    assert sorted((e.reward, e.length) for e in episodes) == [(4.0, 4)] * 4  # both games' whole episodes


def test_a_slot_whose_games_never_start_stops_with_the_error_after_three_tries():
    made = []

    def remake(index, restarts):
        made.append(restarts)
        return ScoringEnv(fail_reset=True)

    games = EnvBatch([ScoringEnv(fail_reset=True)], remake=remake)
    with pytest.raises(RuntimeError, match="before its first episode"):
        games.reset()
    assert made == [1, 2, 3]


@pytest.mark.slow
def test_game_processes_report_start_failures_with_the_batch_index():
    from doom_a3c.envs.process_batch import ProcessEnvBatch

    factories = [ScoringEnv, ScoringEnv, ScoringEnv, lambda: ScoringEnv(fail_reset=True)]
    games = ProcessEnvBatch(factories, processes=2, remake=lambda index, restarts: ScoringEnv())
    try:
        assert games.reset().shape == (4, 1)
        assert games.take_start_failures() == [(3, "RuntimeError: engine killed before its first episode")]
        assert games.take_start_failures() == []
    finally:
        games.close()


def coordinator(tmp_path, limit):
    # evaluate=False: the fake backend has no games or weights for an evaluator, nor do the others here
    config = TrainConfig(scenario="CartPole-v1", evaluate=False, max_game_restarts=limit, model_dir=str(tmp_path))
    backend = type("Backend", (), {"run": RunState()})()
    return Coordinator(config, backend)


def test_restarts_warn_once_each_and_more_than_the_limit_in_a_minute_stop_the_run(tmp_path, capsys):
    coord = coordinator(tmp_path, limit=2)
    for game in range(2):
        coord.run.restarts.put(GameRestart(1, game, "ViZDoomErrorException: Unexpected ViZDoom instance crash."))
    coord._log_restarts(now=1000.0)
    assert not coord.run.errors and coord.game_restarts == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("warning: game ") and "worker 1" in line for line in lines)
    coord.run.restarts.put(GameRestart(0, 3, "RuntimeError: boom"))
    coord._log_restarts(now=1059.0)
    assert len(coord.run.errors) == 1 and isinstance(coord.run.errors[0], TooManyRestarts)
    assert "3 game failures within 60 s, more than --max-game-restarts 2" in str(coord.run.errors[0])
    assert coord.run.stop.is_set()
    coord.log.close()


def test_restarts_spread_over_more_than_a_minute_do_not_stop_the_run(tmp_path):
    coord = coordinator(tmp_path, limit=1)
    for minute in range(5):
        coord.run.restarts.put(GameRestart(0, 0, "RuntimeError: boom"))
        coord._log_restarts(now=1000.0 + 61 * minute)
    assert not coord.run.errors and coord.game_restarts == 5
    coord.log.close()


def failing_cartpole(monkeypatch, every):
    """CartPole whose games raise on every `every`-th step of the whole process."""
    from doom_a3c.envs.gym.games import VectorEnvironment

    calls = {"n": 0}
    step = VectorEnvironment.step

    def flaky(self, action):
        calls["n"] += 1
        if calls["n"] % every == 0:
            raise RuntimeError("emulator crashed")
        return step(self, action)

    monkeypatch.setattr(VectorEnvironment, "step", flaky)


def train_cartpole(tmp_path, monkeypatch, **overrides):
    from doom_a3c.run.training import train

    config = TrainConfig(scenario="CartPole-v1", evaluate=False, workers=2, envs_per_worker=2, env_threads=1, rollout=10,
                         lstm_size=8, hidden_size=8, gif_every=0, log_every_seconds=0.5,
                         model_dir=str(tmp_path / "m"), frames_dir=str(tmp_path / "f"), **overrides)
    return train(config).exit_code


@pytest.mark.slow
def test_a_run_goes_on_through_game_failures(tmp_path, monkeypatch, capsys):
    failing_cartpole(monkeypatch, every=500)
    assert train_cartpole(tmp_path, monkeypatch, max_steps=3000, max_game_restarts=100) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning: game ")]
    assert len(warnings) >= 4 and "RuntimeError: emulator crashed" in warnings[0]
    assert "error" not in err
    counted = [float(tf.make_ndarray(value.tensor)) for path in (tmp_path / "m" / "tensorboard").glob("events.out.tfevents.*")
               for event in tf.compat.v1.train.summary_iterator(str(path)) for value in event.summary.value
               if value.tag == "Perf/Game Restarts"]
    assert counted and max(counted) == len(warnings)


@pytest.mark.slow
@pytest.mark.parametrize("limit,expected", [(1, "more than --max-game-restarts 1"), (0, "emulator crashed")])
def test_too_many_failures_stop_the_run_with_one_error_and_a_final_checkpoint(tmp_path, monkeypatch, capsys, limit,
                                                                              expected):
    """--max-game-restarts 0 restarts nothing: the first failure stops the run, as before restarts existed."""
    failing_cartpole(monkeypatch, every=50)
    assert train_cartpole(tmp_path, monkeypatch, max_steps=100_000, max_game_restarts=limit) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and expected in errors[0], errors
    assert (tmp_path / "m" / "last.ckpt.index").is_file()


def test_a_worker_whose_games_in_this_process_stop_answering_is_named_once(tmp_path, capsys):
    """Games in this process (--env-processes 0) cannot be replaced: the run says which worker waits on them."""
    config = TrainConfig(scenario="CartPole-v1", evaluate=False, env_processes=0, game_timeout=1.0, model_dir=str(tmp_path))
    coord = Coordinator(config, type("Backend", (), {"run": RunState()})())
    coord.run.steps_sent.update({0: time.monotonic(), 1: time.monotonic() - 10})
    coord._check_heartbeats()
    coord._check_heartbeats()
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: the games of worker 1 have not answered for 10 s")
    assert "--env-processes 2" in lines[0]
    del coord.run.steps_sent[1]  # it answers: a later silence is named again
    coord._check_heartbeats()
    coord.run.steps_sent[1] = time.monotonic() - 10
    coord._check_heartbeats()
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


class HeldEnv(ScoringEnv):
    """ScoringEnv whose steps, once `hold` is set, wait until `answer` is (a stalled engine); `held` tells."""

    def __init__(self):
        super().__init__()
        self.hold, self.held, self.answer = threading.Event(), threading.Event(), threading.Event()

    def step(self, action):
        if self.hold.is_set():
            self.held.set()
            self.answer.wait(30)
        return super().step(action)


def test_a_long_learning_pause_is_no_silence_but_a_step_the_games_do_not_answer_is(tmp_path, capsys):
    """The silence clock runs only from a step's sending to its answer: a worker's first gradient (its tracing
    takes 18-31 s on a busy 2-core machine) keeps it from its games for longer than --game-timeout + 5 s, which says
    nothing of its games."""
    config = TrainConfig(scenario="CartPole-v1", evaluate=False, env_processes=0, game_timeout=1.0,
                         model_dir=str(tmp_path))
    run = RunState()
    coord = Coordinator(config, type("Backend", (), {"run": run})())
    game = HeldEnv()
    runner = GameRunner(0, TrainConfig(reward_scale=1.0), EnvBatch([game, ScoringEnv()]), ZeroPolicy(), run, seed=0)
    learning, learned = threading.Event(), threading.Event()

    def slow_learner(rollout):  # learns for as long as the test wants: 100 s, as the checks below see the clock
        learning.set()
        learned.wait(30)

    def worker():
        for _ in range(2):
            slow_learner(runner.collect(4))

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    try:
        assert learning.wait(10)
        coord._check_heartbeats(now=time.monotonic() + 100)  # 100 s into the learning: no step is waiting
        assert capsys.readouterr().err == ""
        game.hold.set()  # the next rollout's first step is sent and not answered
        learned.set()
        assert game.held.wait(10)
        coord._check_heartbeats(now=time.monotonic() + 100)
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and re.match(r"warning: the games of worker 0 have not answered for 10\d s", lines[0])
    finally:
        game.answer.set()
        learned.set()
        thread.join(10)
    assert not thread.is_alive() and run.steps_sent == {}


def test_games_in_child_processes_are_left_to_the_watchdog(tmp_path, capsys):
    config = TrainConfig(scenario="CartPole-v1", evaluate=False, env_processes=2, game_timeout=1.0, model_dir=str(tmp_path))
    coord = Coordinator(config, type("Backend", (), {"run": RunState()})())
    coord.run.steps_sent[0] = time.monotonic() - 10
    coord._check_heartbeats()
    assert capsys.readouterr().err == ""


def test_the_games_of_one_replaced_game_process_are_one_restart():
    from doom_a3c.runtime.state import group_restarts

    lost = "GameProcessLost: game process 7 (games 2-3) did not answer within 30 s (a stalled engine?)"
    died = "RuntimeError: engine died"
    restarts = group_restarts(1, [(3, lost), (0, died), (1, died), (2, lost), (5, lost)])
    # Two games that crashed at the same step are two faults, even with the same message.
    assert restarts == [GameRestart(1, 0, died), GameRestart(1, 1, died), GameRestart(1, 2, lost, count=2),
                        GameRestart(1, 5, lost)]
    assert [r.games() for r in restarts] == ["game 0", "game 1", "games 2-3", "game 5"]
