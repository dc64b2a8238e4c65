"""--distributed ray (doom_a3c/modes/ray/): the parameter server and the pushing worker as
plain classes (no Ray), the Ray session's set-up and its one-line errors, and real local Ray runs of train.py
on basic.wad: 2 worker processes, the checkpoint's counters, progress.csv, config.json, play.py, resumes
ray -> threaded -> ray, and a worker process killed with SIGKILL mid-run (replaced; nothing the run counted
is missing)."""
import glob
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.config import TrainConfig
from doom_a3c.envs.batch import EnvBatch
from doom_a3c.envs.interface import EnvSpec
from doom_a3c.errors import ConfigError
from doom_a3c.modes.a3c import a3c_workers
from doom_a3c.modes.build import build_global
from doom_a3c.modes.ray import worker as ray_worker
from doom_a3c.modes.ray.parameter_server import ParameterServer
from doom_a3c.modes.ray.session import SESSION_SOCKET_SUFFIX, SOCKET_PATH_LIMIT, check_reachable, local_temp_dir
from doom_a3c.modes.ray.worker import PushingWorker
from doom_a3c.runtime.checkpoint import read_checkpoint

from support import REPO_ROOT, BrightSideEnv, fake_config, fake_thread_run, read_rows, run

VECTOR_SHAPE = (4,)


def small_config(model_dir, num_actions=2, **overrides):
    """A resolved config for a vector env with `num_actions` actions, saving into `model_dir`."""
    values = dict(scenario="fake", env_kind="vector", scenario_path="fake-v0",
                  actions=[[f"ACTION_{i}"] for i in range(num_actions)], frame_skip=1, reward_scale=1.0,
                  clip_rewards=False, lstm_size=8, hidden_size=8, learning_rate=1e-2, model_dir=str(model_dir))
    return TrainConfig(**{**values, **overrides})


def vector_spec(num_actions=2):
    return EnvSpec(num_actions, VECTOR_SHAPE, 0.02, [f"ACTION_{i}" for i in range(num_actions)])


def make_server(model_dir, config=None, num_actions=2, resume_prefix=None):
    config = config or small_config(model_dir, num_actions)
    server = ParameterServer(config.to_json(), configure_threads=False)
    assert server.build(vector_spec(num_actions), resume_prefix) is None
    return server


def copy_weights(source, target):
    """The LSTM's recurrent kernel is initialised unseeded: make two networks start equal."""
    for a, b in zip(source.trainable_variables, target.trainable_variables):
        b.assign(a)


def ones_like(server, value=1.0):
    return [np.full(w.shape, value, np.float32) for w in server.weights()]


# ---- the parameter server, without Ray ---------------------------------------------------------------------
def test_parameter_server_applies_a_gradient_and_counts(tmp_path):
    server = make_server(tmp_path)
    before = server.weights()
    reply = server.apply(0, ones_like(server), 120, [3.0, -1.0])
    assert reply.applied and reply.env_steps == 120 and reply.updates == 1 and reply.skipped_updates == 0
    assert all(not np.allclose(a, b) for a, b in zip(before, reply.weights))  # every variable moved
    for after, old in zip(reply.weights, before):
        np.testing.assert_allclose(after, old - 1e-2, atol=1e-4)  # Adam's first step: lr * sign(gradient)
    server.apply(1, ones_like(server), 60, [5.0])
    status = server.status()
    assert (status["env_steps"], status["updates"], status["episodes"]) == (180, 2, 3)
    assert status["recent_returns"] == [3.0, -1.0, 5.0]  # the queue of returns


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), None])
def test_parameter_server_never_applies_a_non_finite_gradient(tmp_path, bad):
    server = make_server(tmp_path)
    before = server.weights()
    grads = None
    if bad is not None:
        grads = ones_like(server)
        grads[1][0] = bad
    reply = server.apply(0, grads, 60)
    assert not reply.applied and reply.updates == 1 and reply.skipped_updates == 1 and reply.env_steps == 60
    for after, old in zip(server.weights(), before):
        np.testing.assert_array_equal(after, old)
    assert server.apply(0, ones_like(server), 60).applied  # the next good gradient still goes through


