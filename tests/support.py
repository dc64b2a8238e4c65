"""Fakes and helpers that tests in several folders share: small configs, fake games and rollouts for the learning
core, a fake pixel task every mode learns, subprocess runs of train.py and play.py, an agent's first decision, and
the process-table checks of the fault tests; REPO_ROOT, the checkout. Tests import from here, never from each other
nor from conftest.py.
"""
from __future__ import annotations

import csv
import hashlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import types

import numpy as np

from doom_a3c.algo.model.actor_critic import LSTMState
from doom_a3c.algo.rollout import Rollout
from doom_a3c.config import TrainConfig
from doom_a3c.envs.batch import EnvBatch
from doom_a3c.envs.interface import EnvSpec, Step, observation_dtype
from doom_a3c.modes.build import ThreadRun, build_global
from doom_a3c.runtime.state import RunState

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---- the learning core's fakes: still games, small configs, rollouts with an episode end inside ----------------
SHAPE = (20, 20, 1)
STEPS, GAMES = 6, 3


class StillEnv:
    """A game that never changes: the modes are fed ready-made rollouts, it only has to exist."""

    num_actions = 3
    action_names = ["a", "b", "c"]
    observation_shape = SHAPE
    seconds_per_step = 0.1

    def reset(self):
        return np.zeros(SHAPE, np.uint8)

    def step(self, action):
        return Step(np.zeros(SHAPE, np.uint8), 0.0, False, False)

    def screen(self):
        return np.zeros((4, 4, 3), np.uint8)

    def close(self):
        pass


def small_config(tmp_path, **overrides) -> TrainConfig:
    values = dict(scenario="fake", env_kind="doom", scenario_path="fake.cfg", actions=[["a"], ["b"], ["c"]],
                  frame_skip=1, reward_scale=1.0, clip_rewards=False, frame_size=SHAPE[0], hidden_size=32,
                  lstm_size=16, workers=1, envs_per_worker=GAMES, env_threads=1, rollout=STEPS,
                  learning_rate=1e-3, clip_norm=0.5, model_dir=str(tmp_path / "m"), gif_every=0)
    return TrainConfig(**{**values, **overrides})


HEARD_SAMPLES = 315  # a step of one tic at 11,025 Hz (small_config's frame skip 1 with audio=True)


def fixed_rollouts(count: int, lstm_size: int, heard: bool = False) -> list[Rollout]:
    """Rollouts with rewards, an episode end inside (dones then starts) and a non-zero initial LSTM state; `heard`:
    record observations whose frames are the same and which carry each step's sound beside them."""
    rng = np.random.default_rng(7)
    sound = np.random.default_rng(8)
    rollouts = []
    for _ in range(count):
        dones = np.zeros((STEPS, GAMES), np.float32)
        dones[2, 0] = dones[4, 2] = 1.0
        starts = np.zeros((STEPS, GAMES), np.float32)
        starts[1:] = dones[:-1]
        rollouts.append(Rollout(
            observations=rng.integers(0, 256, (STEPS, GAMES, *SHAPE)).astype(np.uint8),
            actions=rng.integers(0, 3, (STEPS, GAMES)).astype(np.int32),
            rewards=rng.normal(size=(STEPS, GAMES)).astype(np.float32),
            dones=dones, starts=starts,
            values=rng.normal(size=(STEPS, GAMES)).astype(np.float32),
            initial_state=LSTMState(rng.normal(size=(GAMES, lstm_size)).astype(np.float32),
                                    rng.normal(size=(GAMES, lstm_size)).astype(np.float32)),
            bootstrap_values=rng.normal(size=GAMES).astype(np.float32),
            end_values=np.zeros((STEPS, GAMES), np.float32)))
        if heard:
            frames = rollouts[-1].observations
            observations = np.zeros((STEPS, GAMES), observation_dtype(SHAPE, 0, audio_shape=(HEARD_SAMPLES, 2)))
            observations["frame"] = frames
            observations["audio"] = sound.integers(-8000, 8000, (STEPS, GAMES, HEARD_SAMPLES, 2))
            rollouts[-1] = rollouts[-1]._replace(observations=observations)
    return rollouts


def spec() -> EnvSpec:
    return EnvSpec(3, SHAPE, 0.1, ["a", "b", "c"])


