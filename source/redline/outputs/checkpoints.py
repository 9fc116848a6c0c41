"""Checkpoint files: atomic writes, validated loads, and ``latest`` / run-folder resolution."""

from __future__ import annotations

import os
import re
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

from redline.atomic import write_atomic
from redline.errors import ExpectedExit, OutputError, UserError

CHECKPOINT_RE = re.compile(r"^model_(\d+)\.pt$")
"""rsl_rl's checkpoint file name, ``model_<iteration>.pt``."""
REQUIRED_KEYS = ("actor_state_dict", "critic_state_dict", "iter")
"""Keys every rsl_rl-compatible checkpoint has."""


class NonFiniteCheckpoint(ExpectedExit):
    """A checkpoint about to be written holds NaN or Inf: it is not written (exit status 1)."""


def save_atomic(obj: Any, path: str | os.PathLike[str]) -> None:
    """``torch.save`` to a temporary file in the same folder, fsync, then rename over ``path``
    (:func:`redline.atomic.write_atomic`).

    A crash at any point leaves either the old file or the new one, never a truncated one.

    Raises:
        NonFiniteCheckpoint: a floating-point tensor in ``obj`` holds NaN or Inf (nothing is written: no policy that
            cannot be played or resumed).
        OutputError: the file could not be written (a full disk, a removed folder, ...): the temporary file is
            removed and the checkpoints already in the folder are untouched.
    """
    # heavy: torch, not before the CLI has parsed
    import torch

    path = Path(path)
    bad = first_nonfinite(obj)
    if bad is not None:
        raise NonFiniteCheckpoint(
            f"checkpoint: not writing '{path}': non-finite values in {bad}; the checkpoints saved before it are kept"
        )

    def write(f: Any) -> None:
        torch.save(obj, f)
        _fault_pause()

    try:
        write_atomic(path, write)
    except OSError as exc:
        raise OutputError.writing("checkpoint", path, exc, "the checkpoints saved before it are kept") from None


FAULT_PAUSE_ENV = "REDLINE_FAULT_PAUSE_IN_CHECKPOINT_WRITE_S"
"""Fault injection for the kill tests (tests/commands/test_kill_resume_sim.py): seconds each checkpoint write waits
with its temporary file written but not yet renamed, so a ``kill -9`` can land mid-write; unset in real runs."""


def _fault_pause() -> None:
    seconds = os.environ.get(FAULT_PAUSE_ENV)
    if seconds:
        time.sleep(float(seconds))


def load_checkpoint(
    path: str | os.PathLike[str], map_location: str = "cpu", option: str = "--checkpoint"
) -> dict[str, Any]:
    """Load a checkpoint with ``weights_only=True``; a missing, unreadable or foreign file, or one holding NaN or Inf
    (a policy that cannot be played, exported or resumed), is a :class:`UserError` naming ``option``."""
    # heavy: torch, not before the CLI has parsed
    import torch

    path = Path(path)
    if not path.exists():
        raise UserError(f"{option}: '{path}' does not exist")
    if not path.is_file():
        raise UserError(f"{option}: '{path}' is not a regular file (valid: latest, a run folder or a .pt file)")
    try:
        data = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises several types for truncated / non-checkpoint files
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"{option}: '{path}' is not a readable checkpoint ({reason[:200]})") from exc
    missing = [k for k in REQUIRED_KEYS if not isinstance(data, dict) or k not in data]
    if missing:
        raise UserError(f"{option}: '{path}' is not an rsl_rl/redline checkpoint (missing {', '.join(missing)})")
    bad = first_nonfinite(data)
    if bad is not None:
        raise UserError(
            f"{option}: '{path}' holds non-finite values in {bad}; it cannot be played, exported or resumed "
            "(use an earlier checkpoint)"
        )
    return data


def first_nonfinite(state: Any, name: str = "") -> str | None:
    """The first floating-point tensor in ``state`` (nested dicts, lists, tuples) that holds NaN or Inf, as
    ``<key>.<key> (N NaN, M Inf of K)``; None when every one is finite."""
    # heavy: torch, not before the CLI has parsed
    import torch

    if isinstance(state, torch.Tensor):
        if not state.is_floating_point() or bool(torch.isfinite(state).all()):
            return None
        counts = {"NaN": int(state.isnan().sum()), "Inf": int(state.isinf().sum())}
        found = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
        return f"{name or 'the tensor'} ({found} of {state.numel()})"
    if isinstance(state, dict):
        items: Any = state.items()
    elif isinstance(state, list | tuple):
        items = enumerate(state)
    else:
        return None
    for key, value in items:
        inner = first_nonfinite(value, f"{name}.{key}" if name else str(key))
        if inner is not None:
            return inner
    return None


def intact(path: Path) -> bool:
    """Whether ``path`` is a whole ``torch.save`` archive (a zip whose CRCs check), without unpickling it."""
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.testzip() is None
    except (OSError, zipfile.BadZipFile):
        return False


def _first_intact(newest_first: list[Path], where: str) -> Path:
    """The newest intact checkpoint; each unreadable newer one is skipped with a warning."""
    for path in newest_first:
        if intact(path):
            return path
        print(f"[redline] warning: skipping unreadable checkpoint {path}", file=sys.stderr)
    raise UserError(f"--checkpoint: no readable checkpoint {where} ({len(newest_first)} unreadable)")


def remove_stale_temps(run_dir: Path) -> list[Path]:
    """Delete the temporary files of :func:`save_atomic` writes whose process no longer runs (a kill mid-save);
    returns them."""
    removed = []
    for tmp in run_dir.glob(".model_*.pt.*.tmp"):
        pid = tmp.name.rsplit(".", 2)[-2]
        if pid.isdigit() and not _alive(int(pid)):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def checkpoints_in(run_dir: Path) -> list[Path]:
    """``model_<it>.pt`` files in ``run_dir``, by iteration (stale temporary files of killed saves are removed)."""
    remove_stale_temps(run_dir)
    found = [(int(m.group(1)), p) for p in run_dir.glob("model_*.pt") if (m := CHECKPOINT_RE.match(p.name))]
    return [p for _, p in sorted(found)]


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
