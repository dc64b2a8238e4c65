"""A worker's games in child processes (--env-processes): stepped outside the trainer's GIL, and watched,
so that a game that stops answering within --game-timeout is killed with its engines and replaced.
"""
from __future__ import annotations

import atexit
import functools
import gc
import multiprocessing
import os
import signal
import threading
import time
from typing import Callable, Sequence

import numpy as np

from doom_a3c.envs.batch import (
    START_ATTEMPTS,
    BatchStep,
    EnvBatch,
    Remake,
    concatenate_steps,
    contiguous_slices,
    crash_step,
)
from doom_a3c.envs.engine import kill_process_tree
from doom_a3c.envs.interface import Environment, EnvSpec
from doom_a3c.errors import ConfigError, GameProcessLost, Stopped, one_line


def _watch_the_trainer(trainer: int) -> None:
    """Child process thread: end the process as soon as the trainer is gone, even while the main thread is stuck
    in a game call that never returns (its engines then end too: engine_leash.sh). A killed trainer may leave our
    pipe open in its other game processes, so its pid is what tells."""
    while os.getppid() == trainer:
        time.sleep(1.0)
    os._exit(1)


def _serve_games(connection, factories: Sequence[Callable[[], Environment]], remake: Remake | None,
                 threads: int) -> None:
    """Child process body: build this slice's games, then step them on request until told to close."""
    # The trainer handles Ctrl-C and SIGTERM (it saves, then closes us); a signal here would lose the game.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    gc.freeze()  # the forked trainer's objects: the collector must not touch (and so copy) their pages
    threading.Thread(target=_watch_the_trainer, args=(os.getppid(),), daemon=True).start()
    batch = None
    try:
        batch = EnvBatch([make() for make in factories], threads=threads, remake=remake)
        connection.send(("ok", batch.spec))
        while True:
            command, argument = connection.recv()
            if command == "close":
                break
            connection.send(("ok", getattr(batch, command)(*argument)))
    except EOFError:  # the trainer is gone
        pass
    except BaseException as error:  # noqa: BLE001 - the trainer raises it in the worker that asked
        connection.send(("config", str(error)) if isinstance(error, ConfigError) else
                        ("error", f"{type(error).__name__}: {error}"))
    finally:
        if batch is not None:
            batch.close()
        connection.close()


def _shifted_remake(remake: Remake, offset: int, generation: int, index: int, restarts: int) -> Environment:
    """A child's remake: its games numbered from 0 get the batch's index back, and the restarts of a replaced
    child's slot continue past its predecessors' (fresh seeds)."""
    return remake(offset + index, generation * CHILD_RESTART_STRIDE + restarts)


CHILD_RESTART_STRIDE = 1000  # a replacement child's games count their restarts from generation x this
CHECK_SECONDS = 0.5  # how often a wait for a game process looks at the stop flag


