"""Stopping on SIGTERM or Ctrl-C without losing iterations.

Slurm's time limit, ``docker stop`` and Kubernetes send SIGTERM; a person presses Ctrl-C. Either sets a flag; the
runner finishes the iteration in progress, writes a checkpoint (atomically, as always) and raises :class:`Stopped`,
which the command turns into exit status 128 + signal (143 for SIGTERM, 130 for SIGINT). A second Ctrl-C while the
checkpoint is written interrupts at once. In a multi-process run the ranks agree on stopping at the same iteration
(the runner all-reduces the flag), so a signal that reaches one rank stops them all with one checkpoint.

Outside the training loop — start-up (imports, configs, scene building, the first reset) and shutdown — there is
no iteration to finish: a stop signal ends the process at once with the same status and one line, and a run folder
that holds no checkpoint yet is removed (:meth:`StopRequest.phase`). Python runs a signal handler only between
bytecodes of the main thread, so a main thread blocked in one C call (a collective or a store wait for a rank that
is not there, a long step of scene building) would run it only when the call returns: a daemon thread reading the
interpreter's signal wake-up descriptor ends the process instead. In a multi-process run the rank that exits tells
the others, which exit too (:mod:`redline.runners.peer_stop`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from redline.errors import ExpectedExit
from redline.outputs.run_folder import remove_if_empty_run
from redline.runners.peer_stop import PeerStops

STARTUP, TRAINING, SHUTDOWN = "start-up", "training", "shutdown"
"""The phases of a run; only in ``training`` is a stop signal deferred to the end of the iteration in progress."""


class Stopped(ExpectedExit):
    """Training stopped on a signal after saving a checkpoint."""

    def __init__(self, signum: int, iteration: int, checkpoint: Path | None) -> None:
        self.signum = signum
        self.iteration = iteration
        self.checkpoint = checkpoint
        self.exit_status = 128 + signum  # the shell's status for a process ended by the signal
        name = signal.Signals(signum).name
        where = f"; checkpoint {checkpoint} (continue with --resume)" if checkpoint is not None else ""
        super().__init__(f"stopped by {name} after iteration {iteration}{where}")


class StopRequest:
    """The flag the signal handlers set and the runner polls once per iteration.

    Args:
        phase: the phase the process is in (:meth:`enter`); outside :data:`TRAINING` a signal exits at once.
        prog: the command's name, which starts the line printed on such an exit.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGINT)
    """The signals that request a stop."""

    def __init__(self, phase: str = TRAINING, prog: str = "redline train") -> None:
        self.signum: int | None = None
        """The first stop signal received, or None."""
        self.phase = phase
        """``start-up``, ``training`` or ``shutdown``."""
        self.run_dir: Path | None = None
        """The run folder, removed on an immediate exit while it holds no checkpoint."""
        self._prog = prog
        self._peers: PeerStops | None = None
        self._exiting = threading.Lock()  # one immediate exit: the handler's, the wake-up thread's or a peer's

    def enter(self, phase: str) -> None:
        """Switch phase (``training`` when the loop starts, ``shutdown`` when it ends)."""
        self.phase = phase

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.phase != TRAINING:
            self._exit_now(signum)
        if signum == signal.SIGINT and self.signum is not None:
            raise KeyboardInterrupt  # a second Ctrl-C: stop now
        self.signum = self.signum or signum

    def _exit_now(self, signum: int, signalled: int | None = None) -> None:
        """One line on stderr, the run folder removed if it holds no checkpoint, exit 128 + ``signum``; the other
        ranks are told first (``signalled``: the rank that received the signal, when it was another one).

        ``os._exit``: no iteration is in progress, so nothing is lost, and no code of a library half-way through
        building a scene runs again (an exception raised here could be caught and retried inside it).
        """
        self._exiting.acquire()  # never released: the first caller ends the process
        if self._peers is not None and signalled is None:
            self._peers.announce(signum, self.phase)
        removed = remove_if_empty_run(self.run_dir)
        name = signal.Signals(signum).name
        by = f" (sent to rank {signalled})" if signalled is not None else ""
        note = f"; removed the run folder {self.run_dir} (no checkpoint yet)" if removed else ""
        os.write(2, f"{self._prog}: stopped by {name}{by} during {self.phase}{note}\n".encode())
        os._exit(128 + signum)

    def join_group(self, peers: PeerStops) -> None:
        """In a multi-process run: announce an immediate exit to the other ranks, and follow theirs."""
        self._peers = peers
        peers.watch(self._peer_stopped)

    def leave_group(self) -> None:
        """Stop following the other ranks (before the process group is destroyed)."""
        if self._peers is not None:
            self._peers.close()

    def follow_peers(self) -> None:
        """After an error in a multi-process run (a collective that failed because a peer exited): if another rank
        stopped on a signal, exit as it did instead of reporting the error."""
        if self._peers is None:
            return
        found = self._peers.read()
        if found is not None and found[1] != self._peers.rank:
            self._peer_stopped(*found)

    def _peer_stopped(self, signum: int, rank: int, phase: str) -> None:
        """Another rank exited on ``signum`` during ``phase``: exit too unless both are in the training loop (a rank
        that stopped in start-up never joins an iteration; one that stopped in shutdown finished them)."""
        if phase == STARTUP or self.phase != TRAINING:
            self._exit_now(signum, rank)

    @contextlib.contextmanager
    def installed(self) -> Iterator[StopRequest]:
        """Handle the stop signals inside the block (the previous handlers come back after it)."""
        previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        read, write = os.pipe()
        os.set_blocking(write, False)
        previous_fd = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        threading.Thread(target=self._watch_wakeups, args=(read,), name="redline-stop", daemon=True).start()
        try:
            yield self
        finally:
            signal.set_wakeup_fd(previous_fd)
            os.close(write)  # the wake-up thread reads the end of the pipe and closes its side
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _watch_wakeups(self, read: int) -> None:
        """End the process on a stop signal outside the loop even while the main thread is blocked in a C call;
        only while this request's handler is the one installed (``--nproc``'s launcher forwards signals instead)."""
        try:
            while chunk := os.read(read, 64):
                for signum in chunk:
                    ours = signum in self.SIGNALS and signal.getsignal(signum) == self._handle
                    if ours and self.phase != TRAINING:
                        self._exit_now(signum)
        finally:
            os.close(read)
