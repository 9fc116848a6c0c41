"""Stopping on SIGTERM or Ctrl-C without losing iterations.

Slurm's time limit, ``docker stop`` and Kubernetes send SIGTERM; a person presses Ctrl-C. Either sets a flag; the
runner finishes the iteration in progress, writes a checkpoint (atomically, as always) and raises :class:`Stopped`,
which the command turns into exit status 128 + signal (143 for SIGTERM, 130 for SIGINT). A second Ctrl-C while the
checkpoint is written interrupts at once. In a multi-process run the ranks agree on stopping at the same iteration
(the runner all-reduces the flag), so a signal that reaches one rank stops them all with one checkpoint.

Outside the training loop — start-up (imports, configs, scene building, the first reset) and shutdown — there is
no iteration to finish: a stop signal ends the process at once with the same status and one line, and a run folder
that holds no checkpoint yet is removed (:meth:`StopRequest.phase`).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from redline.errors import ExpectedExit
from redline.outputs.folders import remove_if_empty_run

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

    def enter(self, phase: str) -> None:
        """Switch phase (``training`` when the loop starts, ``shutdown`` when it ends)."""
        self.phase = phase

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.phase != TRAINING:
            self._exit_now(signum)
        if signum == signal.SIGINT and self.signum is not None:
            raise KeyboardInterrupt  # a second Ctrl-C: stop now
        self.signum = self.signum or signum

    def _exit_now(self, signum: int) -> None:
        """One line on stderr, the run folder removed if it holds no checkpoint, exit 128 + ``signum``.

        ``os._exit``: no iteration is in progress, so nothing is lost, and no code of a library half-way through
        building a scene runs again (an exception raised here could be caught and retried inside it).
        """
        removed = remove_if_empty_run(self.run_dir)
        name = signal.Signals(signum).name
        note = f"; removed the run folder {self.run_dir} (no checkpoint yet)" if removed else ""
        os.write(2, f"{self._prog}: stopped by {name} during {self.phase}{note}\n".encode())
        os._exit(128 + signum)

    @contextlib.contextmanager
    def installed(self) -> Iterator[StopRequest]:
        """Handle the stop signals inside the block (the previous handlers come back after it)."""
        previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        try:
            yield self
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
