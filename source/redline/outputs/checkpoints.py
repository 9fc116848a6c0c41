"""Checkpoint files: atomic writes and validated loads (which file ``latest`` or a run folder names:
:func:`redline.outputs.run_search.resolve_checkpoint`)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from redline.atomic import write_atomic
from redline.errors import ExpectedExit, OutputError, UserError

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
