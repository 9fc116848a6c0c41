"""Which torch device a run uses: ``cuda:0`` when a GPU is present, else ``cpu``; bad requests fail early."""

from __future__ import annotations

import re

from redline.errors import UserError

_DEVICE_RE = re.compile(r"^(cpu|cuda(:\d+)?)$")


def default_device() -> str:
    """``"cuda:0"`` when torch sees a GPU, else ``"cpu"``."""
    # heavy: torch, not before the CLI has parsed
    import torch

    return "cuda:0" if torch.cuda.is_available() else "cpu"


def resolve_device(requested: str | None) -> str:
    """Validate ``--device`` and return a concrete torch device string.

    Args:
        requested: ``None`` (pick :func:`default_device`), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.

    Raises:
        UserError: an unknown device, or a CUDA device this machine does not have.
    """
    if requested is None:
        return default_device()
    if not _DEVICE_RE.match(requested):
        raise UserError(f"--device: unknown device '{requested}' (valid: cpu, cuda, cuda:N)")
    if requested == "cpu":
        return "cpu"
    # heavy: torch, not before the CLI has parsed
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        raise UserError(f"--device: '{requested}' requested but no CUDA GPU is available (valid here: cpu)")
    index = int(requested.partition(":")[2] or 0)
    if index >= count:
        raise UserError(f"--device: '{requested}' does not exist (valid: cpu, cuda:0 .. cuda:{count - 1})")
    return f"cuda:{index}"
