"""A torchrun worker's side of multi-process training: ``redline train --distributed`` joins the process group
(how many processes start, and with how many envs, is :mod:`redline.commands.launch`'s decision).

Each rank runs its own envs (``--num_envs`` is per process, as in Isaac Lab) with global env ids offset by the env
counts of lower ranks, so ``per_env`` seeding gives the union of all ranks' envs the streams of one process with all
envs. NCCL on CUDA (``cuda:LOCAL_RANK``), gloo on CPU. Only rank 0 writes logs and checkpoints and shows progress.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
from collections.abc import Iterator

import torch
import torch.distributed as dist

from redline.device import rank_device
from redline.errors import UserError
from redline.host import cores_per_process
from redline.runners.peer_stop import PeerStops
from redline.runners.stop import Stopped, StopRequest

TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
"""Environment variables torchrun gives each worker; ``--distributed`` needs all of them."""


@dataclasses.dataclass(frozen=True)
class DistContext:
    """This process's place in the process group."""

    rank: int
    """Global rank (seeds and env ids use it; never the local rank)."""
    world_size: int
    """Number of ranks over all nodes."""
    local_rank: int
    """Rank on this node: the CUDA device index."""
    device: str
    """``cuda:LOCAL_RANK`` or ``cpu``."""
    backend: str
    """``nccl`` or ``gloo``."""
    timeout_s: float
    """Process-group timeout [s]: a collective waiting longer than this fails and names the lost rank."""


def init(device: str | None, timeout_s: float) -> DistContext:
    """Join the process group torchrun prepared (``env://``) and pick this rank's device.

    Args:
        device: the ``--device`` option: None / ``cuda*`` use ``cuda:LOCAL_RANK`` when CUDA exists, else the CPU
            (:func:`redline.device.rank_device` decides).
        timeout_s: the process group's timeout [s].

    Raises:
        UserError: not started by torchrun, a device this rank cannot have (:func:`redline.device.rank_device`), or
            the rendezvous cannot be reached within ``timeout_s``.
    """
    missing = [k for k in TORCHRUN_ENV if k not in os.environ]
    if missing:
        raise UserError(
            f"--distributed: not started by torchrun ({', '.join(missing)} unset); use `redline train --nproc N ...` "
            "or `torchrun --nproc_per_node N -m redline.cli train --distributed ...`"
        )
    if timeout_s <= 0:
        raise UserError(f"--dist_timeout: must be > 0 seconds, got {timeout_s:g}")

    rank, world, local = (_rank_variable(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    if world < 1 or not 0 <= rank < world:
        raise UserError(f"--distributed: RANK={rank} and WORLD_SIZE={world} (valid: 0 <= RANK < WORLD_SIZE)")
    if "LOCAL_WORLD_SIZE" in os.environ:  # Isaac Lab's USD spawner reads it with int() too
        per_node = _rank_variable("LOCAL_WORLD_SIZE")
        if not local < per_node <= world:
            raise UserError(
                f"--distributed: LOCAL_WORLD_SIZE={per_node} and LOCAL_RANK={local} "
                "(valid: 0 <= LOCAL_RANK < LOCAL_WORLD_SIZE <= WORLD_SIZE)"
            )
    target = rank_device(device, local)
    use_cuda = target != "cpu"
    if use_cuda:
        torch.cuda.set_device(local)
    backend = "nccl" if use_cuda else "gloo"
    address = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    try:
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
    except Exception as exc:  # DistStoreError, TimeoutError, RuntimeError, depending on where it failed
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise UserError(
            f"--distributed: rank {rank} could not join the process group at {address} within {timeout_s:g} s "
            f"({reason})"
        ) from exc
    if not use_cuda:
        torch.set_num_threads(cores_per_process())  # processes x threads = cores (redline.host)
    return DistContext(rank, world, local, target, backend, timeout_s)


@contextlib.contextmanager
def joined(distributed: bool, device: str | None, timeout_s: float, stop: StopRequest) -> Iterator[DistContext | None]:
    """The process group (:func:`init`) for the body of a ``with``: a rank stopped outside the training loop stops
    every rank (:mod:`redline.runners.peer_stop`), a collective that failed because a signalled rank exited ends this
    one as that rank did, and the group is left at the end. Yields None (nothing joined) when not ``distributed``."""
    if not distributed:
        yield None
        return
    ctx = init(device, timeout_s)
    stop.join_group(PeerStops.of_process_group())
    try:
        yield ctx
    except Stopped:
        raise
    except Exception:
        stop.follow_peers()  # a collective failed because a signalled rank exited: exit as it did
        raise
    finally:
        stop.leave_group()
        shutdown()


def _rank_variable(name: str) -> int:
    """A torchrun variable as a non-negative integer; anything else is a one-line :class:`UserError`."""
    text = os.environ[name]
    if not text.strip().isdigit():
        raise UserError(f"--distributed: {name}={text!r} is not a non-negative integer (set by torchrun)")
    return int(text)


def shutdown() -> None:
    """Leave the process group (if one was joined)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def barrier() -> None:
    """Wait for every rank (a no-op without a process group)."""
    if dist.is_available() and dist.is_initialized():
        dist.barrier()
