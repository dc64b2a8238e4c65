"""--precision and --jit-compile: which precision auto picks on which CPU and why; bfloat16 asked for on
a CPU without it is one line; the bfloat16 network agrees with the float32 one on the same weights; a
bfloat16-trained checkpoint plays, resumes and exports in float32; the three modes learn alike in bfloat16; XLA
computes what the plain graph does.

The CPU is faked through doom_a3c/algo/model/precision.py's test hook, $DOOM_A3C_CPUINFO (a file read instead of
/proc/cpuinfo), so that these tests run alike on a CPU with or without bfloat16."""
import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo.model import precision
from doom_a3c.algo.model.actor_critic import ActorCritic
from doom_a3c.algo.model.precision import CPUINFO_ENV, choose_precision, cpu_flags
from doom_a3c.cli import play_main, train_main
from doom_a3c.config import TrainConfig
from doom_a3c.errors import ConfigError
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.saved_config import FIELDS_BEFORE_ATARI_RECIPE, resolve_resumed_run, upgrade_saved_config

import support
from support import REPO_ROOT, first_observation_and_policy

# Two processors' worth of /proc/cpuinfo, shortened: with AVX-512 BF16 (this machine's kind) and without.
CPUINFO_WITH = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni\n\n" \
               "processor\t: 1\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni\n"
CPUINFO_WITHOUT = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_vnni\n"
FAKES = "tests.fixtures.fake_image_envs"


@pytest.fixture
def fake_cpu(tmp_path, monkeypatch):
    """fake_cpu(has_bfloat16): this process's CPU, as doom_a3c/algo/model/precision.py reads it, with or without
    bfloat16."""
    def fake(has_bfloat16: bool) -> str:
        path = tmp_path / ("cpuinfo_with" if has_bfloat16 else "cpuinfo_without")
        path.write_text(CPUINFO_WITH if has_bfloat16 else CPUINFO_WITHOUT)
        monkeypatch.setenv(CPUINFO_ENV, str(path))
        return str(path)
    return fake


# ---- which precision runs, and why -----------------------------------------------------------------------------
def test_the_cpu_flags_are_read_from_cpuinfo():
    assert {"avx512_bf16", "avx2"} <= cpu_flags(lambda: CPUINFO_WITH)
    assert "avx512_bf16" not in cpu_flags(lambda: CPUINFO_WITHOUT)
    assert "amx_bf16" in cpu_flags(lambda: "Features\t: fp asimd amx_bf16\n")  # Arm spells the line Features
    assert cpu_flags(lambda: "") == set()  # no /proc/cpuinfo (macOS): no flags, float32


def test_auto_runs_float32_while_bfloat16_is_not_measured_faster(fake_cpu, monkeypatch):
    monkeypatch.setattr(precision, "AUTO_PICKS_BFLOAT16", False)
    fake_cpu(True)
    choice = choose_precision("auto")
    assert choice == ("float32", "auto: this CPU has avx512_bf16, but bfloat16 is not yet measured faster here")
    assert choice.line() == "precision: float32 (auto: this CPU has avx512_bf16, but bfloat16 is not yet measured " \
                            "faster here)"


def test_auto_picks_bfloat16_with_the_switch_on_only_on_a_cpu_with_it(fake_cpu, monkeypatch):
    monkeypatch.setattr(precision, "AUTO_PICKS_BFLOAT16", True)
    fake_cpu(True)
    assert choose_precision("auto") == ("bfloat16", "auto: this CPU has avx512_bf16")
    fake_cpu(False)
    assert choose_precision("auto") == ("float32", "auto: this CPU has neither avx512_bf16 nor amx_bf16")
    assert choose_precision("auto", flags={"amx_bf16", "avx512_bf16"}).reason == \
        "auto: this CPU has avx512_bf16 and amx_bf16"


def test_asked_for_bfloat16_runs_on_a_cpu_with_it_and_is_a_config_error_without(fake_cpu):
    fake_cpu(True)
    assert choose_precision("bfloat16").line() == "precision: bfloat16 (asked; this CPU has avx512_bf16)"
    assert choose_precision("float32").line() == "precision: float32 (asked)"
    fake_cpu(False)
    with pytest.raises(ConfigError, match="--precision bfloat16: this CPU has neither avx512_bf16 nor amx_bf16"):
        choose_precision("bfloat16")
    with pytest.raises(ConfigError, match="--precision must be one of auto, float32, bfloat16"):
        TrainConfig(precision="float16").validate()


