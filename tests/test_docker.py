"""Static checks of the container files (no Docker engine runs on these machines)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _instructions(path: Path) -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", path.read_text())  # join continuation lines
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


def test_dockerfile_runs_as_non_root_with_frozen_deps_and_redline_entrypoint() -> None:
    steps = _instructions(ROOT / "docker" / "Dockerfile")
    users = [arg for op, arg in steps if op == "USER"]
    assert users and users[-1] not in ("root", "0")
    runs = " ".join(arg for op, arg in steps if op == "RUN")
    assert "uv sync --frozen" in runs and "--no-dev" in runs
    assert ("ENTRYPOINT", '["redline"]') in steps
    for op, arg in steps:
        if op in ("ENV", "ARG"):
            assert not re.search(r"(TOKEN|SECRET|PASSWORD|API_KEY)", arg, re.IGNORECASE), arg
    copied = " ".join(arg for op, arg in steps if op == "COPY")
    for needed in ("pyproject.toml", "uv.lock", "source", "tasks"):
        assert needed in copied


def test_dockerignore_keeps_logs_caches_and_git_out() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv", "logs", ".cache"} <= ignored
