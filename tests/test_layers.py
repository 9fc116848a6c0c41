"""The packages are layers: every package and top-level module of redline, and the tasks, has a rule here saying what
it may import, written from the graph the code obeys; an import outside its rule is an arrow the plan does not have.

The data path (seeding -> learning -> runners, with outputs and telemetry beside them) imports no simulator code, so
it runs under plain pytest on any machine; the simulator's side (physics, assets, media, envs, the tasks) sits above
it, the commands and the benches above that, and the CLI on top, alone in reaching the benches.

Checked statically (a subprocess import costs ~15 s of torch/tensordict start-up here): every import in a package,
at the top of a file or inside a function, names the standard library, an allowed third-party package, or an
allowed redline package.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

import redline

SOURCE = Path(redline.__file__).parent
TASKS = SOURCE.parent.parent / "tasks" / "redline_tasks"


def _names(words: str) -> set[str]:
    return set(words.split())


LAYERS: dict[str, tuple[set[str], set[str]]] = {
    # package or module: (third-party packages it may import, redline packages and modules it may import besides
    # itself), floor by floor from the ground up, as the code stands (2026-12-06). ``__init__`` is redline's own
    # ``__init__.py`` (the version). A new arrow is a decision about the plan: make it here, downwards only.
    # -- the ground: the standard library alone
    "__init__": (set(), set()),  # the version, from the installed metadata
    "errors": (set(), set()),  # UserError: one line, exit 2
    "atomic": (set(), set()),  # write-then-rename
    "validation": (set(), {"errors"}),  # the rules every layer checks values against
    "host": (set(), {"errors"}),  # the machine: cores, memory
    "native": (set(), set()),  # small C files built on first use (2026-12-07)
    "device": ({"torch"}, {"errors"}),  # which device a run uses
    # -- the data path: simulator-free (SIMULATOR_FREE)
    "seeding": ({"torch", "numpy"}, {"errors", "native"}),  # numpy and native: the host Philox path
    "learning": ({"torch", "tensordict", "rsl_rl"}, {"errors", "validation", "seeding", "run_state.parts"}),
    "outputs": ({"torch", "rich"}, {"errors", "atomic"}),
    "telemetry": ({"torch", "pynvml"}, {"errors"}),
    "runners": (
        {"torch", "tensordict", "rsl_rl", "tensorboard"},  # tensorboard: the event that purges a resumed run's events
        {"errors", "validation", "seeding", "run_state.parts", "learning", "outputs", "telemetry"},
    ),
    "options": (set(), {"errors", "validation", "outputs", "seeding"}),  # light: the CLI's parser is built from it
    # -- the simulator's side
    # what a checkpoint holds beyond the learner: its simulator modules import Isaac Lab and Warp inside functions
    # only; the data path imports its rank parts (SIMULATOR_FREE_MODULES) and nothing else of it
    "run_state": ({"torch", "warp", "isaaclab", "isaaclab_newton"}, {"errors", "seeding"}),
    "physics": (
        {"torch", "numpy", "warp", "newton", "mujoco", "gymnasium", "isaaclab", "isaaclab_newton", "isaaclab_tasks"},
        {"errors", "host", "device", "seeding", "native"},
    ),
    "assets": ({"numpy", "mujoco", "pxr", "isaaclab", "isaaclab_newton", "isaaclab_physx"}, {"__init__", "atomic"}),
    "caches": (set(), {"errors", "outputs", "assets"}),  # what a run leaves on disk besides its folder
    "media": (
        {"torch", "numpy", "av", "gymnasium", "warp", "newton", "isaaclab_newton"},
        {"errors", "options", "outputs"},
    ),
    "redline_tasks": (  # tasks/redline_tasks: the registered tasks, on the physics and assets they name
        _names("torch tensordict gymnasium warp newton isaaclab isaaclab_newton isaaclab_rl isaaclab_tasks"),
        {"device", "seeding", "run_state", "physics", "assets", "learning"},  # learning: the SAC agent's fields
    ),
    "envs": (
        {"torch", "gymnasium", "isaaclab", "isaaclab_rl", "isaaclab_tasks", "redline_tasks"},
        {"errors", "validation", "device", "options", "seeding", "learning", "physics"},
    ),
    # -- the commands, the benches beside them, and the CLI on top
    "commands": (
        {"torch", "matplotlib", "rsl_rl", "isaaclab", "isaaclab_rl"},
        {
            "errors",
            "validation",
            "host",
            "device",
            "options",
            "learning",
            "outputs",
            "telemetry",
            "runners",
            "media",
            "envs",
        },
    ),
    "bench": (  # beside the commands: a bench times what a command runs
        {"torch", "tensordict", "rsl_rl", "numpy", "scipy", "matplotlib", "mujoco", "isaaclab_rl", "warp"},
        _names("errors atomic validation host device options seeding learning outputs telemetry runners")
        | {"caches", "envs", "commands", "physics"},  # physics: the fuse_decimation override's one token
    ),
    "cli": (  # and bench/, by name only: test_only_the_cli_reaches_the_benches
        {"gymnasium"},
        {"__init__", "errors", "host", "options", "runners", "caches", "envs", "commands"},
    ),
}
"""What each package and top-level module of redline, and the tasks, may import (test_every_package_has_a_rule)."""

SUBPACKAGES: dict[str, tuple[set[str], set[str]]] = {
    # a package inside a layer, held to a narrower rule than its layer's: (third-party packages, redline packages and
    # modules it may import besides itself)
    "learning.sac": (  # the off-policy learner: the PPO learner's shared parts, never the PPO learner itself
        {"torch", "tensordict", "rsl_rl"},
        {
            "errors",
            "validation",
            "seeding",
            "run_state.parts",
            "learning.capture",
            "learning.config",
            "learning.distributed",
            "learning.dropin",
            "learning.flat_params",
            "learning.from_env",
            "learning.models",
            "learning.moments",
            "learning.optim",
            "learning.precision",
        },
    ),
}
"""Sub-packages with their own rule (test_subpackage_imports_only_what_it_may); each stays simulator-free."""

SIMULATOR_FREE = ("__init__", "errors", "atomic", "validation", "host", "native", "device", "seeding", "learning",
                  "outputs", "telemetry", "runners", "options")  # fmt: skip
"""The layers that run under plain pytest on any machine: no simulator package in their rule."""

SIMULATOR_FREE_MODULES = ("run_state.parts", "run_state.layout", "run_state.generators", "run_state.tree")
"""Modules of a simulator-side package that the data path may import: none of them imports a simulator package."""

SIMULATOR = {
    "isaaclab",
    "isaaclab_rl",
    "isaaclab_tasks",
    "isaaclab_newton",
    "isaaclab_physx",
    "isaacsim",
    "omni",
    "warp",
    "newton",
    "pxr",
    "mujoco",
}
"""Packages that belong to the simulator."""


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "redline":  # from redline import options: the module options
                names += [f"redline.{a.name}" if a.name in LAYERS else "redline" for a in node.names]
            elif node.module.startswith("redline."):  # from redline.run_state import layout: the module layout
                package = SOURCE.joinpath(*node.module.split(".")[1:])
                names += [
                    f"{node.module}.{a.name}" if (package / f"{a.name}.py").exists() else node.module
                    for a in node.names
                ]
            else:
                names.append(node.module)
    return names


def _unit(name: str) -> str:
    """The layer a redline import names: ``redline.learning.ppo`` -> ``learning``, ``redline`` -> ``__init__``."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _files(layer: str) -> list[Path]:
    if layer == "redline_tasks":
        return sorted(TASKS.rglob("*.py"))
    module = SOURCE / f"{layer}.py"
    return [module] if module.exists() else sorted((SOURCE / layer).rglob("*.py"))


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_layer_imports_only_what_it_may(layer: str) -> None:
    third_party, internal = LAYERS[layer]
    files = _files(layer)
    assert files, layer
    offending = []
    for path in files:
        for name in _imports(path):
            top = name.split(".")[0]
            if top == "redline":
                ok = _unit(name) in internal | {layer} or ".".join(name.split(".")[1:3]) in internal
            elif top == "redline_tasks":
                ok = layer == "redline_tasks" or top in third_party
            else:
                ok = top in third_party or top in sys.stdlib_module_names or top == "__future__"
            if not ok:
                offending.append(f"{path.relative_to(SOURCE.parent.parent)}: {name}")
    assert offending == []


