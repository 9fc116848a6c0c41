"""Finding runs on disk: a run folder's record (``redline_run.json``), the checkpoints a folder holds, the one
``--checkpoint latest`` names, and where a ``redline train`` command resumes (:func:`plan_resume`). It only reads:
``play``, ``report`` and a ``--resume`` of another run may look at a folder a live process writes in (another
container's, a login node's on a shared volume), so the temporary files of killed saves are removed by the process
that locks the folder (:func:`redline.outputs.run_folder.remove_stale_temps`), never here.

(Isaac Lab's scripts write a ``run.json`` of their own into their log folders: another name, so neither is mistaken
for the other.)

The record is written by rank 0 when the run folder is created (:mod:`redline.outputs.run_folder`). It lets an
interrupted run be continued *as the same run*:

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
import re
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from redline.errors import UserError
from redline.outputs.elastic import Attempt

RECORD = "redline_run.json"
"""The record's file name in a run folder."""
LOCK = ".lock"
"""File in a run folder that the process writing the run holds an exclusive ``flock`` on
(:func:`redline.outputs.run_folder.lock`); the kernel releases it when that process ends, however it ends."""
CHECKPOINT_RE = re.compile(r"^model_(\d+)\.pt$")
"""rsl_rl's checkpoint file name, ``model_<iteration>.pt``."""
RESUME_NEVER = "never"
"""``--resume never``: start a new run even where an unfinished run of the same command exists."""


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


def read_record(run_dir: Path) -> RunRecord | None:
    """``run_dir``'s record; None when it has none or an unreadable one (a run from before records existed)."""
    try:
        raw = json.loads((run_dir / RECORD).read_text())
        return RunRecord(str(raw["fingerprint"]), int(raw["last_iteration"]), raw.get("run_id"))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def finished(run_dir: Path, record: RunRecord) -> bool:
    """Whether the run holds the checkpoint of its last iteration."""
    return (run_dir / f"model_{record.last_iteration}.pt").is_file()


def in_use(run_dir: Path) -> bool:
    """Whether a live process holds ``run_dir``'s lock (:data:`LOCK`)."""
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


def intact(path: Path) -> bool:
    """Whether ``path`` is a whole ``torch.save`` archive (a zip whose CRCs check), without unpickling it."""
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.testzip() is None
    except (OSError, zipfile.BadZipFile):
        return False


def checkpoints_in(run_dir: Path) -> list[Path]:
    """``model_<it>.pt`` files in ``run_dir``, by iteration."""
    found = [(int(m.group(1)), p) for p in run_dir.glob("model_*.pt") if (m := CHECKPOINT_RE.match(p.name))]
    return [p for _, p in sorted(found)]


def last_checkpoint(run_dir: Path) -> Path | None:
    """``run_dir``'s newest intact checkpoint (a torn newer file, from a kill mid-write, is skipped), or None."""
    return next((p for p in reversed(checkpoints_in(run_dir)) if intact(p)), None)


def _first_intact(newest_first: list[Path], where: str) -> Path:
    """The newest intact checkpoint; each unreadable newer one is skipped with a warning."""
    for path in newest_first:
        if intact(path):
            return path
        print(f"[redline] warning: skipping unreadable checkpoint {path}", file=sys.stderr)
    raise UserError(f"--checkpoint: no readable checkpoint {where} ({len(newest_first)} unreadable)")


def resolve_checkpoint(spec: str, experiment_dir: Path | None) -> Path:
    """Turn ``--checkpoint`` into a file.

    Args:
        spec: ``latest`` (newest run of the experiment, its last checkpoint), a run folder (its last
            checkpoint) or a checkpoint file.
        experiment_dir: ``logs/redline/<experiment>``, where ``latest`` looks (None: ``latest`` is not allowed).
    """
    if spec == "latest":
        if experiment_dir is None:
            raise UserError("--checkpoint: 'latest' needs the task's experiment folder")
        runs = sorted((d for d in experiment_dir.glob("*") if d.is_dir() and checkpoints_in(d)), key=lambda d: d.name)
        newest = [p for run in reversed(runs) for p in reversed(checkpoints_in(run))]
        if not newest:
            raise UserError(f"--checkpoint: 'latest' found no run with a checkpoint under '{experiment_dir}'")
        return _first_intact(newest, f"under '{experiment_dir}'")
    path = Path(spec).expanduser()
    if path.is_dir():
        found = checkpoints_in(path)
        if not found:
            raise UserError(f"--checkpoint: folder '{path}' holds no model_<iteration>.pt file")
        return _first_intact(list(reversed(found)), f"in '{path}'")
    if not path.exists():
        raise UserError(f"--checkpoint: '{spec}' does not exist (valid: latest, a run folder or a .pt file)")
    return path


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