def tiny_config(tmp_path, **overrides) -> TrainConfig:
    values = dict(scenario="fake", env_kind="doom", scenario_path="fake.cfg", actions=[["a"], ["b"], ["c"]],
                  frame_skip=1, reward_scale=1.0, clip_rewards=False, frame_size=SHAPE[0], hidden_size=16,
                  lstm_size=8, workers=1, envs_per_worker=GAMES, env_threads=1, rollout=STEPS,
                  learning_rate=1e-3, clip_norm=0.5, model_dir=str(tmp_path / "m"), gif_every=0,
                  game_variables=[["HEALTH", 1.0], ["AMMO2", 1.0]], normalize_variables=True, normalize_returns=True)
    return TrainConfig(**{**values, **overrides})


def variable_rollout(scale: float = 1.0, seed: int = 7) -> Rollout:
    rng = np.random.default_rng(seed)
    observations = np.zeros((STEPS, GAMES), observation_dtype(SHAPE, 2))
    observations["frame"] = rng.integers(0, 256, (STEPS, GAMES, *SHAPE))
    observations["variables"] = np.stack([rng.uniform(0, 100, (STEPS, GAMES)), rng.integers(0, 50, (STEPS, GAMES))], -1)
    dones = np.zeros((STEPS, GAMES), np.float32)
    dones[2, 0] = 1.0
    starts = np.zeros((STEPS, GAMES), np.float32)
    starts[1:] = dones[:-1]
    return Rollout(observations=observations, actions=rng.integers(0, 3, (STEPS, GAMES)).astype(np.int32),
                   rewards=(scale * rng.uniform(0, 4, (STEPS, GAMES))).astype(np.float32), dones=dones, starts=starts,
                   values=(scale * rng.normal(size=(STEPS, GAMES))).astype(np.float32),
                   initial_state=LSTMState(np.zeros((GAMES, 8), np.float32), np.zeros((GAMES, 8), np.float32)),
                   bootstrap_values=(scale * rng.normal(size=GAMES)).astype(np.float32),
                   end_values=np.zeros((STEPS, GAMES), np.float32))


# ---- a tiny pixel task every mode learns: the bright half of the screen says which action pays -----------------
BRIGHT_SHAPE = (84, 84, 1)


class BrightSideEnv:
    """The bright half of the screen says which action pays 1 (0: left, 1: right); 2 never pays."""

    num_actions = 3
    action_names = ["left", "right", "wait"]
    observation_shape = BRIGHT_SHAPE
    seconds_per_step = 0.1

    def __init__(self, seed, reward=1.0, episode_length=10, fail_after=None):
        self.rng = np.random.default_rng(seed)
        self.reward, self.episode_length, self.fail_after = reward, episode_length, fail_after
        self.steps_taken = 0

    def _observe(self):
        self.side = int(self.rng.integers(2))
        frame = np.zeros(BRIGHT_SHAPE, np.uint8)
        if self.side == 0:
            frame[:, :42] = 255
        else:
            frame[:, 42:] = 255
        return frame

    def reset(self):
        self.t = 0
        return self._observe()

    def step(self, action):
        self.steps_taken += 1
        if self.fail_after is not None and self.steps_taken > self.fail_after:
            raise RuntimeError("the game crashed")
        paid = self.reward if action == self.side else 0.0
        self.t += 1
        over = self.t >= self.episode_length
        return Step(self._observe(), paid, over, over)

    def screen(self):
        return np.zeros((12, 16, 3), np.uint8)

    def close(self):
        pass


def fake_config(tmp_path, **overrides) -> TrainConfig:
    """A resolved config for BrightSideEnv games (which declare their own observation shape)."""
    values = dict(scenario="fake", env_kind="doom", scenario_path="fake.cfg",
                  actions=[[name] for name in BrightSideEnv.action_names], frame_skip=1, reward_scale=1.0,
                  clip_rewards=False, learning_rate=7e-4, rollout=30, workers=1, gif_every=0,
                  model_dir=str(tmp_path / "model"), frames_dir=str(tmp_path / "frames"))
    return TrainConfig(**{**values, **overrides})


def fake_thread_run(config: TrainConfig, game_lists) -> ThreadRun:
    """What build_thread_run makes, with these fake games (one batch per worker or GA3C runner)."""
    batches = [EnvBatch(envs, threads=config.env_threads) for envs in game_lists]
    run = RunState()
    spec = batches[0].spec
    return ThreadRun(config, batches, spec, build_global(config, spec, counters=run.counters), run)


# ---- a rollout of vector observations with given rewards, ends and values --------------------------------------
VECTOR_SHAPE = (4,)


