"""A run folder's record, ``redline_run.json``: which command made the run, where it ends, which torchrun job it is.

(Isaac Lab's scripts write a ``run.json`` of their own into their log folders: another name, so neither is mistaken
for the other.)

rank 0 writes it when the run folder is created (atomically). It lets an interrupted run be continued *as the same
run* (:mod:`redline.commands.train_resume`):

- ``fingerprint``: a hash of the options that define the experiment (:func:`fingerprint`): the same command run again
  after a kill — by hand, by a container's orchestrator, by torchrun's ``--max-restarts`` — finds its own unfinished
  run by it, with no flag added;
- ``last_iteration``: where the run ends, so a continued run stops where the uninterrupted one does (not
  ``max_iterations`` after its checkpoint, rsl_rl's rule for a ``--resume`` of a finished run);
- ``run_id``: torchrun's ``TORCHELASTIC_RUN_ID`` (None outside torchrun): an elastic restart continues exactly its
  job's folder.

A run is *finished* once it holds the checkpoint of its last iteration (the runner always saves the last one).
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from redline.atomic import write_atomic
from redline.errors import UserError
from redline.outputs.checkpoints import checkpoints_in, intact

RECORD = "redline_run.json"
"""The record's file name in a run folder."""


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """What ``redline_run.json`` holds."""

    fingerprint: str
    """:func:`fingerprint` of the command's experiment-defining options."""
    last_iteration: int
    """The iteration the run ends at (inclusive)."""
    run_id: str | None = None
    """torchrun's ``TORCHELASTIC_RUN_ID`` (None: not started by torchrun)."""


def fingerprint(options: Mapping[str, Any]) -> str:
    """A short stable hash of ``options`` (JSON-able values, keys sorted): equal for the same command run again."""
    text = json.dumps(dict(options), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def write_record(run_dir: Path, record: RunRecord) -> None:
    """Write ``record`` to ``run_dir/redline_run.json`` atomically.

    Raises:
        OSError: it could not be written.
    """
    write_atomic(run_dir / RECORD, json.dumps(dataclasses.asdict(record)) + "\n")


def read_record(run_dir: Path) -> RunRecord | None:
    """``run_dir``'s record; None when it has none or an unreadable one (a run from before records existed)."""
    try:
        raw = json.loads((run_dir / RECORD).read_text())
        return RunRecord(str(raw["fingerprint"]), int(raw["last_iteration"]), raw.get("run_id"))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def last_checkpoint(run_dir: Path) -> Path | None:
    """``run_dir``'s newest intact checkpoint (a torn newer file, from a kill mid-write, is skipped), or None."""
    return next((p for p in reversed(checkpoints_in(run_dir)) if intact(p)), None)


def finished(run_dir: Path, record: RunRecord) -> bool:
    """Whether the run holds the checkpoint of its last iteration."""
    return (run_dir / f"model_{record.last_iteration}.pt").is_file()


LOCK = ".lock"
"""File in a run folder that the process writing the run holds an exclusive ``flock`` on; the kernel releases it
when that process ends, however it ends (``kill -9`` included)."""


class RunLock:
    """An exclusive lock on a run folder for as long as a process writes in it (:data:`LOCK`), so the same command
    started twice at once never continues the same run twice."""

    def __init__(self, run_dir: Path) -> None:
        self._fd = os.open(run_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise UserError(f"--resume: run folder '{run_dir}' is being written by another process") from None

    def release(self) -> None:
        """Let go of the folder (once)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def in_use(run_dir: Path) -> bool:
    """Whether a live process holds ``run_dir``'s :class:`RunLock`."""
    try:
        fd = os.open(run_dir / LOCK, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def find_run(experiment_dir: Path, *, run_id: str | None = None, fingerprint: str | None = None) -> Path | None:
    """The newest run folder under ``experiment_dir`` whose record has ``run_id`` (any state), or else — with
    ``fingerprint`` — the newest whose record has it, which is unfinished and which no live process writes in (it
    may hold no checkpoint yet: killed before its first); None if there is none."""
    if not experiment_dir.is_dir():
        return None
    for run_dir in sorted((d for d in experiment_dir.iterdir() if d.is_dir()), key=lambda d: d.name, reverse=True):
        record = read_record(run_dir)
        if record is None:
            continue
        if run_id is not None and record.run_id == run_id:
            return run_dir
        mine = run_id is None and record.fingerprint == fingerprint
        if mine and not finished(run_dir, record) and not in_use(run_dir):
            return run_dir
    return None


def trim_metrics(run_dir: Path, last_iteration: int) -> int:
    """Drop the ``metrics.jsonl`` records after ``last_iteration`` (iterations of the interrupted attempt that no
    checkpoint holds, which the continued run does again); returns how many were dropped. A cut-short last line
    goes too."""
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