def test_parameter_server_clips_what_it_applies(tmp_path):
    """A gradient of global norm 1000 is applied as one of norm --clip-norm: the same weights as the same
    gradient clipped by hand (RMSProp's first step, lr * g / sqrt(0.99 + 0.01 g^2 + eps), depends on its size)."""
    huge = make_server(tmp_path, small_config(tmp_path / "a", optimizer="rmsprop", clip_norm=40.0))
    clipped = make_server(tmp_path, small_config(tmp_path / "b", optimizer="rmsprop", clip_norm=40.0))
    copy_weights(huge.parts.learner.net, clipped.parts.learner.net)
    grads = ones_like(huge)
    norm = np.sqrt(sum(np.square(g).sum() for g in grads))
    huge.apply(0, [g * (1000.0 / norm) for g in grads], 1)
    clipped.apply(0, [g * (40.0 / norm) for g in grads], 1)
    for a, b in zip(huge.weights(), clipped.weights()):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_parameter_server_checkpoint_is_the_threaded_format(tmp_path):
    """What the PS saves restores into the global parts a threaded run builds (build_thread_run calls
    build_global), and a fresh PS resumes it."""
    config = small_config(tmp_path / "ps")
    server = make_server(tmp_path, config)
    for _ in range(3):
        server.apply(0, ones_like(server, 0.5), 100, [1.0])
    prefix = server.save(episodes=3, wall_seconds=12.5)
    saved = read_checkpoint(prefix)
    assert saved.num_actions == 2 and saved.config == json.loads(config.to_json())
    assert saved.counters == {"env_steps": 300, "episodes": 3, "updates": 3, "wall_seconds": 12.5}
    assert os.path.exists(tmp_path / "ps" / "last.ckpt.index") and os.path.exists(tmp_path / "ps" / "config.json")
    # the threaded modes' global network, optimizer and counters
    threaded = build_global(small_config(tmp_path / "threaded"), vector_spec(), resume_prefix=prefix)
    for a, b in zip(threaded.learner.weights(), server.weights()):
        np.testing.assert_array_equal(a, b)
    assert (threaded.learner.counters.env_steps, threaded.learner.counters.updates) == (300, 3)
    # and a fresh PS resumes it: weights, optimizer slots and counters
    again = make_server(tmp_path, small_config(tmp_path / "again"), resume_prefix=prefix)
    assert (again.counters.env_steps, again.counters.updates, again.episodes) == (300, 3, 3)
    np.testing.assert_array_equal(again.apply(0, ones_like(again), 1).weights[0],
                                  server.apply(0, ones_like(server), 1).weights[0])
    # a network of another shape cannot take it, and the games must have the config's action count
    other = ParameterServer(small_config(tmp_path / "other", num_actions=5).to_json(), configure_threads=False)
    assert "cannot restore" in other.build(vector_spec(5), prefix)
    mismatched = ParameterServer(config.to_json(), configure_threads=False)
    assert "have 5 actions but the config lists 2" in mismatched.build(vector_spec(5))


