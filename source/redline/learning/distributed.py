"""The collectives of data-parallel PPO, behind one small object; a world of one makes no calls at all.

Per iteration the learner makes (see :class:`redline.learning.PPO`):

- one ``all_gather`` of the rollout's statistics (returns and advantage moments, the non-finite flags);
- per minibatch **one** ``all_reduce`` (sum) of a single flat buffer: the gradients, already weighted by each rank's
  share of the global minibatch, followed by the step's loss/KL statistics;
- one ``all_gather`` of the observation normalisers' batch moments;
- at each checkpoint one ``all_reduce`` (max) of a parameter checksum (:meth:`Communicator.check_replicas`).

Because every rank then holds the same reduced numbers, decisions (adaptive learning rate, NaN skip) are made
identically on every rank with no broadcast and no host read. A collective that fails (a rank died, or did not
answer within the process-group timeout) raises :class:`RankLostError` naming the ranks that stopped answering.
"""

from __future__ import annotations

import datetime
import functools
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d

from redline.errors import UserError


class RankLostError(UserError):
    """A collective failed: another rank died or stopped answering within the process-group timeout."""


class ReplicaDivergedError(RuntimeError):
    """Ranks that must hold identical parameters do not (a synchronisation bug, or non-deterministic kernels)."""


class Communicator:
    """Collectives over the default process group (``torch.distributed``), or none in a single process.

    Args:
        rank, world_size: this process's global rank and the number of ranks (1: single process, no calls).
        ranks_per_node: ranks on each node, to name the node of a lost rank in errors (0: unknown).
        device: where the tensors handed to the collectives live (NCCL needs CUDA tensors, gloo takes CPU ones).
        timeout_s: the process group's timeout [s], quoted in errors.
    """

    def __init__(
        self,
        rank: int = 0,
        world_size: int = 1,
        device: torch.device | str = "cpu",
        timeout_s: float = 0,
        ranks_per_node: int = 0,
    ):
        self.rank, self.world_size = rank, world_size
        self.ranks_per_node = ranks_per_node
        """Ranks on each node (torchrun's ``LOCAL_WORLD_SIZE``; it numbers ranks node by node), to name a lost
        rank's node; 0: unknown."""
        self.device = torch.device(device)
        self.timeout_s = timeout_s
        self.calls = 0
        """Collectives issued since the last :meth:`take_stats`."""
        self.seconds = 0.0
        """Host time spent inside collectives since the last :meth:`take_stats` [s]."""

    @classmethod
    def from_process_group(cls, device: torch.device | str, timeout_s: float) -> Communicator:
        """The communicator of the initialised default process group (torchrun's ``LOCAL_WORLD_SIZE`` gives the
        ranks per node)."""
        per_node = os.environ.get("LOCAL_WORLD_SIZE", "")
        return cls(
            dist.get_rank(), dist.get_world_size(), device, timeout_s, int(per_node) if per_node.isdigit() else 0
        )

    @property
    def distributed(self) -> bool:
        """More than one rank."""
        return self.world_size > 1

    def take_stats(self) -> tuple[int, float]:
        """``(collectives, seconds)`` since the last call; resets both."""
        stats = (self.calls, self.seconds)
        self.calls, self.seconds = 0, 0.0
        return stats

    def all_reduce_(self, buf: torch.Tensor, op: str = "sum") -> torch.Tensor:
        """Reduce ``buf`` over all ranks in place (``op``: ``sum`` or ``max``); returns it."""
        if self.distributed:
            reduce_op = dist.ReduceOp.SUM if op == "sum" else dist.ReduceOp.MAX
            self._run("all_reduce", lambda: dist.all_reduce(buf, op=reduce_op))
        return buf

    def all_gather(self, x: torch.Tensor) -> torch.Tensor:
        """Every rank's ``x`` (same shape on all ranks), stacked in rank order: ``(world_size, *x.shape)``."""
        if not self.distributed:
            return x.unsqueeze(0)

        parts = [torch.empty_like(x) for _ in range(self.world_size)]
        self._run("all_gather", lambda: dist.all_gather(parts, x.contiguous()))
        return torch.stack(parts)

    def gather_objects(self, obj: Any) -> list[Any] | None:
        """Every rank's picklable ``obj`` in rank order on rank 0 (None on the others); a checkpoint's per-rank state
        (CPU tensors: NCCL moves the pickled bytes through this rank's current CUDA device)."""
        if not self.distributed:
            return [obj]

        out: list[Any] | None = [None] * self.world_size if self.rank == 0 else None
        self._run("gather_object", lambda: dist.gather_object(obj, out, dst=0))
        return out

    def broadcast_(self, tensors: Sequence[torch.Tensor], src: int = 0) -> None:
        """Overwrite ``tensors`` in place with rank ``src``'s (start of training: one call per tensor)."""
        if not self.distributed:
            return

        for t in tensors:
            moved = t if t.device == self.device else t.to(self.device)
            self._run("broadcast", functools.partial(dist.broadcast, moved, src))
            if moved is not t:
                t.copy_(moved)

    def check_replicas(self, flat_params: torch.Tensor) -> None:
        """Fail loudly unless every rank holds bitwise the same parameters (one all-reduce of a checksum).

        Raises:
            ReplicaDivergedError: the ranks' checksums differ.
        """
        if not self.distributed:
            return
        # the sum of the parameters' bit patterns, exact in int64 up to ~4e9 parameters: identical replicas always
        # agree; diverged ones are caught unless their differences happen to cancel in the sum
        checksum = flat_params.detach().float().contiguous().view(torch.int32).to(torch.int64).sum()
        both = torch.stack((checksum, -checksum)).to(self.device)
        self.all_reduce_(both, op="max")  # max and −min of the checksums
        high, low = int(both[0]), -int(both[1])
        if high != low:
            raise ReplicaDivergedError(
                f"rank {self.rank}: ranks hold different parameters (checksums range {low}..{high}); "
                "data-parallel training lost synchronisation"
            )

    def _run(self, name: str, call: Callable[[], object]) -> None:
        start = time.perf_counter()
        try:
            call()
        except RuntimeError as exc:  # gloo/NCCL raise RuntimeError subclasses (DistBackendError, timeouts)
            raise RankLostError(self._lost_message(name, exc)) from exc
        finally:
            self.calls += 1
            self.seconds += time.perf_counter() - start

    def _named(self, rank: int) -> str:
        """``1`` or, with the ranks per node known, ``1 (node 1)``."""
        return f"{rank} (node {rank // self.ranks_per_node})" if self.ranks_per_node > 0 else str(rank)

    def _lost_message(self, name: str, exc: BaseException) -> str:
        lost = lost_ranks(self.rank, self.world_size, min(5.0, self.timeout_s or 5.0))
        if lost is None and self.world_size == 2:
            lost = [1 - self.rank]  # the store is out of reach, and there is only one other rank
        who = f"rank{'s' if len(lost) > 1 else ''} {', '.join(map(self._named, lost))}" if lost else "another rank"
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        return (
            f"rank {self.rank}: {who} of {self.world_size} stopped answering during {name} (lost; process-group "
            f"timeout {self.timeout_s:g} s); stopping. Cause: {reason}"
        )