def fake_rollout(rewards, dones, values, bootstrap):
    steps, batch = rewards.shape
    zeros = np.zeros((batch, 8), np.float32)
    return Rollout(np.zeros((steps, batch, *VECTOR_SHAPE), np.float32), np.zeros((steps, batch), np.int32),
                   rewards.astype(np.float32), dones.astype(np.float32), np.zeros((steps, batch), np.float32),
                   values.astype(np.float32), LSTMState(zeros, zeros), np.asarray(bootstrap, np.float32),
                   np.zeros((steps, batch), np.float32))


# ---- games that count their steps, for batches in threads and child processes ----------------------------------
class CountingEnv:
    """Observation = [env id, step in episode]; reward = the action; the episode ends after `length` steps."""

    num_actions = 3
    action_names = ["a", "b", "c"]
    observation_shape = (2,)
    seconds_per_step = 0.25

    def __init__(self, ident, length, fail_at=None):
        self.ident, self.length, self.fail_at = ident, length, fail_at
        self.resets = 0
        self.total_steps = 0

    def reset(self):
        self.t = 0
        self.resets += 1
        return np.array([self.ident, 0], np.uint8)

    def step(self, action):
        self.total_steps += 1
        if self.fail_at is not None and self.total_steps >= self.fail_at:
            raise RuntimeError(f"engine {self.ident} died")
        self.t += 1
        over = self.t >= self.length
        return Step(np.array([self.ident, self.t], np.uint8), float(action), over, over)

    def screen(self):
        return np.full((2, 2, 3), self.ident, np.uint8)

    def close(self):
        pass


def counting_factories(count=5, fail_at=None):
    return [lambda i=i: CountingEnv(i, length=2 + i, fail_at=fail_at if i == count - 1 else None)
            for i in range(count)]


# ---- train.py and play.py as a user runs them ------------------------------------------------------------------
def run(script, *args, timeout=600):
    """Run train.py/play.py like a user would, from the repo root, without the test's TF log setting."""
    env = dict(os.environ)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # the scripts must quieten TensorFlow themselves
    started = time.time()
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, script), *map(str, args)], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout)
    proc.seconds = time.time() - started
    return proc


def run_in_process(script, capsys, *args):
    """train.py's or play.py's main function called in this process with `args`, for errors that `run` would
    show in the same way: the exit code (a flag error's SystemExit code too) and what it printed, as `run`
    returns them."""
    from doom_a3c.cli import play_main, train_main

    main = {"train.py": train_main, "play.py": play_main}[script]
    capsys.readouterr()  # only this call's output
    try:
        returncode = main([str(a) for a in args])
    except SystemExit as stop:
        returncode = stop.code
    out, err = capsys.readouterr()
    return types.SimpleNamespace(returncode=returncode, stdout=out, stderr=err)


def read_rows(path):
    with open(path, newline="") as handle:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(handle)]


def snapshot(*folders):
    """Every file and folder under `folders` with its content hash."""
    state = {}
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            for d in dirs:
                state[os.path.join(root, d)] = "dir"
            for name in files:
                path = os.path.join(root, name)
                with open(path, "rb") as handle:
                    state[path] = hashlib.sha256(handle.read()).hexdigest()
    return state


def assert_one_line_error(proc, *needles):
    """Non-zero exit, exactly one 'error: ...' line on stderr, no traceback."""
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-3000:]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def saved_run(prefix):
    """What a checkpoint holds besides the weights: its config (a dict), action count and counters."""
    from doom_a3c.runtime.checkpoint import read_checkpoint

    return read_checkpoint(str(prefix))


def strict_json(text):
    """json.loads that refuses NaN and Infinity, as jq and JavaScript do."""
    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def save_checkpoint(model_dir, **given) -> str:
    """An untrained checkpoint of `given`'s scenario (cig unless said), as train.py would save it."""
    import keras
    import tensorflow as tf

    from doom_a3c.algo.model.actor_critic import build_actor_critic
    from doom_a3c.run.resolve import resolve_new_run
    from doom_a3c.runtime.checkpoint import Checkpointer, RunCounters

    config = resolve_new_run({"scenario": "cig", "lstm_size": 16, "hidden_size": 32, "model_dir": str(model_dir),
                              **given})
    shape = (config.frame_size, getattr(config, "frame_width", 0) or config.frame_size, 3 if config.color else 1)
    net = build_actor_critic(config, len(config.actions), shape, name="global")
    optimizer = keras.optimizers.Adam(1e-3)
    optimizer.build(net.trainable_variables)
    counters = RunCounters(config, len(config.actions))
    Checkpointer(str(model_dir), tf.train.Checkpoint(model=net, optimizer=optimizer, run=counters), counters).save()
    return os.path.join(str(model_dir), "last.ckpt")