# ---- the pushing worker is the threaded worker ----------------------------------------------------------------
@pytest.mark.slow
def test_pushing_worker_makes_the_threaded_workers_update(tmp_path, monkeypatch):
    """Same weights, same games, same seeds: a PushingWorker through the parameter server and a threaded
    A3C worker on an in-process global network produce the same new global weights, update after update."""
    config = fake_config(tmp_path, learning_rate=7e-4, rollout=10, env_threads=1, seed=5)
    parts = fake_thread_run(config, [[BrightSideEnv(s) for s in range(3)]])
    threaded = a3c_workers(parts)[0]
    server = ParameterServer(config.to_json(), configure_threads=False)
    assert server.build(parts.spec) is None
    monkeypatch.setattr(ray_worker, "worker_games",
                        lambda config, index, offset=0: EnvBatch([BrightSideEnv(s) for s in range(3)], threads=1))
    pushing = PushingWorker(0, config, server.apply)
    copy_weights(parts.learner.net, server.parts.learner.net)
    threaded.sync()
    pushing.accept(server.pull())
    for _ in range(3):
        threaded.learn(threaded.runner.collect(config.rollout))
        episodes, metrics = pushing.play_and_learn()
        assert metrics.applied
        for a, b in zip(parts.learner.weights(), server.weights()):
            np.testing.assert_allclose(a, b, atol=2e-6)
    counters = parts.run.counters
    assert server.counters.env_steps == counters.env_steps == 90 and server.counters.updates == counters.updates == 3
    assert server.episodes == 9 and len(episodes) == 3  # episodes of 10 steps: 3 games x 3 rollouts of 10


# ---- the Ray session's set-up ------------------------------------------------------------------------------------
def test_local_ray_files_go_under_the_run_folder_unless_its_path_is_too_long(tmp_path):
    folder, fell_back = local_temp_dir("/tmp/run")
    assert folder == "/tmp/run/ray" and not fell_back
    long_dir = "/tmp/" + "x" * 60
    folder, fell_back = local_temp_dir(long_dir, pid=4242)
    assert folder == "/tmp/doom_a3c_ray_4242" and fell_back
    for model_dir in ("/tmp/run", long_dir, str(tmp_path / "model")):
        assert len(local_temp_dir(model_dir)[0]) + SESSION_SOCKET_SUFFIX < SOCKET_PATH_LIMIT


def test_an_unreachable_ray_address_is_a_config_error_within_seconds():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.time()
    with pytest.raises(ConfigError, match="cannot reach the Ray cluster"):
        check_reachable(f"127.0.0.1:{port}")
    assert time.time() - started < 10
    with pytest.raises(ConfigError, match="HOST:PORT"):
        check_reachable("no-port-here")


@pytest.mark.slow
def test_threaded_training_never_imports_ray():
    code = ("import sys, doom_a3c, doom_a3c.run.training, doom_a3c.run.coordinator, doom_a3c.modes.threads, "
            "doom_a3c.modes.build, doom_a3c.modes.a3c, doom_a3c.modes.ga3c; "
            "assert 'ray' not in sys.modules, 'ray imported'")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("case", ["no-ray", "bad-address", "ga3c"])
