"""Shared set-up: quiet TensorFlow, import the package from the repo root, register the `slow` marker."""
import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)


def pytest_configure(config):
    # Registered here (not in a pytest.ini) only to silence the unknown-marker warning: nothing is deselected.
    config.addinivalue_line("markers", "slow: real train.py/play.py subprocess runs (still part of the default run)")


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
