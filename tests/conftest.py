"""Shared set-up: quiet TensorFlow, import the package and tests/support.py from anywhere, register the `slow` marker.

The tests are arranged by the package's layers (envs/, runtime/, algo/, modes/, run/), with end-to-end runs of the
scripts in e2e/, packaging in package/ and the benchmark scripts' own logic in benchmark_scripts/. Helpers that
tests in several folders share live in support.py; test modules never import each other."""
import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(REPO_ROOT, "tests")  # support.py, for tests in every folder
for path in (REPO_ROOT, TESTS):
    if path not in sys.path:
        sys.path.insert(0, path)


def pytest_configure(config):
    # The default run takes every test; `-m "not slow"` leaves out those that train, start processes or wait for a
    # time limit (2 s or more each on 2 cores), for the edit-test loop.
    config.addinivalue_line("markers", "slow: a test of 2 s or more (real runs, processes, time limits); part of the "
                            "default run, left out by -m 'not slow'")


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
