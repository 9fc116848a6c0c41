"""Run folders: ``<log_root>/<experiment>/<timestamp>[_<run_name>]/``."""

from __future__ import annotations

import contextlib
import datetime
import os
import shutil
from pathlib import Path

from redline.errors import OutputError, UserError, describe

DEFAULT_LOG_ROOT = Path("logs") / "redline"
"""Where runs go, relative to the working directory (as Isaac Lab's ``logs/rsl_rl``)."""


def check_writable(folder: Path, field: str, hint: str = "") -> None:
    """Create ``folder`` (and its parents) and write, fsync and remove a probe file in it.

    Any ``OSError`` — no permission, a read-only or full file system, a path under ``/proc``, a symlink loop, a file
    in the way — is a one-line :class:`UserError` naming ``field``, the path and the errno text (then ``; hint``),
    raised before the simulator starts.
    """
    tail = f"; {hint}" if hint else ""
    folder = Path(folder)
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise UserError(f"{field}: '{existing}' is a file, not a folder{tail}")
    probe = folder / f".redline-probe.{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            if os.write(fd, b"redline\n") != 8:
                raise OSError(28, os.strerror(28), str(probe))  # a short write: the disk is full
            os.fsync(fd)
        finally:
            os.close(fd)
        probe.unlink()
    except OSError as exc:
        _remove_quietly(probe)
        where = exc.filename if isinstance(exc.filename, str) else folder
        raise UserError(f"{field}: cannot write to '{where}' ({describe(exc)}){tail}") from None


def _remove_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)


def new_run_dir(log_root: Path, experiment: str, run_name: str | None = None) -> Path:
    """Create and return a fresh run folder; a second run in the same second gets a ``-N`` suffix.

    Raises:
        OutputError: the folder cannot be created (the log root was writable when checked, then stopped being so).
    """
    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    base = f"{stamp}_{run_name}" if run_name else stamp
    exp_dir = log_root / experiment
    try:
        exp_dir.mkdir(parents=True, exist_ok=True)
        for n in range(1000):
            candidate = exp_dir / (base if n == 0 else f"{base}-{n}")
            try:
                candidate.mkdir()
            except FileExistsError:
                continue
            return candidate.resolve()
    except OSError as exc:
        raise OutputError.writing("run folder", exc.filename or exp_dir, exc) from None
    raise OutputError(f"run folder: 1000 runs named '{base}' already exist under '{exp_dir}'")


def remove_if_empty_run(run_dir: Path | None) -> bool:
    """Remove ``run_dir`` unless it holds a checkpoint (a run that ended before its first save); returns whether it
    was removed."""
    if run_dir is None or not run_dir.is_dir() or any(run_dir.glob("model_*.pt")):
        return False
    shutil.rmtree(run_dir, ignore_errors=True)
    return not run_dir.exists()