@pytest.mark.slow
def test_bfloat16_on_a_cpu_without_it_is_one_line_from_train_py(tmp_path):
    """As a user sees it: train.py in a subprocess, on a fake CPU without bfloat16 (before TensorFlow's import)."""
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(CPUINFO_WITHOUT)
    env = {**os.environ, CPUINFO_ENV: str(cpuinfo)}
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "train.py"), "--scenario", "CartPole-v1",
                           "--precision", "bfloat16", "--model-dir", str(tmp_path / "m"), "--frames-dir",
                           str(tmp_path / "f")], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith("error: --precision bfloat16: this CPU has neither avx512_bf16 nor amx_bf16")
    assert not (tmp_path / "m").exists()


def test_a_run_saves_the_precision_it_ran_and_a_resume_keeps_or_changes_it(fake_cpu, capsys):
    fake_cpu(True)
    assert resolve_new_run({"scenario": "CartPole-v1"}).precision == "float32"  # never "auto"
    trained = resolve_new_run({"scenario": "CartPole-v1", "precision": "bfloat16"})
    assert trained.precision == "bfloat16" and TrainConfig.from_dict(json.loads(trained.to_json())) == trained
    assert "precision: bfloat16 (asked; this CPU has avx512_bf16)" in capsys.readouterr().out
    assert resolve_resumed_run(trained, {}, "x").precision == "bfloat16"
    assert resolve_resumed_run(trained, {"precision": "float32"}, "x").precision == "float32"
    fake_cpu(False)  # resumed on another machine: the weights are float32, so it goes on in float32
    assert resolve_resumed_run(trained, {}, "x").precision == "float32"
    assert "precision: float32 (the run trained in bfloat16, but this CPU has neither avx512_bf16 nor amx_bf16)" \
        in capsys.readouterr().out
    with pytest.raises(ConfigError, match="--precision bfloat16"):
        resolve_resumed_run(trained, {"precision": "bfloat16"}, "x")


def test_a_config_saved_before_precision_existed_ran_float32_without_xla():
    saved = resolve_new_run({"scenario": "CartPole-v1", "precision": "float32", "jit_compile": True}).to_dict()
    del saved["precision"], saved["jit_compile"]
    config = upgrade_saved_config(saved, "x")
    assert (config.precision, config.jit_compile) == ("float32", False)
    assert FIELDS_BEFORE_ATARI_RECIPE["precision"] == "float32"


# ---- the network ---------------------------------------------------------------------------------------------
A, L, FRAME, VARIABLES = 5, 32, (42, 42, 1), 2
# bfloat16 keeps 8 significant bits: each rounding of an input or a weight is off by up to 2^-9 (0.2%) of it. The
# float32 products of rounded numbers, through two conv layers, the dense layer and 4 LSTM steps, land within
# about 1% of the outputs' scale (measured: 0.7-0.8%); 3% leaves room for other inputs and stays far below what a
# wrong cast or weight would give (tens of percent).
TOLERANCE = 3e-2


def _network(precision_name, torso="conv"):
    shape, variables = (FRAME, VARIABLES) if torso == "conv" else ((6,), 0)
    net = ActorCritic(A, L, seed=0, name=precision_name, torso=torso, hidden_size=64, num_game_variables=variables,
                      normalize_variables=bool(variables), precision=precision_name)
    return net.build_variables(shape)


def _inputs(torso, steps, batch, seed=3):
    rng = np.random.default_rng(seed)
    if torso == "dense":
        return tf.constant(rng.normal(size=(steps, batch, 6)).astype(np.float32))
    frames = tf.constant(rng.integers(0, 256, (steps, batch, *FRAME), dtype=np.uint8))
    return {"frame": frames, "variables": tf.constant(rng.normal(100.0, 30.0, (steps, batch, VARIABLES)).astype(np.float32))}