class ProcessEnvBatch:
    """EnvBatch's interface, with the games built and stepped in `processes` child processes (contiguous
    slices), so that their emulation runs outside the trainer's GIL and a game that stops answering can be
    abandoned. ale-py holds the GIL while it emulates, which stalls every other worker thread's Python; a child
    process has a GIL of its own; and a ViZDoom engine that dies holding its message queue's lock blocks the
    thread that waits on it for good (docs/guide/faults.md): in a child, that thread can be killed.

    A step sends every child its slice's actions first and then collects the answers, so the children step
    side by side. Children are forked (the trainer's modules are already loaded); they build their games from
    `factories` themselves.

    The watchdog: a child that has not answered a call within `timeout` seconds, or has died, is killed with its
    engines and replaced by a fresh child whose games have fresh seeds (`remake`): the step reports each of its
    games as crashed (reward 0, done, the unfinished episode dropped), as for a game that crashed inside a child.
    Without `remake` the loss raises GameProcessLost. Once `stop` is set, a wait of over CHECK_SECONDS for a child
    raises Stopped instead, so a stopping run never waits on a stalled game.
    """

    def __init__(self, factories: Sequence[Callable[[], Environment]], processes: int = 1,
                 remake: Remake | None = None, timeout: float = 30.0, stop: threading.Event | None = None,
                 threads: int = 1):
        if not factories:
            raise ValueError("an EnvBatch needs at least one environment")
        self._slices = contiguous_slices(len(factories), processes)
        self._size = len(factories)
        self._remake = remake
        self._threads = threads  # each child steps its games with this many threads, as EnvBatch does
        self._timeout = timeout
        self._stop = stop
        self._generations = [0] * len(self._slices)
        self._connections: list = [None] * len(self._slices)
        self._processes: list = [None] * len(self._slices)
        # A child replaced during a call other than step(): (its fresh games' first observations, why), for the
        # next step to report as crashes instead of stepping them.
        self._replaced: dict[int, tuple[np.ndarray, str]] = {}
        self._start_failures: list[tuple[int, str]] = []
        self._bot_level: int | None = None  # set_bot_level's, told again to a replacement child
        # Before multiprocessing's own exit hook, which would wait forever on children that ignore SIGTERM.
        atexit.register(self.close)
        try:
            for child, part in enumerate(self._slices):
                self._fork(child, list(factories[part]))
            self.spec: EnvSpec = [self._receive(child) for child in range(len(self._slices))][0]
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return self._size

    def _child_remake(self, child: int) -> Remake | None:
        if self._remake is None:
            return None
        return functools.partial(_shifted_remake, self._remake, self._slices[child].start, self._generations[child])

    def _fork(self, child: int, factories: list[Callable[[], Environment]]) -> None:
        part = self._slices[child]
        parent_end, child_end = multiprocessing.get_context("fork").Pipe()
        process = multiprocessing.get_context("fork").Process(
            target=_serve_games, args=(child_end, factories, self._child_remake(child), self._threads), daemon=True,
            name=f"games-{part.start}-{part.stop}")
        process.start()
        child_end.close()
        self._connections[child], self._processes[child] = parent_end, process

    def _lost(self, child: int, why: str) -> GameProcessLost:
        process = self._processes[child]
        return GameProcessLost(f"game process {process.pid} (games {self._slices[child].start}-"
                               f"{self._slices[child].stop - 1}) {why}")

    def _send(self, child: int, command: str, argument: tuple) -> None:
        try:
            self._connections[child].send((command, argument))
        except OSError:  # a broken pipe: the child is gone
            self._processes[child].join(timeout=1)
            raise self._lost(child, f"died (exit code {self._processes[child].exitcode})") from None

    def _receive(self, child: int):
        connection, process = self._connections[child], self._processes[child]
        started = time.monotonic()
        while not connection.poll(CHECK_SECONDS):
            if self._stop is not None and self._stop.is_set():
                raise Stopped
            if time.monotonic() - started > self._timeout:
                raise self._lost(child, f"did not answer within {self._timeout:g} s (a stalled engine?)")
        try:
            status, value = connection.recv()
        except (EOFError, OSError):
            process.join(timeout=1)
            raise self._lost(child, f"died (exit code {process.exitcode})") from None
        if status == "config":  # a game that cannot run as configured: the user's to fix, said as such
            raise ConfigError(value)
        if status == "error":
            raise RuntimeError(f"in game process {process.pid}: {value}")
        return value

    def _replace(self, child: int) -> np.ndarray:
        """Kill child `child` with its engines, fork a fresh one with fresh seeds in its place, and return its
        games' first observations. A fresh child that fails to start is tried again, START_ATTEMPTS in all."""
        part = self._slices[child]
        for attempt in range(1, START_ATTEMPTS + 1):
            kill_process_tree(self._processes[child].pid)
            self._processes[child].join(timeout=5)
            self._connections[child].close()
            self._generations[child] += 1
            games = [functools.partial(self._remake, i, self._generations[child] * CHILD_RESTART_STRIDE)
                     for i in range(part.start, part.stop)]
            self._fork(child, games)
            try:
                self._receive(child)  # the spec: its games are built
                if self._bot_level is not None:
                    self._send(child, "set_bot_level", (self._bot_level,))
                    self._receive(child)
                self._send(child, "reset", ())
                return self._receive(child)
            except GameProcessLost as error:
                if attempt == START_ATTEMPTS:
                    raise GameProcessLost(f"{START_ATTEMPTS} fresh game processes in a row failed to start; the "
                                          f"last: {one_line(error)}") from None
        raise AssertionError("unreachable")

    def _ask(self, child: int, command: str, argument: tuple = ()):
        """One call to one child; a lost child is replaced (its games reported as crashed at the next step) and
        asked again."""
        try:
            self._send(child, command, argument)
            return self._receive(child)
        except GameProcessLost as error:
            if self._remake is None:
                raise
            self._replaced[child] = (self._replace(child), one_line(error))
        self._send(child, command, argument)
        return self._receive(child)

    def _replaced_step(self, child: int, error: GameProcessLost) -> BatchStep:
        """What a step reports for the games of child `child`, lost with `error`: a terminal with reward 0 each,
        then the first observation of the fresh game that replaced it. Without restarts the error is raised."""
        if self._remake is None:
            raise error
        return crash_step(self._replace(child), one_line(error))

    def reset(self) -> np.ndarray:
        parts = []
        for child in range(len(self._slices)):
            self._send(child, "reset", ())
        for child, part in enumerate(self._slices):
            try:
                parts.append(self._receive(child))
            except GameProcessLost as error:
                if self._remake is None:
                    raise
                parts.append(self._replace(child))
                self._start_failures += [(game, one_line(error)) for game in range(part.start, part.stop)]
        self._replaced.clear()
        return np.concatenate(parts)

    def take_start_failures(self) -> list[tuple[int, str]]:
        failures, self._start_failures = self._start_failures, []
        for child, part in enumerate(self._slices):
            failures += [(part.start + game, why) for game, why in self._ask(child, "take_start_failures")]
        return failures

    def step(self, actions: np.ndarray) -> BatchStep:
        actions = np.asarray(actions)
        parts: list[BatchStep | None] = [None] * len(self._slices)
        asked = []
        for child, part in enumerate(self._slices):
            if child in self._replaced:
                parts[child] = crash_step(*self._replaced.pop(child))
                continue
            try:
                self._send(child, "step", (actions[part],))
                asked.append(child)
            except GameProcessLost as error:
                parts[child] = self._replaced_step(child, error)
        for child in asked:
            try:
                parts[child] = self._receive(child)
            except GameProcessLost as error:
                parts[child] = self._replaced_step(child, error)
        return concatenate_steps(parts)

    def _ask_game(self, command: str, index: int, *arguments):
        """The child EnvBatch's `command` for game `index` of the whole batch."""
        child = next(i for i, part in enumerate(self._slices) if part.start <= index < part.stop)
        return self._ask(child, command, (index - self._slices[child].start, *arguments))

    def screen(self, index: int = 0) -> np.ndarray:
        return self._ask_game("screen", index)

    def record_tics(self, index: int, on: bool) -> float:
        return self._ask_game("record_tics", index, on)

    def step_screens(self, index: int) -> list[np.ndarray]:
        return self._ask_game("step_screens", index)

    def set_bot_level(self, level: int | None) -> None:
        self._bot_level = level
        for child in range(len(self._slices)):
            self._ask(child, "set_bot_level", (level,))

    def close(self) -> None:
        """Ask every child to close its games; one that has not ended within CLOSE_SECONDS (a stalled engine)
        is killed with its engines."""
        atexit.unregister(self.close)
        started = [(c, p) for c, p in zip(self._connections, self._processes) if p is not None]
        for connection, process in started:
            if process.is_alive():
                try:
                    connection.send(("close", ()))
                except OSError:
                    pass
        deadline = time.monotonic() + CLOSE_SECONDS
        for connection, process in started:
            process.join(timeout=max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                kill_process_tree(process.pid)
                process.join()
            connection.close()


CLOSE_SECONDS = 5.0  # for every child of a batch together to close its games before they are killed
