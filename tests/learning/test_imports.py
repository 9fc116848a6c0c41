"""The learner package imports no simulator code, so it runs under plain pytest on any machine.

Checked statically (a subprocess import costs ~15 s of torch/tensordict start-up here): every import in the package
names the standard library, torch, tensordict, rsl_rl (pure torch), redline.errors, redline.seeding (pure torch)
or redline.learning itself.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import redline.learning

ALLOWED_THIRD_PARTY = {"torch", "tensordict", "rsl_rl"}
ALLOWED_REDLINE = ("redline.errors", "redline.learning", "redline.seeding")  # redline.seeding is pure torch


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_only_allowed_imports() -> None:
    package = Path(redline.learning.__file__).parent
    files = sorted(package.glob("*.py"))
    assert len(files) >= 10
    offending = []
    for path in files:
        for name in _imports(path):
            top = name.split(".")[0]
            if top == "redline":
                ok = name.startswith(ALLOWED_REDLINE)
            else:
                ok = top in ALLOWED_THIRD_PARTY or top in sys.stdlib_module_names or top == "__future__"
            if not ok:
                offending.append(f"{path.name}: {name}")
    assert offending == []


def test_rsl_rl_modules_used_are_simulator_free() -> None:
    """rsl_rl itself must stay pure torch: its installed sources import no simulator package."""
    import rsl_rl

    simulator = {"isaaclab", "isaaclab_rl", "isaaclab_tasks", "isaacsim", "omni", "warp", "newton", "pxr"}
    for path in Path(rsl_rl.__file__).parent.rglob("*.py"):
        assert not {n.split(".")[0] for n in _imports(path)} & simulator, path
