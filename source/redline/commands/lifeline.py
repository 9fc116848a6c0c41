"""``--nproc``'s lifeline: torchrun's agent and its workers end at once when the ``redline train`` that started them
is gone.

torchrun starts each worker in a session of its own, and the launcher starts torchrun's agent in a process group of
its own (a signal to the command's group then reaches the agent once, through the launcher), so a SIGKILL to the
command's process group (``timeout -s KILL``, a job killer) or to the launcher alone would leave them training on as
orphans. The launcher names itself in :data:`LAUNCHER_ENV` (:func:`token`); the agent and each worker watch it from a
daemon thread (:func:`watch`: a pidfd, readable once the process has ended; where there is none, a poll every
:data:`POLL_S`) and end at once with ``os._exit`` when it is gone: nothing trains on and no checkpoint is written (the
command was killed, not stopped; SIGTERM and Ctrl-C go through the launcher, which waits while every rank saves).
"""

from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Callable
from pathlib import Path

from redline.outputs.metrics import LAUNCHED_AT_ENV

LAUNCHER_ENV = "REDLINE_LAUNCHER"
"""``pid:start`` of the ``redline train`` that started torchrun (``start``: its start time in clock ticks after boot,
from ``/proc``, so a reused pid is not taken for it; empty where there is no ``/proc``)."""
POLL_S = 0.5
"""How often the launcher is looked for where there is no pidfd [s]."""


def start_time(pid: int) -> str:
    """Process ``pid``'s start time (field 22 of ``/proc/<pid>/stat``, clock ticks after boot); empty when it cannot
    be read (no such process, no ``/proc``)."""
    fields = _stat(pid)
    return fields[19] if fields else ""


def started_at(pid: int | None = None) -> float | None:
    """When process ``pid`` (this one by default) started [s since the epoch]: now less the time since boot
    (``/proc/uptime``, 10 ms resolution) plus its start time after boot; None when either cannot be read."""
    ticks = start_time(os.getpid() if pid is None else pid)
    try:
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        return None
    return time.time() - uptime + int(ticks) / os.sysconf("SC_CLK_TCK") if ticks.isdigit() else None


def mark_launch(program: bool) -> None:
    """Name this command's start in :data:`~redline.outputs.metrics.LAUNCHED_AT_ENV` (the ranks it starts inherit
    it; metrics.jsonl's ``since_launch_s`` counts from it): this process's start when it is the program (start-up
    included), else (a call from Python) now."""
    started = (started_at() if program else None) or time.time()
    os.environ[LAUNCHED_AT_ENV] = repr(started)


def _stat(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name (the state first); empty if it cannot be read."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


def token(pid: int | None = None) -> str:
    """The value of :data:`LAUNCHER_ENV` naming process ``pid`` (this one by default)."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{start_time(pid)}"


def parse_token(text: str) -> tuple[int, str] | None:
    """``(pid, start)`` from a :func:`token`; None for anything else (the variable is then ignored)."""
    pid, sep, start = text.partition(":")
    return (int(pid), start) if sep and pid.isdigit() and int(pid) > 0 else None


def watch(on_gone: Callable[[int], None]) -> bool:
    """Call ``on_gone(pid)`` from a daemon thread once the launcher :data:`LAUNCHER_ENV` names has ended; False (and
    nothing watched) when the variable is unset, malformed or names this process."""
    found = parse_token(os.environ.get(LAUNCHER_ENV, ""))
    if found is None or found[0] == os.getpid():
        return False
    pid, start = found

    def run() -> None:
        wait_gone(pid, start)
        on_gone(pid)

    threading.Thread(target=run, name="redline-lifeline", daemon=True).start()
    return True


def wait_gone(pid: int, start: str) -> None:
    """Block until process ``pid`` (started at ``start``, empty: unknown) has ended; returns at once if it has, or if
    the pid now belongs to another process."""
    try:
        fd: int | None = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):  # no pidfd here (not Linux, a kernel before 5.3, seccomp)
        fd = None
    try:
        if fd is not None and _alive(pid, start):  # checked after opening: the pidfd is of the launcher, not a reuse
            select.select([fd], [], [])  # a pidfd turns readable when its process ends
            return
        while _alive(pid, start):
            time.sleep(POLL_S)
    finally:
        if fd is not None:
            os.close(fd)


def _alive(pid: int, start: str) -> bool:
    """Process ``pid`` runs and is the one started at ``start`` (a zombie has ended)."""
    if not Path("/proc/self/stat").is_file():  # no /proc: only whether the pid exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    fields = _stat(pid)
    return bool(fields) and fields[0] != "Z" and (not start or fields[19] == start)


def exit_now(pid: int) -> None:
    """A worker's ``on_gone``: the launcher was killed, so end at once and save nothing; torchrun's agent, if it is
    alive, says so in one line."""
    os._exit(1)