@dataclasses.dataclass(frozen=True)
class ResumePlan:
    """What a run continues from (:func:`plan_resume`)."""

    checkpoint: Path | None = None
    """The checkpoint to load (None: start fresh)."""
    run_dir: Path | None = None
    """An existing run folder to keep writing in (an interrupted run continued); None: rank 0 creates a new one."""
    last_iteration: int | None = None
    """The iteration the continued run ends at (its record's); None: ``max_iterations`` after the checkpoint's."""
    found_by: str = "resume"
    """How the continued run was found: ``"resume"`` (``--resume``), ``"restart"`` (torchrun restarted the workers)
    or ``"same command"`` (an unfinished run of the same command, without ``--resume``)."""

    def iterations(self, checkpoint_iteration: int | None, max_iterations: int) -> int:
        """Iterations this attempt runs after ``checkpoint_iteration`` (None: none loaded)."""
        if self.last_iteration is None:
            return max_iterations
        start = -1 if checkpoint_iteration is None else checkpoint_iteration
        return max(self.last_iteration - start, 0)


def plan_resume(spec: str | None, experiment_dir: Path, attempt: Attempt | None, command: str) -> ResumePlan:
    """Where a ``redline train`` command of fingerprint ``command`` (:func:`fingerprint`) starts from, given
    ``--resume spec`` (None: not given) and its torchrun ``attempt`` (None: not under torchrun).

    An interrupted run is continued *as the same run*: in its own folder, from its newest intact checkpoint, to the
    iteration it was to end at. Three ways lead there:

    - an elastic restart under ``torchrun --max-restarts N``: the job's own folder (by torchrun's run id), even before
      its first checkpoint (it then starts over there);
    - the same command again, no flag added (a container restarted by its orchestrator, a killed shell): the newest
      unfinished run whose record has this command's fingerprint (``--resume never`` starts a new run);
    - ``--resume latest`` / a run folder / that run's newest checkpoint, for a run of the same command that did not
      finish.

    Anything else given to ``--resume`` — a finished run, an older checkpoint, a run of another command — starts a
    new run folder from that checkpoint and runs ``max_iterations`` more, as rsl_rl's ``--resume`` does.

    Raises:
        UserError: ``spec`` names no readable checkpoint.
    """
    if attempt is not None and attempt.restarted:
        run_dir = find_run(experiment_dir, run_id=attempt.run_id)
        record = None if run_dir is None else read_record(run_dir)
        if run_dir is not None and record is not None:
            checkpoint = last_checkpoint(run_dir)
            if checkpoint is None and spec not in (None, RESUME_NEVER):  # failed before its first checkpoint:
                checkpoint = resolve_checkpoint(spec, experiment_dir)  # start over in the same folder
            return ResumePlan(checkpoint, run_dir, record.last_iteration, found_by="restart")
    if spec == RESUME_NEVER:
        return ResumePlan()
    if spec is None:
        run_dir = find_run(experiment_dir, fingerprint=command)
        record = None if run_dir is None else read_record(run_dir)
        if run_dir is None or record is None:
            return ResumePlan()
        return ResumePlan(last_checkpoint(run_dir), run_dir, record.last_iteration, found_by="same command")
    checkpoint = resolve_checkpoint(spec, experiment_dir)
    run_dir = checkpoint.parent
    record = read_record(run_dir)
    same_run = (
        record is not None
        and record.fingerprint == command
        and not finished(run_dir, record)
        and last_checkpoint(run_dir) == checkpoint
    )
    if record is not None and same_run:
        return ResumePlan(checkpoint, run_dir, record.last_iteration)
    return ResumePlan(checkpoint)
