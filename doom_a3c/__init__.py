"""doom_a3c: A3C agents that learn ViZDoom, Atari and CartPole from pixels, in TensorFlow 2.

    from doom_a3c import TrainConfig, train, load_agent
    summary = train(TrainConfig(scenario="basic.wad", max_minutes=2))
    agent = load_agent(summary.checkpoint)
    env = agent.make_env()  # a gymnasium.Env of the game as trained; doom_a3c.make_env(config) for any config

TensorFlow is imported on first use, quietly, through `doom_a3c.quiet_import` (TF 2.21 writes oneDNN and
CPU-feature notices to stderr while it loads, and a user error must stay one line on stderr). The API's names
are imported on first use too, so `--help` and a bad flag answer without TF's import.

The package is layered (docs/design/architecture.md): the base (config, errors, quiet_import); envs/ and
runtime/; algo/; modes/; run/; and this API with cli.py on top. A module imports only from layers below its own
(tests/package/test_layers.py checks it).
"""

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
