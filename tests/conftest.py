"""Shared set-up: quiet TensorFlow, and import the package and tests/support.py from anywhere.

The tests are arranged by the package's layers (envs/, runtime/, algo/, modes/, run/), with end-to-end runs of the
scripts in e2e/, packaging in package/ and the benchmark scripts' own logic in benchmark_scripts/. Helpers that
tests in several folders share live in support.py; test modules never import each other, nor this file. The `slow`
marker is declared in pyproject.toml."""
import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for path in (_REPO, os.path.join(_REPO, "tests")):  # the package, and support.py for tests in every folder
    if path not in sys.path:
        sys.path.insert(0, path)
