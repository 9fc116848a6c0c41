"""A stop signal that reaches one rank outside the training loop stops every rank of a multi-process run.

In the training loop the ranks all-reduce the stop flag once per iteration (:mod:`redline.runners.stop`). Before
it — start-up: imports, configs, scene building, the first reset — a signalled rank exits at once, and the others
may be blocked in a collective or a store wait that it will never join; under several nodes no agent signals them.
So the rank that exits first writes ``<signal> <rank> <phase>`` under :data:`KEY` on the process group's store
(torchrun's agent hosts it, so it outlives any worker), and every rank polls that key from a daemon thread: a peer
stopped during start-up (no iteration can complete without it), or any peer while this rank is itself outside the
loop, ends this rank too with the same status.

Store calls run in daemon threads given a deadline: a store client whose server vanished can block past its own
timeout (:func:`redline.learning.distributed.lost_ranks`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

KEY = "redline/stop/{restart}"
"""The store key a rank that stops on a signal outside the loop writes; one per torchrun restart round."""
POLL_S = 0.25
"""How often each rank looks at the key [s]."""

Announcement = tuple[int, int, str]
"""``(signal number, rank that received it, that rank's phase)``."""


class PeerStops:
    """The stop key on a process group's store, for one rank.

    Args:
        store: a ``torch.distributed.Store`` every rank reaches.
        rank: this process's global rank.
        key: the key (:data:`KEY` with torchrun's restart count).
    """

    def __init__(self, store: Any, rank: int, key: str) -> None:
        self.store, self.rank, self.key = store, rank, key
        self._done = threading.Event()

    @classmethod
    def of_process_group(cls) -> PeerStops:
        """The default process group's store and rank (call after ``init_process_group``)."""
        # heavy: torch, not before the CLI has parsed
        import torch.distributed as dist
        from torch.distributed import distributed_c10d

        restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
        return cls(distributed_c10d._get_default_store(), dist.get_rank(), KEY.format(restart=restart))

    def announce(self, signum: int, phase: str, wait_s: float = 1.0) -> None:
        """Tell the other ranks this one stops on ``signum`` during ``phase`` (gives up after ``wait_s``)."""
        _with_deadline(lambda: self.store.set(self.key, f"{signum} {self.rank} {phase}"), wait_s)

    def read(self, wait_s: float = 2.0) -> Announcement | None:
        """The announcement of a rank that stopped, or None (none yet, or the store out of reach)."""
        answer = _with_deadline(self._read, wait_s)
        return answer if isinstance(answer, tuple) else None

    def watch(self, act: Callable[[int, int, str], None]) -> None:
        """Call ``act(signum, rank, phase)`` from a daemon thread when another rank announces a stop (every
        :data:`POLL_S` seconds until :meth:`close`; a store that fails ends the watch)."""
        threading.Thread(target=self._poll, args=(act,), name="redline-peer-stop", daemon=True).start()

    def close(self) -> None:
        """Stop watching (before the process group is destroyed)."""
        self._done.set()

    def _poll(self, act: Callable[[int, int, str], None]) -> None:
        while not self._done.wait(POLL_S):
            try:
                found = self._read()
            except Exception:  # the store is gone (the group was destroyed, or its host ended): nothing to watch
                return
            if found is not None and found[1] != self.rank and not self._done.is_set():
                act(*found)

    def _read(self) -> Announcement | None:
        if not self.store.check([self.key]):
            return None
        signum, rank, phase = self.store.get(self.key).decode().split(" ", 2)
        return int(signum), int(rank), phase


def _with_deadline(call: Callable[[], object], wait_s: float) -> object:
    """``call()`` in a daemon thread; its result, or None when it failed or took longer than ``wait_s``."""
    answer: list[object] = [None]

    def run() -> None:
        try:
            answer[0] = call()
        except Exception:
            answer[0] = None

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(wait_s)
    return None if worker.is_alive() else answer[0]
