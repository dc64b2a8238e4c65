"""Run train.py as a child process so that stopping a benchmark also stops its trainer cleanly.

`subprocess.run` gets this wrong both ways. If the benchmark gets SIGTERM, the trainer keeps training after the
benchmark has gone. If Ctrl-C reaches the benchmark, the trainer is SIGKILLed after 0.25 s: its last rollouts
are not saved, and its game engines can outlive it. Here SIGINT and SIGTERM are passed on to train.py. The
trainer saves and reaps its engines, this module waits for it, and only then does the benchmark stop.
"""
from __future__ import annotations

import signal
import subprocess
import sys

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class TrainerStopped(SystemExit):
    """The benchmark was asked to stop. train.py got the same signal, and it has saved and exited by the time
    this is raised. The exit status is the shell's 128 + signal number."""

    def __init__(self, signum: int):
        super().__init__(128 + signum)
        self.signum = signum


def run_trainer(command: list[str]) -> int:
    """Run `command` (a train.py command line), with its stdout discarded, and return its exit status.
    Raises TrainerStopped, after the child has exited, if this process got SIGINT or SIGTERM meanwhile."""
    received: list[int] = []
    child: list[subprocess.Popen] = []

    def forward(signum, _frame):
        received.append(signum)
        if child and child[0].poll() is None:
            child[0].send_signal(signum)

    previous = {signum: signal.signal(signum, forward) for signum in STOP_SIGNALS}
    try:
        # Handlers go in before the child starts, so a stop at any moment reaches it or prevents it.
        if not received:
            child.append(subprocess.Popen(command, stdout=subprocess.DEVNULL))
            if received:  # arrived while the child was starting, before it could be forwarded
                child[0].send_signal(received[0])
            child[0].wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if received:
        name = signal.Signals(received[0]).name
        shown = f"train.py exited with {child[0].returncode}" if child else "train.py was not started"
        print(f"stopped by {name}: {shown}", file=sys.stderr, flush=True)
        raise TrainerStopped(received[0])
    return child[0].returncode


def run_trainer_checked(command: list[str]) -> None:
    """run_trainer, raising CalledProcessError if train.py failed (as `subprocess.run(check=True)` does)."""
    returncode = run_trainer(command)
    if returncode != 0:
        raise subprocess.CalledProcessError(returncode, command)
