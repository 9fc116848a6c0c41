"""Atomic file writes: a reader, a second process or a crash sees the old file or the new one, never a part of one.

Every file redline writes whole over an older one (checkpoints, the torchrun marker, trimmed metrics, the asset
root's files, a study's records) goes through :func:`write_atomic`. Two renames are not file writes and stay with
their owners: a policy export swaps a whole folder (:mod:`redline.media.export`) and the C stepper is renamed from
the compiler's output (:mod:`redline.physics.worlds`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def write_atomic(path: str | os.PathLike[str], data: bytes | str | Callable[[BinaryIO], object]) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder (``.<name>.<pid>.tmp``): written,
    flushed and fsynced, renamed over ``path`` (``os.replace``), then the folder fsynced so that the rename survives a
    power loss.

    Args:
        path: the file; its folder must exist.
        data: the bytes, the text (written as UTF-8), or a function that writes into the open binary file (e.g.
            ``lambda f: torch.save(obj, f)``).

    Raises:
        OSError: the file could not be written; the temporary file is removed and ``path`` is as it was.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