def test_distributed_user_errors_are_one_line(tmp_path, case):
    flags = ["--scenario", "basic.wad", "--distributed", "ray", "--max-steps", "100",
             "--model-dir", str(tmp_path / "m"), "--frames-dir", str(tmp_path / "f")]
    if case == "bad-address":
        flags += ["--ray-address", "127.0.0.1:1"]
    if case == "ga3c":
        flags += ["--trainer", "ga3c"]
    # Without Ray installed: None in sys.modules makes `import ray` fail as a missing module does.
    block = "sys.modules['ray'] = None; " if case == "no-ray" else ""
    code = (f"import runpy, sys; {block}sys.argv = ['train.py'] + {flags!r}; "
            f"runpy.run_path('train.py', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=180)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-2000:]
    expected = {"no-ray": "needs Ray", "bad-address": "cannot reach the Ray cluster", "ga3c": "--trainer ga3c"}
    assert expected[case] in lines[0]


# ---- real local Ray runs ----------------------------------------------------------------------------------------
def checkpoint_counters(model_dir):
    return read_checkpoint(str(model_dir / "last.ckpt")).counters


def check_consistent(model_dir, rows):
    """Nothing the run counted is missing: the CSV has every episode the checkpoint counts, numbered 1..n,
    and every update counted its rollout's steps."""
    counters = checkpoint_counters(model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    steps_per_update = config["rollout"] * config["envs_per_worker"]  # every update, threaded or Ray
    assert [r["episode"] for r in rows] == list(range(1, len(rows) + 1))
    assert counters["episodes"] == len(rows)
    assert counters["env_steps"] == counters["updates"] * steps_per_update, counters
    assert all(a["env_steps"] <= b["env_steps"] for a, b in zip(rows, rows[1:]))
    return counters


def tensorboard_tags(model_dir):
    tags = set()
    for path in glob.glob(str(model_dir / "tensorboard" / "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            tags.update(value.tag for value in event.summary.value)
    return tags


class LiveRun:
    """train.py in the background, its stdout read line by line as it comes."""

    def __init__(self, *args):
        env = dict(os.environ)
        env.pop("TF_CPP_MIN_LOG_LEVEL", None)
        self.proc = subprocess.Popen([sys.executable, os.path.join(REPO_ROOT, "train.py"), *map(str, args)],
                                     cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.lines: list[str] = []
        self.stderr = ""
        self._readers = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def _read_stderr(self):
        self.stderr = self.proc.stderr.read()

    def wait_for(self, predicate, timeout=240, after_line=0):
        """The first truthy predicate(line) among the lines from `after_line` on."""
        deadline = time.time() + timeout
        while time.time() < deadline and self.proc.poll() is None:
            for line in self.lines[after_line:]:
                found = predicate(line)
                if found:
                    return found
            time.sleep(0.2)
        raise AssertionError(f"not seen in time; stdout so far:\n{''.join(self.lines)}\nstderr:\n{self.stderr}")

    def finish(self, timeout=300):
        self.proc.wait(timeout)
        for reader in self._readers:
            reader.join(10)
        return self.proc.returncode, "".join(self.lines), self.stderr


def progress_steps(line):
    """The step count of a progress line ("[ 0.3 min] steps 1,680 ..."), or None."""
    if "] steps" not in line:
        return None
    return int(line.split("] steps")[1].split()[0].replace(",", ""))


@pytest.mark.slow
def test_ray_run_survives_a_killed_worker_plays_and_resumes_across_modes(tmp_path):
    """One run folder through three runs: Ray with 2 worker processes, worker 1's process killed (SIGKILL)
    mid-run and the run stopped by SIGTERM once its replacement trains; play.py; --resume threaded; --resume
    on Ray again."""
    model_dir, frames_dir = tmp_path / "model", tmp_path / "frames"
    common = ["--scenario", "basic.wad", "--workers", 2, "--envs-per-worker", 2, "--log-every-seconds", 1,
              "--model-dir", model_dir, "--frames-dir", frames_dir]
    # 1. a fresh Ray run; worker 1's process is killed once it has trained a while
    live = LiveRun(*common, "--distributed", "ray", "--max-steps", 100_000, "--gif-every", 3)
    victim = live.wait_for(lambda line: line.startswith("ray: worker 1 started (pid ")
                           and int(line.split("(pid ")[1].split()[0]))
    live.wait_for(lambda line: (progress_steps(line) or 0) >= 300)
    os.kill(victim, signal.SIGKILL)
    # The next progress line flushes the CSV: every episode the old worker 1 reported is in it by then, and
    # its replacement (a new process importing TensorFlow) cannot have finished a rollout yet.
    live.wait_for(progress_steps, after_line=len(live.lines))
    episodes_at_kill = len(read_rows(model_dir / "progress.csv"))
    restarted = live.wait_for(lambda line: line.startswith("ray: worker 1 restarted (pid ") and line)
    assert f"(pid {victim} " not in restarted
    live.wait_for(progress_steps, after_line=len(live.lines))
    live.proc.send_signal(signal.SIGTERM)
    code, stdout, stderr = live.finish()
    assert code == 0, stderr[-3000:]
    assert "stopped: stopped by SIGTERM" in stdout and "distributed on a local Ray instance" in stdout
    assert stdout.count("ray: worker ") == 3 and "ray: parameter server started" in stdout
    died = [line for line in stderr.splitlines() if f"worker 1 (pid {victim}) died" in line]
    assert len(died) == 1 and "replaced by a new actor" in died[0], stderr[-3000:]
    assert not [line for line in stderr.splitlines() if line.startswith("error")], stderr[-3000:]
    # pytest's tmp_path is too long for Ray's socket paths: a short folder in /tmp, removed at the end
    note = next(line for line in stdout.splitlines() if line.startswith("note: --model-dir's path is too long"))
    assert not os.path.exists(note.split(" are in ")[1].split()[0])
    config = json.loads((model_dir / "config.json").read_text())
    assert config["distributed"] == "ray" and config["workers"] == 2 and config["ray_address"] == ""
    rows = read_rows(model_dir / "progress.csv")
    counters = check_consistent(model_dir, rows)
    assert {r["worker"] for r in rows} == {0.0, 1.0}
    # the replacement played: worker 1 reports episodes after the kill
    assert [r for r in rows if r["worker"] == 1.0 and r["episode"] > episodes_at_kill]
    assert list(frames_dir.glob("episode_*.gif")) and (model_dir / "learning_curve.png").is_file()
    assert {"Perf/Reward", "Perf/Steps per second", "Losses/Value Loss", "Perf/Learning Rate"} <= tensorboard_tags(model_dir)

    played = run("play.py", "--model", model_dir / "last.ckpt", "--out", tmp_path / "play", "--episodes", 1)
    assert played.returncode == 0, played.stderr[-3000:]
    assert len(json.loads((tmp_path / "play" / "results.json").read_text())["episodes"]) == 1

    # 2. the Ray run resumed by the threaded trainer
    target = counters["env_steps"] + 1000
    second = run("train.py", "--resume", "--distributed", "none", "--model-dir", model_dir, "--frames-dir", frames_dir,
                 "--max-steps", target)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "(a3c)" in second.stdout and "ray:" not in second.stdout
    assert json.loads((model_dir / "config.json").read_text())["distributed"] == "none"
    after_threaded = read_rows(model_dir / "progress.csv")
    assert after_threaded[: len(rows)] == rows and len(after_threaded) > len(rows)
    threaded_counters = check_consistent(model_dir, after_threaded)
    assert threaded_counters["env_steps"] >= target and threaded_counters["updates"] > counters["updates"]

    # 3. the threaded run resumed on Ray
    target = threaded_counters["env_steps"] + 1000
    third = run("train.py", "--resume", "--distributed", "ray", "--model-dir", model_dir, "--frames-dir", frames_dir,
                "--max-steps", target)
    assert third.returncode == 0, third.stderr[-3000:]
    assert f"stopped: reached --max-steps {target}" in third.stdout and "ray: parameter server" in third.stdout
    final_rows = read_rows(model_dir / "progress.csv")
    assert final_rows[: len(after_threaded)] == after_threaded and len(final_rows) > len(after_threaded)
    final = check_consistent(model_dir, final_rows)
    assert final["env_steps"] >= target and final["updates"] > threaded_counters["updates"]
    assert json.loads((model_dir / "config.json").read_text())["distributed"] == "ray"


def test_the_cluster_is_shipped_the_checkout_that_holds_the_package():
    """Ray's working_dir is the folder above doom_a3c/ (three folders above modes/ray/session.py), and what it
    keeps of that folder is the package: a wrong depth would ship a folder without it, and workers elsewhere would
    fail to import doom_a3c."""
    from doom_a3c.modes.ray.session import REPO_ROOT as SHIPPED_ROOT, SHIPPED_TO_CLUSTER

    assert os.path.samefile(SHIPPED_ROOT, REPO_ROOT)
    assert SHIPPED_TO_CLUSTER == ("doom_a3c",)
    assert os.path.isfile(os.path.join(SHIPPED_ROOT, "doom_a3c", "modes", "ray", "session.py"))
