"""The exceptions the CLI turns into a one-line message and a non-zero exit (never a traceback)."""

from __future__ import annotations

import os

EXIT_USER_ERROR = 2
"""Exit status of bad input (argparse's)."""
EXIT_IO_ERROR = 74
"""Exit status of an output that could not be written (``EX_IOERR`` of BSD's sysexits.h)."""


class ExpectedExit(Exception):
    """An expected end of a command: the CLI prints its message on one line, without a traceback, and exits non-zero.

    Context managers between the command and the CLI (Isaac Lab's launcher prints a traceback for any exception it
    sees) let these pass untouched: :func:`redline.envs.simulator.isaaclab_env`.
    """

    exit_status: int = 1
    """The process's exit status."""


class UserError(ExpectedExit):
    """Bad input from the user: the message names the field and the valid values.

    The CLI prints ``redline <command>: error: <message>`` and exits with status 2, without a traceback.
    """

    exit_status = EXIT_USER_ERROR


class OutputError(ExpectedExit):
    """An essential output (a checkpoint, a ``metrics.jsonl`` line, an export) could not be written during a run.

    The CLI prints ``redline <command>: error: <message>`` and exits with status 74; files written before stay whole.
    """

    exit_status = EXIT_IO_ERROR

    @classmethod
    def writing(cls, what: str, path: str | os.PathLike[str], exc: OSError, after: str = "") -> OutputError:
        """``<what>: could not write '<path>' (<errno text>)[; <after>]``."""
        return cls(f"{what}: could not write '{path}' ({describe(exc)}){f'; {after}' if after else ''}")


def describe(exc: OSError) -> str:
    """An ``OSError`` as its errno text (``No space left on device``), else its message, on one line."""
    if exc.errno is not None:
        return os.strerror(exc.errno)
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
