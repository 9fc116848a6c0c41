"""Run folders: ``<log_root>/<experiment>/<timestamp>[_<run_name>]/``."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from redline.errors import UserError

DEFAULT_LOG_ROOT = Path("logs") / "redline"
"""Where runs go, relative to the working directory (as Isaac Lab's ``logs/rsl_rl``)."""


def check_writable(folder: Path, field: str) -> None:
    """Raise a one-line :class:`UserError` naming ``field`` unless ``folder`` is (or can be made) a writable folder.

    Nothing is created: the nearest existing ancestor must be a folder this process may write to.
    """
    folder = Path(folder)
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise UserError(f"{field}: '{existing}' is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UserError(f"{field}: '{existing}' is not writable by this user")


def new_run_dir(log_root: Path, experiment: str, run_name: str | None = None) -> Path:
    """Create and return a fresh run folder; a second run in the same second gets a ``-N`` suffix."""
    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    base = f"{stamp}_{run_name}" if run_name else stamp
    exp_dir = log_root / experiment
    exp_dir.mkdir(parents=True, exist_ok=True)
    for n in range(1000):
        candidate = exp_dir / (base if n == 0 else f"{base}-{n}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate.resolve()
    raise RuntimeError(f"could not create a run folder under {exp_dir}")
