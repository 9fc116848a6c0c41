"""Elastic restarts under torchrun: workers that torchrun starts again after a failure continue the same run.

Under ``torchrun --max-restarts N`` a failed worker makes the agents stop and restart every worker of the job, with
``TORCHELASTIC_RESTART_COUNT`` one higher and the same ``TORCHELASTIC_RUN_ID``. The first attempt's rank 0 writes
:data:`MARKER` into its run folder (the run id and the last iteration the run is to reach); on a restart rank 0 finds
that folder, the run resumes from its newest intact checkpoint, keeps writing there, and runs only the iterations
left. Nothing is added to the command line, and a process not started by torchrun never reads or writes a marker.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path

from redline.atomic import write_atomic

MARKER = "elastic.json"
"""File in a run folder that names the torchrun run it belongs to: ``{"run_id": ..., "last_iteration": ...}``."""


@dataclasses.dataclass(frozen=True)
class Attempt:
    """This worker's attempt of a torchrun job."""

    run_id: str
    """``TORCHELASTIC_RUN_ID``: ``--rdzv_id`` (multi-node) or a fresh id per ``--standalone`` launch."""
    restart: int
    """``TORCHELASTIC_RESTART_COUNT``: 0 for the first attempt, +1 for each restart."""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> Attempt | None:
        """The attempt torchrun describes in ``environ``; None outside torchrun (or with unreadable variables)."""
        run_id, count = environ.get("TORCHELASTIC_RUN_ID"), environ.get("TORCHELASTIC_RESTART_COUNT", "0")
        if not run_id or not count.isdigit():
            return None
        return cls(run_id, int(count))

    @property
    def restarted(self) -> bool:
        """A restart (not the first attempt)."""
        return self.restart > 0


def write_marker(run_dir: Path, run_id: str, last_iteration: int) -> None:
    """Mark ``run_dir`` as torchrun run ``run_id``'s folder, to end at ``last_iteration`` (written atomically)."""
    write_atomic(run_dir / MARKER, json.dumps({"run_id": run_id, "last_iteration": last_iteration}) + "\n")


def find_run(experiment_dir: Path, run_id: str) -> tuple[Path, int] | None:
    """The newest run folder under ``experiment_dir`` marked with ``run_id`` and its last iteration, or None."""
    if not experiment_dir.is_dir():
        return None
    for run_dir in sorted((d for d in experiment_dir.iterdir() if d.is_dir()), key=lambda d: d.name, reverse=True):
        try:
            marker = json.loads((run_dir / MARKER).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(marker, dict) and marker.get("run_id") == run_id:
            return run_dir, int(marker["last_iteration"])
    return None


def trim_metrics(run_dir: Path, last_iteration: int) -> int:
    """Drop the ``metrics.jsonl`` records after ``last_iteration`` (iterations of the failed attempt that no
    checkpoint holds, which the restart runs again); returns how many were dropped. A cut-short last line goes too."""
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return 0
    lines = path.read_text(encoding="utf-8").split("\n")
    kept = [line for line in lines[:-1] if line.strip() and _iteration(line) <= last_iteration]
    dropped = sum(1 for line in lines if line.strip()) - len(kept)
    if dropped:
        write_atomic(path, "".join(f"{line}\n" for line in kept))
    return dropped


def _iteration(line: str) -> int:
    try:
        record = json.loads(line)
    except ValueError:
        return -1  # not a record: kept (read_records reports it)
    return int(record["iteration"]) if isinstance(record, dict) and "iteration" in record else -1