def _close(bfloat16, float32):
    scale = np.abs(float32).max()
    np.testing.assert_allclose(bfloat16, float32, rtol=0, atol=TOLERANCE * scale)
    assert not np.array_equal(bfloat16, float32)  # bfloat16 did run


@pytest.mark.parametrize("torso", ["conv", "dense"])
def test_bfloat16_and_float32_agree_on_the_same_weights(torso):
    """The same float32 weights in both; the policy head scaled up (its 0.01 columns make the logits ~1e-3)."""
    float32, bfloat16 = _network("float32", torso), _network("bfloat16", torso)
    float32.policy_head.kernel.assign(np.random.default_rng(1).normal(size=(L, A)).astype(np.float32))
    if float32.variable_moments is not None:  # 10 samples of mean 100 and deviation 30, as _inputs draws them
        float32.variable_moments.moments.assign([10.0, 1000.0, 1000.0, 109000.0, 109000.0])
    for target, source in zip(bfloat16.trainable_variables, float32.trainable_variables):
        assert target.dtype == source.dtype == tf.float32 and target.path == source.path
        target.assign(source)
    first_layer = bfloat16.conv1 if torso == "conv" else bfloat16.fc1
    assert first_layer.compute_dtype == "bfloat16" and first_layer.variable_dtype == "float32"
    assert bfloat16.lstm.compute_dtype == "bfloat16" and bfloat16.policy_head.compute_dtype == "float32"

    observations, starts = _inputs(torso, 4, 3), tf.constant([[1.0] * 3] + [[0.0, 1.0, 0.0]] * 3)
    expected = float32.unroll(observations, float32.initial_state(3), starts)
    out = bfloat16.unroll(observations, bfloat16.initial_state(3), starts)
    assert {out.logits.dtype, out.values.dtype, out.state.h.dtype, out.state.c.dtype} == {tf.float32}
    _close(out.logits.numpy(), expected.logits.numpy())
    _close(out.values.numpy(), expected.values.numpy())
    _close(out.state.c.numpy(), expected.state.c.numpy())

    # Acting steps through the same pass, one step at a time: exactly the unroll.
    state, values = bfloat16.initial_state(3), []
    for t in range(4):
        step = bfloat16.step(tf.nest.map_structure(lambda x, t=t: x[t], observations), state, starts[t])
        state = step.state
        values.append(step.values.numpy())
    np.testing.assert_array_equal(np.stack(values), out.values.numpy())
    np.testing.assert_array_equal(state.c.numpy(), out.state.c.numpy())


def test_the_float32_graph_has_no_bfloat16_and_the_bfloat16_gradient_is_float32():
    """The gradient of each float32 weight comes back float32 and close to float32's: within 10% in norm, as a
    bias's gradient sums many rounded terms that partly cancel (measured: 0.2-3.4%, the most for conv1's bias)."""
    float32, bfloat16 = _network("float32"), _network("bfloat16")
    for target, source in zip(bfloat16.trainable_variables, float32.trainable_variables):
        target.assign(source)
    observations, starts = _inputs("conv", 3, 2), tf.constant([[1.0, 1.0], [0.0, 1.0], [0.0, 0.0]])

    def gradients(net):
        with tf.GradientTape() as tape:
            out = net.unroll(observations, net.initial_state(2), starts)
            loss = tf.reduce_sum(tf.square(out.values)) - tf.reduce_sum(tf.nn.log_softmax(out.logits)[..., 0])
        return tape.gradient(loss, net.learned_variables)

    graph = tf.function(lambda: gradients(float32)).get_concrete_function().graph
    assert not [op.type for op in graph.get_operations() if any(t.dtype == tf.bfloat16 for t in op.outputs)]
    graph = tf.function(lambda: gradients(bfloat16)).get_concrete_function().graph
    assert {"Conv2D", "MatMul", "Conv2DBackpropFilter"} <= {op.type for op in graph.get_operations()
                                                            if any(t.dtype == tf.bfloat16 for t in op.outputs)}
    for low, expected in zip(gradients(bfloat16), gradients(float32)):
        assert low.dtype == tf.float32 and np.all(np.isfinite(low))
        assert np.linalg.norm(low - expected) <= 0.1 * np.linalg.norm(expected)


