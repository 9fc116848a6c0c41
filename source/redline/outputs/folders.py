"""Output folders: the default log root, and the write probe that refuses an unwritable folder before the simulator
starts (the run folder itself: :mod:`redline.outputs.run_folder`)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from redline.errors import UserError, describe

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
