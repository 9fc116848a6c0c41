"""The code passes the project's own linters: ruff (format and lint) and mypy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "format", "--check", "source", "tasks", "tests", "scripts"],
        ["ruff", "check", "source", "tasks", "tests", "scripts"],
        ["mypy"],
    ],
    ids=["ruff-format", "ruff-check", "mypy"],
)
def test_linters_pass(command: list[str]) -> None:
    proc = subprocess.run([str(BIN / command[0]), *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
