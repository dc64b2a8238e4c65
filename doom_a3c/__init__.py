"""doom_a3c: A3C agents that learn ViZDoom, Atari and CartPole from pixels, in TensorFlow 2.

    from doom_a3c import TrainConfig, train, load_agent
    summary = train(TrainConfig(scenario="basic.wad", max_minutes=2))
    agent = load_agent(summary.checkpoint)
    env = agent.make_env()  # a gymnasium.Env of the game as trained; doom_a3c.make_env(config) for any config

TensorFlow is imported on first use, quietly, through `doom_a3c.quiet_import` (TF 2.21 writes oneDNN and
CPU-feature notices to stderr while it loads, and a user error must stay one line on stderr). The API's names
are imported on first use too, so `--help` and a bad flag answer without TF's import.

Bad input raises ConfigError (a bad value, naming the field, the value and what it may be) or CheckpointError; one
that a script leaves uncaught is printed as the one line train.py prints, without a traceback, and the script
exits non-zero.

The package is layered (docs/design/architecture.md): the base (config, errors, quiet_import); envs/ and
runtime/; algo/; modes/; run/; and this API with cli.py on top. A module imports only from layers below its own
(tests/package/test_layers.py checks it).
"""

import sys as _sys

__all__ = ["TrainConfig", "TrainSummary", "train", "Agent", "load_agent", "export_policy", "make_env"]
_API = {"TrainConfig": "doom_a3c.config", "TrainSummary": "doom_a3c.run.training", "train": "doom_a3c.run.training",
        "Agent": "doom_a3c.run.agent", "load_agent": "doom_a3c.run.agent", "export_policy": "doom_a3c.run.export",
        "make_env": "doom_a3c.run.agent"}


def __getattr__(name: str):
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'doom_a3c' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)


def _user_errors_in_one_line(previous_hook):
    """sys.excepthook for scripts that use the API: a user error uncaught is one line on stderr, as train.py's;
    every other exception goes to the hook that was there before."""
    def hook(kind, error, traceback):
        from doom_a3c.errors import CheckpointError, ConfigError

        if issubclass(kind, (ConfigError, CheckpointError)):
            print(f"error: {error}", file=_sys.stderr)
        else:
            previous_hook(kind, error, traceback)

    return hook


_sys.excepthook = _user_errors_in_one_line(_sys.excepthook)