def lost_ranks(rank: int, world_size: int, wait_s: float = 5.0) -> list[int] | None:
    """Ranks that do not check in on the rendezvous store within ``wait_s`` after a failed collective.

    Every rank that sees a collective fail posts ``redline/alive/<rank>`` on the process group's store and waits
    for the others' keys; those that never post are the lost ones. Returns None when the store itself is out of
    reach (it died with the process that hosted it, or a network partition cut this node off): a store client
    whose peer vanished can block past its own timeout, so the check-in runs in a daemon thread given ``wait_s`` +
    1 s in all.
    """
    answer: list[list[int] | None] = [None]
    checker = threading.Thread(target=_check_in, args=(rank, world_size, wait_s, answer), daemon=True)
    checker.start()
    checker.join(wait_s + 1.0)
    return None if checker.is_alive() else answer[0]


def _check_in(rank: int, world_size: int, wait_s: float, answer: list[list[int] | None]) -> None:
    """:func:`lost_ranks`'s store traffic; leaves its result in ``answer[0]`` (None: the store is unreachable)."""
    try:
        store = distributed_c10d._get_default_store()
        store.set(f"redline/alive/{rank}", "1")
    except Exception:
        return
    deadline = time.monotonic() + wait_s
    lost = []
    for other in range(world_size):
        if other == rank:
            continue
        remaining = max(deadline - time.monotonic(), 0.05)
        try:
            store.wait([f"redline/alive/{other}"], datetime.timedelta(seconds=remaining))
        except Exception:
            lost.append(other)
    answer[0] = lost