@pytest.mark.parametrize("package", sorted(SUBPACKAGES))
def test_subpackage_imports_only_what_it_may(package: str) -> None:
    """A sub-package with its own rule imports only what that rule names (the rule of its layer also holds), and
    nothing of its layer outside it imports it: the layer's other modules do not depend on it."""
    third_party, internal = SUBPACKAGES[package]
    assert not third_party & SIMULATOR
    assert {i.split(".")[0] for i in internal} <= {*SIMULATOR_FREE, *(m.split(".")[0] for m in SIMULATOR_FREE_MODULES)}
    files = sorted(SOURCE.joinpath(*package.split(".")).rglob("*.py"))
    assert files, package
    offending = []
    for path in files:
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == "redline":
                inside = ".".join(parts[1:]).startswith(package)
                ok = inside or parts[1] in internal or ".".join(parts[1:3]) in internal
            else:
                ok = parts[0] in third_party or parts[0] in sys.stdlib_module_names or parts[0] == "__future__"
            if not ok:
                offending.append(f"{path.relative_to(SOURCE.parent.parent)}: {name}")
    assert offending == []
    layer = SOURCE / package.split(".")[0]
    inside_dir = SOURCE.joinpath(*package.split("."))
    users = [
        str(path.relative_to(SOURCE))
        for path in layer.rglob("*.py")
        if not path.is_relative_to(inside_dir) and any(n.startswith(f"redline.{package}") for n in _imports(path))
    ]
    assert users == []


