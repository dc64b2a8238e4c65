"""The package's layers, checked by walking every import of every module (function-level ones included).

    base     config, errors, quiet_import                    imports nothing of doom_a3c but the base
    envs     interface, frame_stack, engine  <  doom/*, gym/* (never each other)  <  scenario, batch, ...
    runtime  state, files, checkpoint                        (envs and runtime never import each other)
    algo     returns, losses, the model, the learner, ...
    modes    build, threads  <  a3c, ga3c, ray/* (never each other)
    run      resolve, presets, coordinator, training, agent, playback, export, ...
    top      __init__, cli

A module may import its own layer's modules and those of the layers below it, never one above.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "doom_a3c"
EMPTY = PACKAGE / "errors.py"  # imports no module of the package

# (rank, group): a module may import a module of a lower rank, or of its own rank and group.
ENVS_BELOW_GAMES = {"envs", "envs.interface", "envs.frame_stack", "envs.engine"}


def place(module: str) -> tuple[int, str]:
    """The layer rank and group of a module named below doom_a3c ("envs.doom.game", "config", "" for __init__)."""
    top = module.split(".")[0]
    if module in ("config", "errors", "quiet_import"):
        return 0, "base"
    if top == "envs":
        if module in ENVS_BELOW_GAMES:
            return 10, "envs"
        if module.split(".")[:2] in (["envs", "doom"], ["envs", "gym"]):
            return 11, ".".join(module.split(".")[:2])  # doom and gym: one rank, apart
        return 12, "envs"
    if top == "runtime":
        return 10, "runtime"  # beside envs: neither imports the other
    if top == "algo":
        return 20, "algo"
    if top == "modes":
        if module in ("modes", "modes.build", "modes.threads"):
            return 30, "modes"
        return 31, ".".join(module.split(".")[:2])  # a3c, ga3c, ray: one rank, apart
    if top == "run":
        return 40, "run"
    return 50, "top"  # __init__, cli


def allowed(importer: str, imported: str) -> bool:
    (rank, group), (their_rank, their_group) = place(importer), place(imported)
    return their_rank < rank or (their_rank == rank and their_group == group)


def package_modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, module below doom_a3c) for every import of a doom_a3c module in the file, wherever it stands."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "doom_a3c":
                found += [(node.lineno, alias.name) for alias in node.names]
            elif node.module.startswith("doom_a3c."):
                found.append((node.lineno, node.module[len("doom_a3c."):]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name[len("doom_a3c."):]) for alias in node.names
                      if alias.name.startswith("doom_a3c.")]
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            raise AssertionError(f"{path}:{node.lineno}: a relative import; the layer rule reads absolute ones")
    return found


def layer_violations(modules: dict[str, Path]) -> list[str]:
    """One line per import of a module in a layer above the importer's, or beside it in another group."""
    violations = []
    for module, path in sorted(modules.items()):
        importer = module or "__init__"
        for line, imported in imports_of(path):
            if imported not in modules and imported.rsplit(".", 1)[0] in modules:
                imported = imported.rsplit(".", 1)[0]  # `from doom_a3c.run import resolve`: the package
            if imported in modules and not allowed(importer, imported):
                violations.append(f"{importer}:{line} imports {imported}")
    return violations


def test_every_module_imports_only_its_own_layer_and_the_layers_below():
    modules = package_modules()
    assert {"config", "envs.interface", "runtime.state", "algo.learner", "modes.a3c", "run.resolve"} <= set(modules)
    assert layer_violations(modules) == []


@pytest.mark.parametrize("importer, imported", [
    ("envs.interface", "algo.returns"),  # up a layer
    ("runtime.state", "envs.interface"),  # beside: runtime and envs never import each other
    ("envs.doom.game", "envs.gym.registry"),  # doom and gym never import each other
    ("envs.doom.game", "envs.factory"),  # the factory sits above the games
    ("algo.rollout", "modes.build"),  # the algorithm imports no mode
    ("modes.a3c", "modes.ga3c"),  # the modes never import each other
    ("modes.ray.worker", "run.resolve"),  # modes import no run-layer module
    ("config", "envs.interface"),  # the base imports nothing above it
])
def test_an_import_that_runs_back_up_is_reported(tmp_path, importer, imported):
    upward = tmp_path / "upward.py"
    upward.write_text(f"def later():\n    from doom_a3c.{imported} import something\n")  # function-level
    assert layer_violations({importer: upward, imported: EMPTY}) == [f"{importer}:2 imports {imported}"]


@pytest.mark.parametrize("importer, imported", [
    ("algo.rollout", "envs.batch"), ("algo.rollout", "runtime.state"), ("envs.doom.game", "envs.engine"),
    ("envs.factory", "envs.gym.factory"), ("modes.ray.worker", "modes.build"), ("run.agent", "modes.build"),
    ("", "run.training"), ("cli", "config"),
])
def test_an_import_down_or_within_a_layer_is_allowed(tmp_path, importer, imported):
    path = tmp_path / "module.py"
    path.write_text(f"from doom_a3c.{imported} import something\n")
    assert layer_violations({importer: path, imported: EMPTY}) == []


def test_the_package_has_no_import_cycle():
    """Within a layer too: modules of one group may import each other, but never round in a circle."""
    modules = package_modules()
    graph = {module: {imported for _, imported in imports_of(path) if imported in modules} - {module}
             for module, path in modules.items()}
    assert "algo.learner" in graph["modes.a3c"]  # the graph is really read
    assert find_cycle(graph) is None, find_cycle(graph)


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, str] = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path + [node, nxt]
            if nxt not in state:
                found = visit(nxt, path + [node])
                if found:
                    return found
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
