"""A run stops on Ctrl-C and SIGTERM with its work saved (doom_a3c/run/coordinator.py), and gives the handlers back
at its end: after `train()` from Python, a notebook's or a script's own Ctrl-C behaves as before."""
import signal

import numpy as np
import pytest

from doom_a3c.config import TrainConfig
from doom_a3c.envs.interface import EnvSpec
from doom_a3c.run.coordinator import Coordinator
from doom_a3c.runtime.state import RunState


class OneWaitBackend:
    """A backend whose run ends at its first wait (or at a signal it sends itself there); it records the SIGINT
    handler in force while the run runs."""

    description = "a fake backend"

    def __init__(self, send: int | None = None, save_fails: bool = False):
        self.run, self.send, self.handlers_seen, self.saved = RunState(), send, [], 0
        self.save_fails = save_fails
        self.spec = EnvSpec(num_actions=2, observation_shape=(1,), seconds_per_step=0.1, action_names=["a", "b"])

    def start(self):
        pass

    def wait(self, timeout):
        self.handlers_seen.append(signal.getsignal(signal.SIGINT))
        if self.send is not None:
            signal.raise_signal(self.send)  # handled in this (the main) thread before raise_signal returns
            return self.run.stop.is_set()
        return True

    def stop(self):
        pass

    def save(self, episodes, wall_seconds):
        if self.save_fails:
            raise OSError("No space left on device")
        self.saved += 1
        return ""

    def learning_rate(self):
        return 0.0

    def global_weights(self):
        return [np.zeros(1)]

    def close(self):
        pass


def run_once(tmp_path, backend):
    config = TrainConfig(scenario="CartPole-v1", evaluate=False, model_dir=str(tmp_path), frames_dir=str(tmp_path))
    coordinator = Coordinator(config, backend)
    return coordinator, coordinator.run_until_done()


def test_a_run_stops_on_ctrl_c_and_gives_the_callers_handlers_back(tmp_path):
    def callers_own(signum, frame):
        raise AssertionError("the run's handler should have taken this Ctrl-C")

    before = signal.signal(signal.SIGINT, callers_own)
    term_before = signal.getsignal(signal.SIGTERM)
    try:
        backend = OneWaitBackend(send=signal.SIGINT)
        coordinator, exit_code = run_once(tmp_path, backend)
        assert exit_code == 0 and coordinator.stop_reason == "stopped by SIGINT" and backend.saved == 1
        assert backend.handlers_seen[0] is not callers_own  # the run's own while it ran
        assert signal.getsignal(signal.SIGINT) is callers_own and signal.getsignal(signal.SIGTERM) is term_before
    finally:
        signal.signal(signal.SIGINT, before)


def test_after_a_run_ctrl_c_raises_keyboard_interrupt_again(tmp_path):
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, as in a notebook
    try:
        run_once(tmp_path, OneWaitBackend())
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_run_whose_final_save_fails_still_gives_the_handlers_back(tmp_path):
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(OSError, match="No space left on device"):
            run_once(tmp_path, OneWaitBackend(save_fails=True))
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)
