"""The run folder a ``redline train`` command writes in, ``<log_root>/<experiment>/<timestamp>[_<run_name>]/``:
created with its record (:mod:`redline.outputs.run_search`) or continued (its ``metrics.jsonl`` trimmed to the
checkpoint), locked while a process writes in it (the lock holder alone removes the temporary files of killed
saves), removed if a run ends before its first checkpoint."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fcntl
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from redline.atomic import write_atomic
from redline.errors import ExpectedExit, OutputError, UserError
from redline.outputs.run_search import LOCK, RECORD, RESUME_NEVER, ResumePlan, RunRecord


@dataclasses.dataclass(frozen=True)
class NewRun:
    """Where a new run folder goes and what its record says."""

    log_root: Path
    """``--log_root``."""
    experiment: str
    """The agent config's ``experiment_name``: the folder under the log root."""
    run_name: str | None
    """``--run_name``: appended to the timestamp (None: the timestamp alone)."""
    fingerprint: str
    """The command's fingerprint (:func:`redline.outputs.run_search.fingerprint`)."""
    run_id: str | None
    """torchrun's run id (None: not started by torchrun)."""


BUSY = {
    "resume": "--resume: run folder '{run}' is being written by another process",
    "same command": (
        "this command's unfinished run '{run}' is being continued by another process (the same command started "
        "twice at once); run it again for a run of its own"
    ),
    "restart": "torchrun restarted the workers, but run folder '{run}' is still being written by another process",
}
"""What a run that finds its folder locked says, by how the folder was found (``ResumePlan.found_by``): only a run
the user pointed at with ``--resume`` names the flag."""


def lock(run_dir: Path, found_by: str = "resume") -> int:
    """Take the exclusive lock on ``run_dir`` (:data:`redline.outputs.run_search.LOCK`) that a process holds for as
    long as it writes in the folder, so the same command started twice at once never continues the same run twice;
    returns its file descriptor (closing it lets go; the kernel does when the process ends, however it ends).

    Raises:
        UserError: another process holds it (:data:`BUSY`'s line for ``found_by``).
    """
    fd = os.open(run_dir / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UserError(BUSY.get(found_by, BUSY["resume"]).format(run=run_dir)) from None
    return fd


def remove_stale_temps(run_dir: Path) -> list[Path]:
    """Delete the temporary files that killed writes left in ``run_dir`` (``.<name>.<pid>.tmp``,
    :func:`redline.atomic.write_atomic`: a checkpoint save cut short); returns them.

    Only the process holding ``run_dir``'s lock (:func:`lock`) calls it: under the lock no other process writes in
    the folder, so each such file is a dead process's, whatever its pid (another container's or host's pid says
    nothing here). A reader of the folder (``play``, ``report``, ``--resume`` of another run) never deletes.
    """
    removed = []
    for tmp in run_dir.glob(".*.tmp"):
        if tmp.name.rsplit(".", 2)[-2].isdigit():
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


@contextlib.contextmanager
def opened(plan: ResumePlan, start: int, iterations: int, new: NewRun | None) -> Iterator[Path | None]:
    """The folder a run writes in, for the body of a ``with``: the interrupted run ``plan`` continues (its metrics
    after iteration ``start`` dropped), or a new one with its record, ending ``iterations`` after ``start`` (one line
    says which); locked until the body ends, and removed if it stops on an :class:`~redline.errors.ExpectedExit`
    before the run's first checkpoint (bad input found late, a full disk before the first save). ``new`` None (the
    ranks other than 0, which write no files): no folder (None).

    Raises:
        UserError: another process writes in the folder ``plan`` continues (it is left as it is).
        OutputError: the new folder, its record or the trimmed metrics cannot be written.
    """
    if new is None:
        yield None
        return
    run_dir = plan.run_dir if plan.run_dir is not None else new_run_dir(new.log_root, new.experiment, new.run_name)
    fd = lock(run_dir, plan.found_by)
    try:
        remove_stale_temps(run_dir)
        path, text = _first_write(plan, run_dir, start, iterations, new)
        try:
            if text is not None:
                write_atomic(path, text)
        except OSError as exc:
            raise OutputError.writing("run folder", path, exc) from None
        yield run_dir
    except ExpectedExit:
        remove_if_empty_run(run_dir)  # a stop on a signal saves a checkpoint first: that folder is kept
        raise
    finally:
        os.close(fd)


def _first_write(plan: ResumePlan, run_dir: Path, start: int, iterations: int, new: NewRun) -> tuple[Path, str | None]:
    """What opening ``run_dir`` writes — a continued run's ``metrics.jsonl`` cut after ``start`` (None: nothing to
    cut), a new run's record — and the line that says which run it is."""
    end = start + iterations
    if plan.run_dir is not None:
        how = {
            "restart": "torchrun restarted the workers: continuing",
            "same command": "continuing this command's unfinished run",
        }.get(plan.found_by, "continuing the interrupted run")
        where = f"after iteration {start}" if start >= 0 else "from the start (it saved no checkpoint)"
        never = f" (--resume {RESUME_NEVER}: start a new run instead)" if plan.found_by == "same command" else ""
        print(f"[redline] {how} {run_dir} {where}, to iteration {end}{never}", flush=True)
        return run_dir / "metrics.jsonl", trimmed_metrics(run_dir / "metrics.jsonl", start)
    if plan.checkpoint is not None:
        print(
            f"[redline] resuming from {plan.checkpoint} (iteration {start}) in a new run: {iterations} more iterations",
            flush=True,
        )
    record = RunRecord(new.fingerprint, end, new.run_id)
    return run_dir / RECORD, json.dumps(dataclasses.asdict(record)) + "\n"


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


def trimmed_metrics(path: Path, last_iteration: int) -> str | None:
    """``metrics.jsonl`` at ``path`` without its records after ``last_iteration`` (iterations of the interrupted
    attempt that no checkpoint holds, which the continued run does again) and without a cut-short last line; None
    when there is nothing to drop (or no file)."""
    if not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8").split("\n")
    kept = [line for line in lines[:-1] if line.strip() and _iteration(line) <= last_iteration]
    dropped = sum(1 for line in lines if line.strip()) - len(kept)
    return "".join(f"{line}\n" for line in kept) if dropped else None


def _iteration(line: str) -> int:
    try:
        record = json.loads(line)
    except ValueError:
        return -1  # not a record: kept (read_records reports it)
    return int(record["iteration"]) if isinstance(record, dict) and "iteration" in record else -1


def remove_if_empty_run(run_dir: Path | None) -> bool:
    """Remove ``run_dir`` unless it holds a checkpoint (a run that ended before its first save); returns whether it
    was removed."""
    if run_dir is None or not run_dir.is_dir() or any(run_dir.glob("model_*.pt")):
        return False
    shutil.rmtree(run_dir, ignore_errors=True)
    return not run_dir.exists()
