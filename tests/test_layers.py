"""The packages are layers: the data path (seeding -> learning -> runners, with outputs and telemetry beside them)
imports no simulator code, so it runs under plain pytest on any machine, and no layer imports one above it.

Checked statically (a subprocess import costs ~15 s of torch/tensordict start-up here): every import in a package,
at the top of a file or inside a function, names the standard library, an allowed third-party package, or an
allowed redline package.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import redline

SOURCE = Path(redline.__file__).parent
TASKS = SOURCE.parent.parent / "tasks" / "redline_tasks"

LAYERS = {
    # package or module: (third-party packages it may import, redline packages and modules it may import)
    "validation": (set(), {"errors"}),  # the rules every layer checks values against, at the bottom
    "options": (set(), {"errors", "validation", "outputs", "seeding"}),  # light: the CLI's parser is built from it
    "seeding": ({"torch", "numpy"}, {"errors", "seeding"}),  # numpy: the host Philox path
    # what a checkpoint holds beyond the learner: its simulator modules import Isaac Lab and Warp inside functions
    # only, and the simulator-free layers import its rank parts (redline.run_state.parts) and nothing else of it
    "run_state": ({"torch", "isaaclab", "isaaclab_newton", "warp"}, {"errors", "seeding", "run_state"}),
    "learning": ({"torch", "tensordict", "rsl_rl"}, {"errors", "validation", "seeding", "run_state.parts", "learning"}),
    "outputs": ({"torch", "rich"}, {"errors", "atomic", "outputs"}),
    "telemetry": ({"torch", "pynvml"}, {"errors", "telemetry"}),
    "runners": (
        {"torch", "tensordict", "rsl_rl", "tensorboard"},  # tensorboard: the event that purges a resumed run's events
        {"errors", "validation", "seeding", "run_state.parts", "learning", "outputs", "telemetry", "runners"},
    ),
}
"""The layers below the commands; all but ``run_state`` are simulator-free. ``envs`` and ``commands`` (Isaac Lab),
``bench`` and ``physics`` may import anything."""

SIMULATOR = {
    "isaaclab",
    "isaaclab_rl",
    "isaaclab_tasks",
    "isaaclab_newton",
    "isaacsim",
    "omni",
    "warp",
    "newton",
    "pxr",
}
"""Packages that belong to the simulator."""


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_layer_imports_only_what_it_may(layer: str) -> None:
    third_party, internal = LAYERS[layer]
    module = SOURCE / f"{layer}.py"
    files = [module] if module.exists() else sorted((SOURCE / layer).glob("*.py"))
    assert files, layer
    offending = []
    for path in files:
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == "redline":  # an entry names a package, or one module of it ("run_state.parts")
                ok = any(".".join(parts[1 : 2 + rule.count(".")]) == rule for rule in internal)
            else:
                ok = parts[0] in third_party or parts[0] in sys.stdlib_module_names or parts[0] == "__future__"
            if not ok:
                offending.append(f"{path.relative_to(SOURCE)}: {name}")
    assert offending == []


def test_rsl_rl_modules_used_are_simulator_free() -> None:
    """rsl_rl itself must stay pure torch: its installed sources import no simulator package."""
    import rsl_rl

    for path in Path(rsl_rl.__file__).parent.rglob("*.py"):
        assert not {n.split(".")[0] for n in _imports(path)} & SIMULATOR, path


def test_every_imported_package_is_declared() -> None:
    """Each third-party package imported by redline or its tasks comes from a distribution ``pyproject.toml`` names:
    code that relies on a transitive dependency breaks when that dependency's owner drops it."""
    import importlib.metadata
    import re
    import tomllib

    root = SOURCE.parent.parent
    declared = {
        re.split(r"[\s\[<>=!~;]", spec, maxsplit=1)[0].lower()
        for spec in tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    providers = importlib.metadata.packages_distributions()
    missing = set()
    for path in [*SOURCE.rglob("*.py"), *(root / "tasks").rglob("*.py")]:
        for name in _imports(path):
            top = name.split(".")[0]
            if top in sys.stdlib_module_names or top in ("__future__", "redline", "redline_tasks"):
                continue
            if not {d.lower() for d in providers.get(top, [top])} & declared:
                missing.add(f"{top} ({path.relative_to(root)})")
    assert sorted(missing) == []


def _module(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("package", [SOURCE, TASKS], ids=["redline", "redline_tasks"])
def test_each_module_name_is_used_once(package: Path) -> None:
    """A module's name says which one it is: no two modules of the package bear the same name (a task's files are
    named by robot and terrain, ``go1_flat_env_cfg``, not ``rsl_rl_ppo_cfg`` in every task)."""
    names = [p.stem for p in package.rglob("*.py") if p.stem != "__init__"]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def test_no_import_is_renamed_to_another_modules_name() -> None:
    """An ``import ... as NAME`` never takes the name of one of redline's modules or packages other than the one it
    binds: ``process_group as distributed`` read as :mod:`redline.learning.distributed`."""
    names = {p.stem for p in SOURCE.rglob("*.py")} | {p.name for p in SOURCE.iterdir() if p.is_dir()}
    renamed = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for alias in node.names:
                    if alias.asname in names and alias.asname != alias.name.rpartition(".")[2]:
                        renamed.append(f"{path.relative_to(SOURCE)}: {alias.name} as {alias.asname}")
    assert renamed == []


FUNCTION_IMPORTS_CEILING = 117
"""Imports inside functions in redline and its tasks, at most. Lower it when you move one up."""


def _function_imports(path: Path) -> list[ast.Import | ast.ImportFrom]:
    """``path``'s imports that stand inside a function."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if inside and isinstance(child, ast.Import | ast.ImportFrom):
                found.append(child)
            visit(child, inside or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    visit(ast.parse(path.read_text(), filename=str(path)), False)
    return found


def test_imports_inside_functions_are_few_and_say_why() -> None:
    """An import inside a function hides the call graph from a reader: it is there only when the import is optional or
    heavy (torch, Isaac Lab, Warp: the CLI parses its arguments before they load), and a comment on it, or on the line
    above its group, says which. They stay at most :data:`FUNCTION_IMPORTS_CEILING`."""
    total, silent = 0, []
    for path in [*SOURCE.rglob("*.py"), *TASKS.rglob("*.py")]:
        lines = path.read_text().splitlines()
        imports = _function_imports(path)
        total += len(imports)
        ends = {node.end_lineno for node in imports}
        for node in imports:
            first = node.lineno - 1 not in ends  # the first of a group of adjacent imports
            if first and "#" not in lines[node.lineno - 1] and not lines[node.lineno - 2].lstrip().startswith("#"):
                silent.append(f"{path.name}:{node.lineno}")
    assert silent == []
    assert total <= FUNCTION_IMPORTS_CEILING


def test_no_import_circle() -> None:
    """No module imports, at its top or inside a function, one that imports it back (directly or through others):
    an orchestrator calls down, and a constant two modules share lives below both."""
    modules = {_module(p): p for p in SOURCE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in modules:
                targets |= {f"{node.module}.{a.name}" for a in node.names} & modules.keys() or {node.module}
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names} & modules.keys()
        graph[name] = targets - {name}
    circles = []
    for start in graph:  # a depth-first walk from each module back to itself
        stack = [(start, (start,))]
        seen = set()
        while stack:
            node, trail = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    circles.append(" -> ".join((*trail, start)))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, (*trail, nxt)))
    assert circles == []


def test_nothing_imports_the_cli() -> None:
    """``redline.cli`` parses and dispatches: it stands above every module, and none calls back into it (a command
    that needs another's work calls that command's function)."""
    callers = [
        str(path.relative_to(SOURCE))
        for path in SOURCE.rglob("*.py")
        if path.name != "cli.py" and any(name == "redline.cli" for name in _imports(path))
    ]
    assert callers == []
