"""The Python API as a user meets it: the README's example (train, load_agent, a five-line loop) run from a fresh
interpreter, and the exported SavedModel, loaded where doom_a3c is never imported, against the checkpoint."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from support import REPO_ROOT

pytestmark = pytest.mark.slow
TINY_BUDGET = "max_steps=300, workers=1, envs_per_worker=2, gif_every=0"


def readme_python_example() -> str:
    with open(os.path.join(REPO_ROOT, "README.md")) as handle:
        readme = handle.read()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    example = next(b for b in blocks if "load_agent" in b)
    assert "max_minutes=2" in example
    return example.replace("max_minutes=2", TINY_BUDGET)


def run_python(code: str, cwd, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=REPO_ROOT)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory):
    """The README's example with a tiny budget, in a fresh interpreter in an empty folder."""
    folder = tmp_path_factory.mktemp("readme_example")
    proc = run_python(readme_python_example(), folder)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return folder, proc


def test_readme_example_trains_loads_and_plays(readme_run):
    folder, proc = readme_run
    lines = proc.stdout.strip().splitlines()
    steps, episodes, mean, checkpoint = lines[-2].split()
    assert int(steps) >= 300 and int(episodes) >= 1 and -400 <= float(mean) <= 100
    assert checkpoint == "models/last.ckpt" and (folder / "models" / "last.ckpt.index").is_file()
    score = float(lines[-1].split()[1])
    assert -400 <= score <= 100  # basic: -1 per tic (300 tics at most), +100 for the kill, -5 per missed shot


def test_agent_resets_its_state_and_greedy_is_deterministic(readme_run):
    from doom_a3c import load_agent

    folder, _ = readme_run
    agent = load_agent(str(folder / "models" / "last.ckpt"), greedy=True, seed=3)
    env = agent.make_env(seed=7)
    try:
        observations = [env.reset()[0]] + [env.step(a % 3)[0] for a in range(5)]
    finally:
        env.close()
    first = [agent.policy(o).probabilities for o in observations]
    agent.reset()
    again = [agent.policy(o).probabilities for o in observations]
    np.testing.assert_allclose(again, first, atol=1e-6)  # reset() forgets the LSTM state
    agent.reset()
    assert [agent.act(o) for o in observations] == [int(np.argmax(p)) for p in first]
    assert all(abs(p.sum() - 1) < 1e-6 and p.shape == (3,) for p in first)


EXPORTED_STEP = textwrap.dedent("""
    import sys
    import numpy as np
    import tensorflow as tf
    data = np.load(sys.argv[1])
    policy = tf.saved_model.load(sys.argv[2])
    step = policy.signatures["serving_default"]
    h = c = np.zeros([1, int(data["state_size"])], np.float32)
    probabilities = []
    for observation, start in zip(data["observations"], data["starts"]):
        out = step(observation=observation[None], state_h=h, state_c=c, episode_start=np.array([start], np.float32))
        h, c = out["state_h"], out["state_c"]
        probabilities.append(out["probabilities"].numpy()[0])
    lite = []
    if len(sys.argv) > 4:
        interpreter = tf.lite.Interpreter(model_path=sys.argv[4])
        runner = interpreter.get_signature_runner()
        h = c = np.zeros([1, int(data["state_size"])], np.float32)
        for observation, start in zip(data["observations"], data["starts"]):
            out = runner(observation=observation[None], state_h=h, state_c=c,
                         episode_start=np.array([start], np.float32))
            h, c = out["state_h"], out["state_c"]
            lite.append(out["probabilities"][0])
    assert not any(name.startswith("doom_a3c") for name in sys.modules), "doom_a3c was imported"
    np.savez(sys.argv[3], probabilities=np.array(probabilities), lite=np.array(lite))
""")


def test_exported_saved_model_matches_the_checkpoint_without_doom_a3c(readme_run, tmp_path):
    """50 steps with an episode start at step 20 (state reset): the same probabilities to 1e-5."""
    from doom_a3c import export_policy, load_agent

    folder, _ = readme_run
    agent = load_agent(str(folder / "models" / "last.ckpt"), seed=1)
    env = agent.make_env(seed=11)
    observations, starts = [], []
    try:
        observation, starting = env.reset()[0], True
        for t in range(50):
            if t == 20:  # an episode start inside the sequence, whether or not the game ended on its own
                observation, starting = env.reset()[0], True
            observations.append(observation)
            starts.append(1.0 if starting else 0.0)
            observation, _, terminated, truncated, _ = env.step(t % 3)
            starting = terminated or truncated
            observation = env.reset()[0] if starting else observation
    finally:
        env.close()
    expected = []
    for observation, start in zip(observations, starts):
        if start:
            agent.reset()
        expected.append(agent.policy(observation).probabilities)
    exported = export_policy(agent, str(tmp_path / "export"))
    assert os.path.isfile(exported.metadata)
    np.savez(tmp_path / "inputs.npz", observations=np.stack(observations), starts=np.array(starts, np.float32),
             state_size=agent.net.state_size)
    args = [str(tmp_path / "inputs.npz"), exported.saved_model, str(tmp_path / "out.npz")]
    if exported.tflite:
        args.append(exported.tflite)
    proc = subprocess.run([sys.executable, "-c", EXPORTED_STEP, *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = np.load(tmp_path / "out.npz")
    assert out["probabilities"].shape == (50, 3)
    np.testing.assert_allclose(out["probabilities"], np.array(expected), atol=1e-5)
    assert exported.tflite, f"TFLite conversion failed: {exported.tflite_error}"
    np.testing.assert_allclose(out["lite"], np.array(expected), atol=1e-4)


def test_export_takes_game_variables_as_a_second_input(tmp_path):
    """A preset with game variables: the signature has a game_variables input, and it matters."""
    import tensorflow as tf

    from doom_a3c.algo.model.actor_critic import build_actor_critic
    from doom_a3c.config import TrainConfig
    from doom_a3c.envs.interface import EnvSpec
    from doom_a3c.run.agent import Agent
    from doom_a3c.run.export import export_policy

    config = TrainConfig(lstm_size=8, hidden_size=16, game_variables=[["HEALTH", 0.01], ["AMMO2", 0.1]])
    spec = EnvSpec(3, (42, 42, 1), 4 / 35, ["A", "B", "C"])
    net = build_actor_critic(config, 3, spec.observation_shape, name="global")
    agent = Agent(net, config, spec, "none", 0)
    exported = export_policy(agent, str(tmp_path / "export"))
    step = tf.saved_model.load(exported.saved_model).signatures["serving_default"]
    assert set(step.structured_input_signature[1]) == {"observation", "game_variables", "state_h", "state_c",
                                                       "episode_start"}
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 255, (4, 42, 42, 1), dtype=np.uint8)
    variables = rng.normal(size=(4, 2)).astype(np.float32) * 5
    h = c = np.zeros([4, 8], np.float32)
    out = step(observation=frames, game_variables=variables, state_h=h, state_c=c, episode_start=np.ones(4, np.float32))
    direct = net.step({"frame": frames, "variables": variables}, net.initial_state(4), tf.ones([4]))
    np.testing.assert_allclose(out["probabilities"], tf.nn.softmax(direct.logits), atol=1e-6)
    other = step(observation=frames, game_variables=variables * 0, state_h=h, state_c=c,
                 episode_start=np.ones(4, np.float32))
    assert not np.allclose(out["value"], other["value"])