def test_every_package_has_a_rule() -> None:
    """Each package and top-level module of redline (and the tasks) has its rule in :data:`LAYERS`, and each rule
    has its package: a new package cannot slip in unruled, nor a removed one leave its rule behind."""
    units = {p.stem for p in SOURCE.glob("*.py")}
    units |= {d.name for d in SOURCE.iterdir() if d.is_dir() and d.name != "__pycache__" and any(d.rglob("*.py"))}
    assert sorted(units | {"redline_tasks"}) == sorted(LAYERS)
    allowed = set().union(*(internal for _, internal in LAYERS.values()))
    modules = {a for a in allowed if "." in a and SOURCE.joinpath(*a.split(".")).with_suffix(".py").exists()}
    assert sorted(allowed - LAYERS.keys() - modules) == []  # no rule names a package or module that is not there


def test_the_data_path_may_import_no_simulator_package() -> None:
    """The simulator-free layers' rules name no simulator package, and their allowed redline layers are
    simulator-free too: widening one of them is a change of plan, not a line in a set."""
    for layer in SIMULATOR_FREE:
        third_party, internal = LAYERS[layer]
        assert not third_party & SIMULATOR, layer
        assert internal <= {*SIMULATOR_FREE, *SIMULATOR_FREE_MODULES}, layer
    for module in SIMULATOR_FREE_MODULES:
        path = SOURCE / f"{module.replace('.', '/')}.py"
        for name in _imports(path):
            top = name.split(".")[0]
            assert top not in SIMULATOR, (module, name)
            inside = ".".join(name.split(".")[1:3])
            assert top != "redline" or _unit(name) in SIMULATOR_FREE or inside in SIMULATOR_FREE_MODULES, (module, name)


def _reaches_bench(path: Path) -> list[str]:
    """The imports of ``redline.bench`` in ``path``, and the strings naming one of its modules (``importlib`` or
    ``python -m`` reach a module by name)."""
    found = [name for name in _imports(path) if name.startswith("redline.") and _unit(name) == "bench"]
    tree = ast.parse(path.read_text(), filename=str(path))
    found += [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and re.fullmatch(r"redline\.bench(\.\w+)*", node.value)
    ]
    return found


def test_only_the_cli_reaches_the_benches() -> None:
    """``redline bench`` is a command: ``cli.py`` alone reaches ``bench/`` (by its modules' names, importing only
    the bench asked for); no other module of redline or its tasks imports a bench, by import or by name."""
    reach = {
        str(path.relative_to(SOURCE.parent.parent)): found
        for path in [*SOURCE.rglob("*.py"), *TASKS.rglob("*.py")]
        if not path.is_relative_to(SOURCE / "bench") and (found := _reaches_bench(path))
    }
    assert sorted(reach) == ["source/redline/cli.py"]


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


FUNCTION_IMPORTS_CEILING = 113
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
