"""A worker's games stepped together, always as a batch: one call steps every environment, resetting
those that ended. `make_environment` builds one game of any kind from a resolved config.

ViZDoom runs each game in its own engine process and releases the GIL while it waits for it, so
games stepped from two threads run side by side (measured on 2 cores: 2.1k steps/s from one thread,
6.3k/s from two). The batch splits its games into `threads` contiguous slices and steps the slices
concurrently; with one thread it is a plain loop with no thread hand-off at all. `ProcessEnvBatch` steps
them in child processes instead (--env-processes), for games that hold the GIL while they run (Atari).

A game that dies or raises while it steps is closed and replaced by a fresh one (`remake`, a new seed) in
the same slot, so that a killed or crashed engine costs one episode, not the run: the step reports it in
`crashes`, with reward 0 and done (its unfinished episode is dropped). Without `remake` the error reaches
the caller.

A game ended by a time limit (`truncated`) is reset like any other; its last observation, which learning
bootstraps from, comes in `final_observations`.
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
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, NamedTuple, Protocol, Sequence

import numpy as np

from doom_a3c.config import TrainConfig, one_line
from doom_a3c.environment import Environment, EnvSpec, spec_of
from doom_a3c.frame_stack import stack_frames
from doom_a3c.run_state import GameProcessLost, Stopped


def make_environment(config: TrainConfig, seed: int) -> Environment:
    """One game of the resolved config's environment, whichever of the kinds it is, as the network sees it: every
    game of a run (workers' and their child processes', the evaluator's, play.py's, make_env's) is made here, so
    that --frame-stack stacks its frames alike everywhere."""
    if config.env_kind == "doom":
        from doom_a3c.doom_env import DoomEnvironment

        game: Environment = DoomEnvironment(config, seed)
    else:
        from doom_a3c.gym_envs import make_gym_environment

        game = make_gym_environment(config, seed)
    return stack_frames(game, config.frame_stack or 1)


class BatchStep(NamedTuple):
    observations: np.ndarray  # [E, *obs]: the next observation, or the first of a new episode where done
    rewards: np.ndarray  # [E] float32, the game's own reward (unscaled)
    dones: np.ndarray  # [E] bool, the episode ended at this step
    game_overs: np.ndarray  # [E] bool, the game really ended (and was reset); an Atari life loss is a done only
    shaping: np.ndarray  # [E] float32, the learning-only bonus of reward shaping (0 without it)
    crashes: np.ndarray  # [E] object: "" or why the game was closed and restarted at this step (reward 0, done)
    truncated: np.ndarray  # [E] bool, a time limit ended the game (game over, not done)
    final_observations: np.ndarray | None  # [E, *obs], meaningful where truncated; None when no game was


def concatenate_steps(parts: Sequence[BatchStep]) -> BatchStep:
    """The steps of consecutive slices of one batch as one step."""
    arrays = {name: np.concatenate([getattr(part, name) for part in parts])
              for name in BatchStep._fields if name != "final_observations"}
    finals = None
    if arrays["truncated"].any():
        finals = np.concatenate([part.observations if part.final_observations is None else part.final_observations
                                 for part in parts])
    return BatchStep(**arrays, final_observations=finals)


RESTART_SEED_STRIDE = 1_000_000  # a restarted game's seed: its slot's seed + this x the slot's restarts so far
START_ATTEMPTS = 3  # a slot whose fresh games fail this many times in a row to start: a broken setup, not a stray crash
Remake = Callable[[int, int], Environment]  # (game index in the batch, restarts of that slot so far) -> a new game


def contiguous_slices(count: int, parts: int) -> list[slice]:
    """`count` games split into `parts` (at most `count`, at least 1) contiguous slices of near-equal size."""
    parts = max(1, min(parts, count))
    bounds = np.linspace(0, count, parts + 1).round().astype(int)
    return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:])]


class GameBatch(Protocol):
    """E games stepped together (EnvBatch in this process, ProcessEnvBatch in child processes), with the
    declared attributes of one game."""

    spec: EnvSpec

    def __len__(self) -> int: ...

    def reset(self) -> np.ndarray: ...

    def take_start_failures(self) -> list[tuple[int, str]]: ...

    def step(self, actions: np.ndarray) -> BatchStep: ...

    def screen(self, index: int = 0) -> np.ndarray: ...

    def record_tics(self, index: int, on: bool) -> float:
        """Game `index` keeps the screen of every tic of its steps (on) or not: returns the game time per tic,
        0.0 for a game that cannot (only ViZDoom's can)."""

    def step_screens(self, index: int) -> list[np.ndarray]:
        """The screens of every tic of game `index`'s last step, while it records tics (up to the episode's end:
        its last step's too, though the game was reset since)."""

    def close(self) -> None: ...


class EnvBatch:
    """Games in this process, stepped by `threads` threads (contiguous slices); a game that fails while it steps
    is replaced by `remake` (None: the error reaches the caller).

    Kept instead of gymnasium's AsyncVectorEnv: 8 basic games, 4,004 env steps/s and 0.42 ms CPU a step against
    its 954 and 1.63 ms (a process and pipe round trip per game, over ViZDoom's gymnasium env);
    benchmarks/env_libraries.py, 2026-11-23, quiet 2-core machine."""

    def __init__(self, envs: Sequence[Environment], threads: int = 1, remake: Remake | None = None):
        if not envs:
            raise ValueError("an EnvBatch needs at least one environment")
        self.envs = list(envs)
        self.spec = spec_of(self.envs[0])
        self._slices = contiguous_slices(len(self.envs), threads)
        self._pool = ThreadPoolExecutor(len(self._slices) - 1, thread_name_prefix="env") if len(self._slices) > 1 else None
        self._observations: np.ndarray | None = None
        self._rewards = np.zeros(len(self.envs), np.float32)
        self._shaping = np.zeros(len(self.envs), np.float32)
        self._dones = np.zeros(len(self.envs), bool)
        self._game_overs = np.zeros(len(self.envs), bool)
        self._crashes = np.full(len(self.envs), "", object)
        self._truncated = np.zeros(len(self.envs), bool)
        self._finals: np.ndarray | None = None
        self._remake = remake
        self._restarts = [0] * len(self.envs)
        self._start_failures: list[tuple[int, str]] = []  # (game, why) restarted by reset(), not yet reported

    def __len__(self) -> int:
        return len(self.envs)

    def reset(self) -> np.ndarray:
        """Every game's first observation; a game that fails to start (an engine killed before its first
        episode) is restarted like one that fails mid-run, and reported by take_start_failures()."""
        first = []
        for i, env in enumerate(self.envs):
            try:
                first.append(env.reset())
            except Exception as error:  # noqa: BLE001 - as in _step_slice
                if self._remake is None:
                    raise
                self._start_failures.append((i, one_line(error)))
                first.append(self._start_fresh_game(i))
        self._observations = np.stack(first)
        self._finals = np.zeros_like(self._observations)
        return self._observations.copy()

    def take_start_failures(self) -> list[tuple[int, str]]:
        """The games reset() had to restart since the last call, as (game index, why)."""
        failures, self._start_failures = self._start_failures, []
        return failures

    def _step_slice(self, part: slice, actions: np.ndarray) -> None:
        for i in range(part.start, part.stop):
            try:
                result = self.envs[i].step(int(actions[i]))
                observation = self.envs[i].reset() if result.game_over else result.observation
            except Exception as error:  # noqa: BLE001 - any game's failure: a killed engine, an emulator's error
                if self._remake is None:
                    raise
                self._restart(i, error)
                continue
            self._rewards[i], self._dones[i], self._game_overs[i] = result.reward, result.done, result.game_over
            self._shaping[i], self._crashes[i], self._truncated[i] = result.shaping, "", result.truncated
            if result.truncated:
                self._finals[i] = result.observation
            self._observations[i] = observation

    def _restart(self, i: int, error: Exception) -> None:
        """Close game i (a dead engine may fail to) and start a fresh one in its place, with a new seed. The
        step ends its episode as a terminal with reward 0; the new game's first observation follows."""
        self._observations[i] = self._start_fresh_game(i)
        self._rewards[i] = self._shaping[i] = 0.0
        self._dones[i], self._game_overs[i], self._truncated[i] = True, False, False
        self._crashes[i] = one_line(error)

    def _start_fresh_game(self, i: int) -> np.ndarray:
        """Close game i (a dead engine may fail to), put a new one with a new seed in its place and return its
        first observation. A game that cannot even be built (a broken scenario) raises at once; one whose
        engine dies before its first observation is tried again, START_ATTEMPTS times in all."""
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                self.envs[i].close()
            except Exception:  # noqa: BLE001 - it is being replaced either way
                pass
            self._restarts[i] += 1
            self.envs[i] = self._remake(i, self._restarts[i])
            try:
                return self.envs[i].reset()
            except Exception:  # noqa: BLE001 - as in _step_slice
                if attempt == START_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    def step(self, actions: np.ndarray) -> BatchStep:
        """actions [E] int -> the batch's next observations, rewards and episode ends."""
        assert self._observations is not None, "reset() first"
        if self._pool is None:
            self._step_slice(self._slices[0], actions)
        else:
            # The calling thread steps the first slice itself; the pool steps the rest.
            futures = [self._pool.submit(self._step_slice, part, actions) for part in self._slices[1:]]
            self._step_slice(self._slices[0], actions)
            for future in futures:
                future.result()  # re-raises a game's error in the worker thread
        finals = self._finals.copy() if self._truncated.any() else None
        return BatchStep(self._observations.copy(), self._rewards.copy(), self._dones.copy(), self._game_overs.copy(),
                         self._shaping.copy(), self._crashes.copy(), self._truncated.copy(), finals)

    def screen(self, index: int = 0) -> np.ndarray:
        return self.envs[index].screen()

    def record_tics(self, index: int, on: bool) -> float:
        env = self.envs[index]
        if not hasattr(env, "record_tics"):
            return 0.0
        env.record_tics = on
        return env.seconds_per_tic

    def step_screens(self, index: int) -> list[np.ndarray]:
        return list(self.envs[index].tic_screens)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        for env in self.envs:
            env.close()


# ---- games in child processes (--env-processes) ---------------------------------------------------

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
        connection.send(("error", f"{type(error).__name__}: {error}"))
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


def descendants(pid: int) -> list[int]:
    """The running processes under `pid` (a game process's engines), from one scan of /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, frontier = [], [pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            found.append(child)
            frontier.append(child)
    return found


def vizdoom_instance_id(pid: int) -> str | None:
    """The `+viz_instance_id` of a ViZDoom engine's command line: it names the engine's shared memory."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            words = handle.read().decode(errors="replace").split("\0")
    except OSError:
        return None
    for flag, value in zip(words, words[1:]):
        if flag == "+viz_instance_id":
            return value
    return None


def kill_process_tree(pid: int) -> None:
    """SIGKILL `pid` and every process under it (a stopped engine too), then remove the shared memory of the
    ViZDoom engines among them: nobody is left to close it (/dev/shm would keep ~100 KB per engine)."""
    tree = descendants(pid)
    instances = [i for i in map(vizdoom_instance_id, tree) if i]
    for victim in [pid, *tree]:
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for instance in instances:
        for prefix in ("ViZDoomMQCtr", "ViZDoomMQDoom", "ViZDoomSM"):
            try:
                os.unlink(f"/dev/shm/{prefix}{instance}")
            except OSError:
                pass


def crash_step(observations: np.ndarray, why: str) -> BatchStep:
    """A step of games that were replaced: a terminal with reward 0 each, the fresh games' first observations."""
    count = len(observations)
    return BatchStep(observations, np.zeros(count, np.float32), np.ones(count, bool), np.zeros(count, bool),
                     np.zeros(count, np.float32), np.full(count, why, object), np.zeros(count, bool), None)


class ProcessEnvBatch:
    """EnvBatch's interface, with the games built and stepped in `processes` child processes (contiguous
    slices), so that their emulation runs outside the trainer's GIL and a game that stops answering can be
    abandoned. ale-py holds the GIL while it emulates, which stalls every other worker thread's Python; a child
    process has a GIL of its own; and a ViZDoom engine that dies holding its message queue's lock blocks the
    thread that waits on it for good (docs/faults.md): in a child, that thread can be killed.

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


def _remade(config: TrainConfig, seeds: Sequence[int], index: int, restarts: int) -> Environment:
    return make_environment(config, seed=seeds[index] + RESTART_SEED_STRIDE * restarts)


def make_env_batch(config: TrainConfig, seeds: Sequence[int], stop: threading.Event | None = None) -> GameBatch:
    """One worker's games: built and stepped here by --env-threads threads, or with --env-processes P built
    and stepped in P child processes under the --game-timeout watchdog (`stop`: the run's stop flag, which ends
    any wait for them). A game that fails is restarted unless --max-game-restarts is 0."""
    remake = functools.partial(_remade, config, list(seeds)) if config.max_game_restarts > 0 else None
    if config.env_processes:
        return ProcessEnvBatch([functools.partial(make_environment, config, seed=seed) for seed in seeds],
                               config.env_processes, remake, timeout=config.game_timeout, stop=stop,
                               threads=config.env_threads)
    envs = []
    try:
        for seed in seeds:
            envs.append(make_environment(config, seed=seed))
    except BaseException:
        for env in envs:  # the games already started must not outlive a failed build
            env.close()
        raise
    return EnvBatch(envs, threads=config.env_threads, remake=remake)
