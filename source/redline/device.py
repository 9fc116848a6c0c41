"""Which torch device a run uses, decided here and nowhere else: ``cuda:0`` when a GPU is present, else ``cpu``; a
torchrun worker's ``cuda:LOCAL_RANK``; bad requests fail early, in one wording.

The one place that asks torch whether CUDA is usable (:func:`cuda_count`); every command, launcher and config that
needs a device or a GPU count calls the functions below (``tests/test_device.py`` holds the rest of the package to it).
"""

from __future__ import annotations

import re

from redline.errors import UserError

_DEVICE_RE = re.compile(r"^(cpu|cuda(:\d+)?)$")


def cuda_count() -> int:
    """How many CUDA GPUs torch can use on this machine (0: none, or a torch built without CUDA)."""
    # heavy: torch, not before the CLI has parsed
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def default_device() -> str:
    """``"cuda:0"`` when torch sees a GPU, else ``"cpu"``."""
    return "cuda:0" if cuda_count() else "cpu"


def no_cuda_error(requested: str) -> UserError:
    """The one error for a CUDA device asked for on a machine without CUDA."""
    return UserError(f"--device: '{requested}' requested but no CUDA GPU is available (valid here: cpu)")


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
    count = cuda_count()
    if count == 0:
        raise no_cuda_error(requested)
    index = int(requested.partition(":")[2] or 0)
    if index >= count:
        raise UserError(f"--device: '{requested}' does not exist (valid: cpu, cuda:0 .. cuda:{count - 1})")
    return f"cuda:{index}"


def gpus_for(requested: str | None) -> int:
    """The CUDA GPUs the processes of a run asking for ``requested`` share: all of this machine's for None (the
    default) or a CUDA device, none for the CPU or on a machine without CUDA."""
    return cuda_count() if requested is None or requested.startswith("cuda") else 0


def rank_device(requested: str | None, local_rank: int) -> str:
    """The device of the process with ``local_rank`` on its machine: ``cuda:LOCAL_RANK`` when :func:`gpus_for`
    ``requested`` has GPUs (each process its own), else ``cpu``.

    Raises:
        UserError: a CUDA device requested on a machine without CUDA, or a local rank without a GPU of its own.
    """
    gpus = gpus_for(requested)
    if gpus == 0:
        if requested is not None and requested.startswith("cuda"):
            raise no_cuda_error(requested)
        return "cpu"
    if local_rank >= gpus:
        raise UserError(f"--nproc: local rank {local_rank} but only {gpus} CUDA GPU(s)")
    return f"cuda:{local_rank}"


def runnable_here(device: str) -> str:
    """``device``, or ``"cpu"`` in place of a CUDA device on a machine without CUDA (rsl_rl's default ``cuda:0`` in an
    agent config, which cannot run there)."""
    return "cpu" if device.startswith("cuda") and cuda_count() == 0 else device
