"""The code passes the project's own linters: ruff (format and lint) and mypy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "format", "--check", "source", "tasks", "tests", "scripts", "tools"],
        ["ruff", "check", "source", "tasks", "tests", "scripts", "tools"],
        # mypy follows torch and Isaac Lab (~110 s cold): its incremental cache lives beside Warp's and uv's in the
        # user's cache, so a clean checkout reuses it (mypy re-checks whatever changed, by content hash)
        ["mypy", "--cache-dir", str(Path.home() / ".cache" / "redline" / "mypy")],
    ],
    ids=["ruff-format", "ruff-check", "mypy"],
)
def test_linters_pass(command: list[str]) -> None:
    proc = subprocess.run([str(BIN / command[0]), *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_ci_fails_when_pytest_collects_nothing_and_caches_bytecode() -> None:
    """``.ci/run`` (the README's test command on a clean checkout) treats "no tests collected" as a failure, and its
    processes cache their bytecode in the checkout even where the environment sets ``PYTHONDONTWRITEBYTECODE``."""
    import _pytest.main

    source = Path(_pytest.main.__file__).resolve()  # pytest imports it in every run
    cached = ROOT / ".cache" / "pycache" / source.parent.relative_to("/") / f"main.{sys.implementation.cache_tag}.pyc"
    cached.unlink(missing_ok=True)
    proc = subprocess.run(
        [str(ROOT / ".ci" / "run"), "tests/test_tooling.py", "-k", "no_test_has_this_name"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert proc.returncode == 5, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "pytest collected no tests" in proc.stderr
    assert cached.is_file()


def test_redline_sh_passes_over_a_virtual_envs_python() -> None:
    """With a virtual env's bin first on ``PATH`` (an activated venv, or this checkout's own ``.venv``), redline.sh
    still picks a base Python 3.12: a venv's interpreter has no pip to install uv with (.ci/run failed so)."""
    function = f'source <(sed -n "/^find_python()/,/^}}/p" "{ROOT / "redline.sh"}"); find_python'
    path = f"{BIN}{os.pathsep}{Path(sys.base_prefix) / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {k: v for k, v in os.environ.items() if k != "REDLINE_PYTHON"} | {"PATH": path}
    proc = subprocess.run(["bash", "-c", function], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    chosen = proc.stdout.strip()
    probe = "import sys; print(sys.prefix == sys.base_prefix, sys.version_info[:2] == (3, 12))"
    assert subprocess.run([chosen, "-c", probe], capture_output=True, text=True).stdout.split() == ["True", "True"]
