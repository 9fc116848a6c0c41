"""Run folders: ``<log_root>/<experiment>/<timestamp>[_<run_name>]/``."""

from __future__ import annotations

import datetime
from pathlib import Path

DEFAULT_LOG_ROOT = Path("logs") / "redline"
"""Where runs go, relative to the working directory (as Isaac Lab's ``logs/rsl_rl``)."""


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
