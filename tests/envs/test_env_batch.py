"""EnvBatch: stepping a worker's games together, from one thread or several, with automatic resets;
ProcessEnvBatch: the same games built and stepped in child processes."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from doom_a3c.envs.batch import EnvBatch
from doom_a3c.envs.interface import EnvSpec
from doom_a3c.envs.process_batch import ProcessEnvBatch

from support import REPO_ROOT, CountingEnv, counting_factories, running

SPEC = EnvSpec(3, (2,), 0.25, ["a", "b", "c"])


def run(threads, steps=7):
    batch = EnvBatch([CountingEnv(i, length=2 + i) for i in range(5)], threads=threads)
    first = batch.reset()
    results = [batch.step(np.arange(5) % 3) for _ in range(steps)]
    batch.close()
    return first, results, batch


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_threads_give_the_same_results_as_a_plain_loop(threads):
    first, expected, _ = run(1)
    first_t, got, _ = run(threads)
    np.testing.assert_array_equal(first, first_t)
    for a, b in zip(expected, got):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_an_ended_game_is_reset_and_its_first_observation_returned():
    _, results, batch = run(2, steps=3)
    # env i ends every 2 + i steps: the second step ends env 0, the third ends env 1.
    assert results[1].dones.tolist() == [True, False, False, False, False]
    np.testing.assert_array_equal(results[1].observations[0], [0, 0])  # a fresh episode of env 0
    np.testing.assert_array_equal(results[1].observations[1], [1, 2])  # env 1 goes on
    assert results[2].dones.tolist() == [False, True, False, False, False]
    assert batch.envs[0].resets == 2 and batch.envs[4].resets == 1
    np.testing.assert_array_equal(results[0].rewards, [0, 1, 2, 0, 1])


class LivesEnv(CountingEnv):
    """Every step loses a life (done, the learning terminal) and the game ends at `length` (game_over)."""

    def step(self, action):
        result = super().step(action)
        return result._replace(done=True)


def test_a_lost_life_is_done_but_only_the_game_over_resets():
    batch = EnvBatch([LivesEnv(0, length=3)])
    batch.reset()
    steps = [batch.step(np.zeros(1, int)) for _ in range(3)]
    assert [(bool(s.dones[0]), bool(s.game_overs[0])) for s in steps] == [(True, False), (True, False), (True, True)]
    assert [int(s.observations[0, 1]) for s in steps] == [1, 2, 0]  # played on after each life; reset at the end
    assert batch.envs[0].resets == 2
    batch.close()


def test_a_batch_declares_its_games_spec():
    batch = EnvBatch([CountingEnv(i, length=3) for i in range(2)])
    assert batch.spec == SPEC and isinstance(batch.spec.observation_shape, tuple)
    batch.close()


def test_returned_arrays_are_copies_not_views_of_the_next_step():
    batch = EnvBatch([CountingEnv(i, length=10) for i in range(2)], threads=2)
    batch.reset()
    one = batch.step(np.zeros(2, int))
    batch.step(np.zeros(2, int))
    np.testing.assert_array_equal(one.observations[:, 1], [1, 1])
    batch.close()


def test_a_game_error_reaches_the_caller_from_a_pool_thread():
    batch = EnvBatch([CountingEnv(0, 5), CountingEnv(1, 5, fail_at=2)], threads=2)
    batch.reset()
    batch.step(np.zeros(2, int))
    with pytest.raises(RuntimeError, match="engine 1 died"):
        batch.step(np.zeros(2, int))
    batch.close()


class Remade:
    """A `remake` that records its calls and builds healthy CountingEnvs numbered 10 + index."""

    def __init__(self):
        self.calls = []

    def __call__(self, index, restarts):
        self.calls.append((index, restarts))
        return CountingEnv(10 + index, length=5)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_failing_game_is_closed_and_restarted_in_its_slot(threads):
    remake = Remade()
    batch = EnvBatch([CountingEnv(0, 5), CountingEnv(1, 5, fail_at=2)], threads=threads, remake=remake)
    batch.reset()
    first = batch.step(np.ones(2, int))
    assert first.crashes.tolist() == ["", ""]
    crashed = batch.step(np.ones(2, int))
    assert remake.calls == [(1, 1)]
    assert crashed.crashes.tolist() == ["", "RuntimeError: engine 1 died"]
    # The crash ends the old game's episode as a terminal with reward 0; the new game's first observation follows.
    assert crashed.dones.tolist() == [False, True] and crashed.game_overs.tolist() == [False, False]
    assert crashed.rewards.tolist() == [1.0, 0.0]
    np.testing.assert_array_equal(crashed.observations, [[0, 2], [11, 0]])
    after = batch.step(np.ones(2, int))  # the new game steps on
    assert after.crashes.tolist() == ["", ""]
    np.testing.assert_array_equal(after.observations, [[0, 3], [11, 1]])
    batch.close()


def test_a_game_that_cannot_be_restarted_is_the_callers_error():
    def broken(index, restarts):
        raise RuntimeError("no engine binary")

    batch = EnvBatch([CountingEnv(0, 5, fail_at=1)], remake=broken)
    batch.reset()
    with pytest.raises(RuntimeError, match="no engine binary"):
        batch.step(np.zeros(1, int))


# ---- ProcessEnvBatch -------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 2, 5, 9])
def test_child_processes_give_the_same_results_as_a_plain_loop(processes):
    first, expected, _ = run(1)
    batch = ProcessEnvBatch(counting_factories(), processes)
    try:
        assert len(batch) == 5 and batch.spec == SPEC
        np.testing.assert_array_equal(batch.reset(), first)
        for want in expected:
            got = batch.step(np.arange(5) % 3)
            for x, y in zip(want, got):
                np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(batch.screen(3), np.full((2, 2, 3), 3, np.uint8))  # the 3rd game's screen
    finally:
        batch.close()


@pytest.mark.slow
def test_the_games_live_in_the_children_and_close_stops_them():
    batch = ProcessEnvBatch(counting_factories(4), processes=2)
    children = [p for p in batch._processes]
    assert len(children) == 2 and all(p.is_alive() and p.pid != os.getpid() for p in children)
    batch.close()
    assert not any(p.is_alive() for p in children)


@pytest.mark.slow
def test_a_game_error_in_a_child_reaches_the_caller():
    batch = ProcessEnvBatch(counting_factories(2, fail_at=2), processes=2)
    try:
        batch.reset()
        batch.step(np.zeros(2, int))
        with pytest.raises(RuntimeError, match="engine 1 died"):
            batch.step(np.zeros(2, int))
    finally:
        batch.close()


def remake_in_child(index, restarts):
    return CountingEnv(10 + index, length=5)


@pytest.mark.slow
def test_a_failing_game_in_a_child_is_restarted_with_its_batch_index():
    batch = ProcessEnvBatch(counting_factories(3, fail_at=2), processes=2, remake=remake_in_child)
    try:
        batch.reset()
        batch.step(np.zeros(3, int))
        crashed = batch.step(np.zeros(3, int))
        assert crashed.crashes.tolist() == ["", "", "RuntimeError: engine 2 died"]
        np.testing.assert_array_equal(crashed.observations[2], [12, 0])  # game 2 of the batch, 1 of its child
    finally:
        batch.close()


@pytest.mark.slow
def test_a_child_that_dies_is_an_error_not_a_hang():
    batch = ProcessEnvBatch(counting_factories(2), processes=2)
    try:
        batch.reset()
        os.kill(batch._processes[1].pid, signal.SIGKILL)
        with pytest.raises(RuntimeError, match="died"):
            batch.step(np.zeros(2, int))
    finally:
        batch.close()


@pytest.mark.slow
def test_a_game_that_cannot_be_built_fails_the_constructor():
    def broken():
        raise ValueError("no such ROM")

    with pytest.raises(RuntimeError, match="no such ROM"):
        ProcessEnvBatch([broken], processes=1)


@pytest.mark.slow
def test_ctrl_c_is_left_to_the_trainer():
    """SIGINT reaches the whole process group on Ctrl-C: the children ignore it and keep their games, so the
    trainer can finish its rollout and save."""
    batch = ProcessEnvBatch(counting_factories(2), processes=1)
    try:
        batch.reset()
        os.kill(batch._processes[0].pid, signal.SIGINT)
        assert batch.step(np.zeros(2, int)).observations.tolist() == [[0, 1], [1, 1]]
    finally:
        batch.close()


KILLED_TRAINER = """
import os, signal, sys
sys.path.insert(0, {root!r})
sys.path.insert(0, {tests!r})
from doom_a3c.envs.process_batch import ProcessEnvBatch
from support import counting_factories
batches = [ProcessEnvBatch(counting_factories(2), processes=2) for _ in range(2)]
print(" ".join(str(p.pid) for b in batches for p in b._processes), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.slow
def test_game_processes_end_when_the_trainer_is_killed():
    """kill -9 of the trainer: every game process notices within seconds, even those whose pipe a later-forked
    sibling still holds open."""
    script = KILLED_TRAINER.format(root=REPO_ROOT, tests=os.path.join(REPO_ROOT, "tests"))  # where support.py is
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 4

    deadline = time.time() + 15
    while any(running(p) for p in pids) and time.time() < deadline:
        time.sleep(0.2)
    assert not any(running(p) for p in pids)


# ---- the watchdog: a game process that stops answering is killed and replaced ----------------------------

class StallingEnv(CountingEnv):
    """A CountingEnv whose step blocks for good at its `stall_at`-th step, as a step does on an engine that died
    holding ViZDoom's message-queue lock."""

    def __init__(self, ident, length, stall_at=None):
        super().__init__(ident, length)
        self.stall_at = stall_at

    def step(self, action):
        if self.stall_at is not None and self.total_steps + 1 >= self.stall_at:
            time.sleep(3600)
        return super().step(action)


def stalling_factories(count=4, stall_game=None, stall_at=3):
    return [lambda i=i: StallingEnv(i, length=100, stall_at=stall_at if i == stall_game else None)
            for i in range(count)]


def fresh_game(index, restarts):
    return StallingEnv(50 + index, length=100)


@pytest.mark.slow
def test_a_game_process_that_stops_answering_is_replaced_and_its_games_reported_as_crashed():
    batch = ProcessEnvBatch(stalling_factories(4, stall_game=3), processes=2, remake=fresh_game, timeout=2.0)
    try:
        batch.reset()
        stalled = batch._processes[1].pid
        for _ in range(2):
            assert batch.step(np.zeros(4, int)).crashes.tolist() == [""] * 4
        started = time.monotonic()
        result = batch.step(np.zeros(4, int))  # game 3 blocks at its 3rd step: its child is lost
        assert 2.0 <= time.monotonic() - started < 10.0
        assert result.crashes[:2].tolist() == ["", ""]
        assert all("did not answer within 2 s" in why for why in result.crashes[2:])
        assert result.dones[2:].all() and not result.game_overs[2:].any() and (result.rewards[2:] == 0).all()
        # The slice's games are fresh ones (remade with the batch's indices), at their first observation.
        np.testing.assert_array_equal(result.observations[2:], [[52, 0], [53, 0]])
        np.testing.assert_array_equal(result.observations[:2], [[0, 3], [1, 3]])
        assert not running(stalled) and batch._processes[1].pid != stalled
        following = batch.step(np.zeros(4, int))
        assert following.crashes.tolist() == [""] * 4
        np.testing.assert_array_equal(following.observations, [[0, 4], [1, 4], [52, 1], [53, 1]])
    finally:
        batch.close()


@pytest.mark.slow
def test_a_stopped_game_process_is_replaced_too():
    """SIGSTOP: a process that is alive but never answers (a stopped or swapped-out engine looks the same)."""
    batch = ProcessEnvBatch(stalling_factories(2), processes=2, remake=fresh_game, timeout=1.5)
    try:
        batch.reset()
        stopped = batch._processes[0].pid
        os.kill(stopped, signal.SIGSTOP)
        result = batch.step(np.zeros(2, int))
        assert "did not answer" in result.crashes[0] and result.crashes[1] == ""
        np.testing.assert_array_equal(result.observations[0], [50, 0])
        assert not running(stopped)
    finally:
        batch.close()


@pytest.mark.slow
def test_a_game_process_that_dies_is_replaced_when_games_may_restart():
    batch = ProcessEnvBatch(stalling_factories(2), processes=2, remake=fresh_game, timeout=5.0)
    try:
        batch.reset()
        os.kill(batch._processes[1].pid, signal.SIGKILL)
        result = batch.step(np.zeros(2, int))
        assert result.crashes[0] == "" and "died" in result.crashes[1]
        np.testing.assert_array_equal(result.observations[1], [51, 0])
    finally:
        batch.close()


@pytest.mark.slow
def test_without_restarts_a_stalled_game_process_is_an_error_within_the_bound():
    from doom_a3c.errors import GameProcessLost

    batch = ProcessEnvBatch(stalling_factories(2, stall_game=0, stall_at=1), processes=1, timeout=1.0)
    try:
        batch.reset()
        with pytest.raises(GameProcessLost, match="did not answer within 1 s"):
            batch.step(np.zeros(2, int))
    finally:
        batch.close()


@pytest.mark.slow
def test_a_stopping_run_does_not_wait_for_a_stalled_game():
    import threading

    from doom_a3c.errors import Stopped

    stop = threading.Event()
    batch = ProcessEnvBatch(stalling_factories(2, stall_game=1, stall_at=1), processes=2, remake=fresh_game,
                            timeout=60.0, stop=stop)
    try:
        batch.reset()
        threading.Timer(1.0, stop.set).start()
        started = time.monotonic()
        with pytest.raises(Stopped):
            batch.step(np.zeros(2, int))
        assert time.monotonic() - started < 5.0
    finally:
        started = time.monotonic()
        children = [p.pid for p in batch._processes]
        batch.close()  # the stalled child never reads "close": it is killed
        assert time.monotonic() - started < 10.0 and not any(running(pid) for pid in children)


@pytest.mark.slow
def test_a_call_other_than_step_that_times_out_replaces_the_child_and_the_next_step_reports_it():
    batch = ProcessEnvBatch(stalling_factories(2), processes=2, remake=fresh_game, timeout=1.5)
    try:
        batch.reset()
        os.kill(batch._processes[0].pid, signal.SIGSTOP)
        np.testing.assert_array_equal(batch.screen(0), np.full((2, 2, 3), 50, np.uint8))  # the fresh game's
        result = batch.step(np.zeros(2, int))
        assert "did not answer" in result.crashes[0] and result.crashes[1] == ""
        np.testing.assert_array_equal(result.observations, [[50, 0], [1, 1]])
    finally:
        batch.close()