@pytest.mark.slow
def test_xla_computes_what_the_plain_graph_does(tmp_path):
    """--jit-compile: the learning step's gradient and the acting step, float32, on the same weights."""
    from doom_a3c.algo.learner import GradientStep
    from doom_a3c.algo.local_copy import LocalCopy
    from doom_a3c.modes.build import build_network

    plain = support.small_config(tmp_path, precision="float32")
    compiled = dataclasses.replace(plain, jit_compile=True)
    nets = [build_network(config, support.spec(), name) for config, name in ((plain, "plain"), (compiled, "xla"))]
    for target, source in zip(nets[1].trainable_variables, nets[0].trainable_variables):
        target.assign(source)
    rollout = support.fixed_rollouts(1, plain.lstm_size)[0]
    expected, out = GradientStep(nets[0], plain)(rollout), GradientStep(nets[1], compiled)(rollout)
    for a, b in zip(expected.grads, out.grads):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)
    acting = [LocalCopy(net, config, 3).act(rollout.observations[0], np.ones(3, np.float32))
              for net, config in zip(nets, (plain, compiled))]
    np.testing.assert_allclose(acting[1][0], acting[0][0], atol=1e-5)
    np.testing.assert_allclose(acting[1][1], acting[0][1], atol=1e-5)


# ---- a bfloat16 run, end to end ------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_bfloat16_checkpoint_plays_exports_and_resumes_in_float32(tmp_path, fake_cpu, capsys):
    """FakeDictImage-v0 (an image and game variables), 300 steps in bfloat16; play.py and --export run float32."""
    from doom_a3c.run.agent import load_agent
    from doom_a3c.runtime.checkpoint import read_checkpoint

    fake_cpu(True)
    model = tmp_path / "model"
    flags = ["--scenario", "FakeDictImage-v0", "--env-module", FAKES, "--model-dir", model, "--frames-dir",
             tmp_path / "frames", "--workers", 1, "--envs-per-worker", 2, "--rollout", 10, "--frame-size", 42,
             "--lstm-size", 16, "--hidden-size", 32, "--env-processes", 0, "--gif-every", 0, "--no-evaluate",
             "--precision", "bfloat16"]
    assert train_main([str(f) for f in [*flags, "--max-steps", 300]]) == 0
    assert "precision: bfloat16 (asked; this CPU has avx512_bf16)" in capsys.readouterr().out
    assert json.loads((model / "config.json").read_text())["precision"] == "bfloat16"

    agent = load_agent(str(model / "last.ckpt"))
    assert agent.net.precision == "float32" and agent.config.precision == "bfloat16"
    assert play_main(["--model", str(model), "--out", str(tmp_path / "play"), "--episodes", "1"]) == 0
    assert json.loads((tmp_path / "play" / "results.json").read_text())["episodes"][0]["length"] == 15
    assert play_main(["--model", str(model), "--export", str(tmp_path / "export")]) == 0
    policy = json.loads((tmp_path / "export" / "policy.json").read_text())
    assert policy["precision"] == "float32" and policy["config"]["precision"] == "bfloat16"
    observation, expected = first_observation_and_policy(agent)
    step = tf.saved_model.load(str(tmp_path / "export" / "saved_model")).signatures["serving_default"]
    zeros = np.zeros([1, 16], np.float32)
    out = step(observation=observation["frame"][None], game_variables=observation["variables"][None],
               state_h=zeros, state_c=zeros, episode_start=np.ones(1, np.float32))
    np.testing.assert_allclose(out["probabilities"].numpy()[0], expected, atol=1e-5)

    # Resumed on a CPU without bfloat16, the run goes on in float32 from the same checkpoint.
    fake_cpu(False)
    assert train_main([str(f) for f in [*flags[:-2], "--resume", "--max-steps", 400]]) == 0
    assert "precision: float32 (the run trained in bfloat16" in capsys.readouterr().out
    resumed = json.loads((model / "config.json").read_text())
    assert resumed["precision"] == "float32" and read_checkpoint(str(model / "last.ckpt")).counters["env_steps"] >= 400