# ---- an agent's first decision, what an exported or reloaded policy must reproduce ----------------------------
def first_observation_and_policy(agent):
    """A fresh game's first observation and the agent's policy on it, from a reset state: what an exported
    policy must reproduce."""
    env = agent.make_env()
    try:
        observation, _ = env.reset()
    finally:
        env.close()
    agent.reset()
    return observation, agent.policy(observation).probabilities


# ---- processes: engines under a trainer, alive or not, a trainer started for a fault test -----------------------
def load_soak():
    """benchmarks/soak.py, whose process-table helpers the tests share (the soak counts leftovers the same way)."""
    spec = importlib.util.spec_from_file_location("soak", os.path.join(REPO_ROOT, "benchmarks", "soak.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


soak = load_soak()


def descendants(pid: int) -> list[int]:
    """Every running descendant of `pid`."""
    return soak.family(pid, soak.process_table())[1:]


def running(pid: int) -> bool:
    """Alive and not a zombie (a killed orphan waits for init to reap it, but runs no more)."""
    state = soak.process_table().get(pid)
    return state is not None and state[1] != "Z"


def engines_under(pid: int) -> list[int]:
    return [p for p in descendants(pid) if soak.is_engine(p) and running(p)]


def wait_for(predicate, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def start_trainer(tmp_path, *flags):
    """train.py on basic.wad, output to files (a pipe would be held open by anything left behind), in a session
    of its own so that the test can clean up after a failure."""
    log, errors = open(tmp_path / "train.log", "w"), open(tmp_path / "stderr.log", "w")
    proc = subprocess.Popen([sys.executable, os.path.join(REPO_ROOT, "train.py"), "--scenario", "basic.wad",
                             "--model-dir", str(tmp_path / "run"), "--frames-dir", str(tmp_path / "frames"),
                             "--max-minutes", "10", "--gif-every", "0", "--workers", "1", "--envs-per-worker", "2",
                             "--no-evaluate", *flags], cwd=REPO_ROOT, stdout=log, stderr=errors, start_new_session=True)
    proc.log, proc.errors = log, errors
    return proc


def episodes_logged(tmp_path) -> int:
    path = tmp_path / "run" / "progress.csv"
    if not path.exists():
        return 0
    with open(path, newline="") as handle:
        return len(list(csv.DictReader(handle)))


def output(tmp_path) -> str:
    return (tmp_path / "train.log").read_text() + (tmp_path / "stderr.log").read_text()


def wait_for_training(tmp_path, proc, episodes=1):
    """Until `episodes` are logged and the worker's 2 engines run; returns their pids."""
    started = wait_for(lambda: episodes_logged(tmp_path) >= episodes and len(engines_under(proc.pid)) >= 2,
                       seconds=400)
    assert started, f"no training with 2 engines: {output(tmp_path)[-3000:]}"
    engines = engines_under(proc.pid)
    assert len(engines) == 2, engines
    return engines


def clean_up(proc, pids):
    """Whatever the test left: the trainer's session and the processes it recorded, by pid."""
    for pid in pids:
        if running(pid):
            os.kill(pid, signal.SIGKILL)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)
    proc.log.close()
    proc.errors.close()


def hear_ctrl_c() -> None:
    """In a child before its exec: SIGINT's default back, so that its Python turns Ctrl-C into KeyboardInterrupt (a
    suite started in the background of a shell ignores SIGINT, and its children would inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_play(tmp_path, name, *flags, env=None):
    """play.py in a session of its own (env: its environment, a display's say), output to NAME.out and NAME.err (a
    pipe could be held open by a leftover engine)."""
    out, err = open(tmp_path / f"{name}.out", "w"), open(tmp_path / f"{name}.err", "w")
    proc = subprocess.Popen([sys.executable, os.path.join(REPO_ROOT, "play.py"), *map(str, flags)], cwd=tmp_path,
                            env=env, stdout=out, stderr=err, start_new_session=True, preexec_fn=hear_ctrl_c)
    proc.out_path, proc.err_path = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
    return proc


def finish_play(proc, seconds: float):
    """play.py's exit code and output; its whole session killed if it has not ended within `seconds`."""
    try:
        proc.wait(seconds)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    return proc.returncode, proc.out_path.read_text(), proc.err_path.read_text()
