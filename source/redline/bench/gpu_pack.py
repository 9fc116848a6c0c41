"""``redline bench gpu --pack DIR``: the learner's wheels for a bare GPU machine (torch 2.11 only), in one folder.

:func:`pack` writes redline's wheel (built from this checkout) and the installed versions of :data:`LEARNER_DISTS`
(no Warp, no Isaac Lab), at most :data:`BUNDLE_LIMIT_MB` MiB; ``scripts/gpu_check.sh`` installs them over the
machine's torch and runs ``redline bench gpu``. The simulator's bundle, in parts that fit one device call each, is
``tools/gpu/bundle.py`` (outside the package: nothing at run time needs it), which builds redline's wheel here too.
Standard library only: the bundle's device half imports this module before redline is installed.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from redline.errors import UserError

ROOT = Path(__file__).resolve().parents[3]
"""The checkout this module runs from (``source/redline/bench/gpu_pack.py``): redline's wheel is built from it."""
LEARNER_DISTS = ("tensordict", "rsl-rl-lib", "cloudpickle", "pyvers", "GitPython", "gitdb", "smmap")
"""Distributions the learner bundle (:func:`pack`) carries besides redline (the installed versions): the learner's
and rsl_rl's imports that a machine with only torch lacks. numpy comes with the machine's torch stack;
``gpu_check.sh`` says if not."""
BUNDLE_LIMIT_MB = 64.0
"""The most the learner bundle may weigh [MiB]."""


def pack(dest: Path) -> dict[str, Any]:
    """Write redline's wheel (``uv build``) and the installed versions of :data:`LEARNER_DISTS` (``pip download``,
    or a local wheel build when the registry is unreachable) into ``dest``.

    Returns:
        ``{"dir", "wheels": {file: MiB}, "total_mb"}``; raises when the bundle exceeds :data:`BUNDLE_LIMIT_MB`.
    """
    dest.mkdir(parents=True, exist_ok=True)
    pip = build_redline_wheel(dest)
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in LEARNER_DISTS]
    # binary wheels for this interpreter's version (tensordict has a compiled extension), whichever pip runs
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    _run([*pip, "download", "--no-deps", "--only-binary=:all:", "--python-version", version, "-d", str(dest), *pins])
    wheels = {p.name: p.stat().st_size / 2**20 for p in sorted(dest.glob("*.whl"))}
    total = sum(wheels.values())
    if total > BUNDLE_LIMIT_MB:
        raise RuntimeError(f"bundle is {total:.1f} MiB, over the {BUNDLE_LIMIT_MB:.0f} MiB limit")
    return {"dir": str(dest), "wheels": wheels, "total_mb": total}


def build_redline_wheel(dest: Path) -> list[str]:
    """Write redline's wheel from this working tree into ``dest`` (``uv build``, else ``pip wheel``); returns the
    pip command prefix found on the way."""
    root = ROOT
    pip = [sys.executable, "-m", "pip"] if _has_pip(sys.executable) else [shutil.which("pip") or "pip"]
    uv = uv_program()
    build = [uv, "build", "--wheel", "--out-dir", str(dest), str(root)] if uv else [*pip, "wheel", "--no-deps"]
    if not uv:
        build += ["-w", str(dest), str(root)]
    _run(build)
    return pip


def uv_program() -> str | None:
    """uv's program: on PATH, or where its installer puts it (often off PATH)."""
    local = Path.home() / ".local" / "bin" / "uv"
    return shutil.which("uv") or (str(local) if local.exists() else None)


def _run(cmd: list[str]) -> None:
    """Run a packaging command; its failure is a one-line :class:`UserError` with the tool's last line."""
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        last = (out.stderr.strip() or out.stdout.strip() or "no output").splitlines()[-1]
        raise UserError(f"bench gpu --pack: {Path(cmd[0]).name} {cmd[1]} failed: {last}")


def _has_pip(python: str) -> bool:
    return subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode == 0
