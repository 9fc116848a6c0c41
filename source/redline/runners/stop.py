"""Stopping on SIGTERM or Ctrl-C without losing iterations.

Slurm's time limit, ``docker stop`` and Kubernetes send SIGTERM; a person presses Ctrl-C. Either sets a flag; the
runner finishes the iteration in progress, writes a checkpoint (atomically, as always) and raises :class:`Stopped`,
which the command turns into exit status 128 + signal (143 for SIGTERM, 130 for SIGINT). A second Ctrl-C while the
checkpoint is written interrupts at once. In a multi-process run the ranks agree on stopping at the same iteration
(the runner all-reduces the flag), so a signal that reaches one rank stops them all with one checkpoint.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from redline.errors import ExpectedExit


class Stopped(ExpectedExit):
    """Training stopped on a signal after saving a checkpoint."""

    def __init__(self, signum: int, iteration: int, checkpoint: Path | None) -> None:
        self.signum = signum
        self.iteration = iteration
        self.checkpoint = checkpoint
        name = signal.Signals(signum).name
        where = f"; checkpoint {checkpoint} (continue with --resume)" if checkpoint is not None else ""
        super().__init__(f"stopped by {name} after iteration {iteration}{where}")

    @property
    def exit_status(self) -> int:
        """The shell's status for a process ended by the signal: 128 + its number."""
        return 128 + self.signum


class StopRequest:
    """The flag the signal handlers set and the runner polls once per iteration."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)
    """The signals that request a stop."""

    def __init__(self) -> None:
        self.signum: int | None = None
        """The first stop signal received, or None."""

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT and self.signum is not None:
            raise KeyboardInterrupt  # a second Ctrl-C: stop now
        self.signum = self.signum or signum

    @contextlib.contextmanager
    def installed(self) -> Iterator[StopRequest]:
        """Handle the stop signals inside the block (the previous handlers come back after it)."""
        previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        try:
            yield self
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
