"""redline torchrun's helpers: its view of the workers (alive, or dead and unreaped with their status) and
``--rdzv_conf`` parsing. The failures themselves are driven for real in tests/multinode/."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from redline.commands.torchrun import _rdzv_conf, children


def _until_zombie(pid: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and children().get(pid) is None:
        time.sleep(0.05)


def test_children_reports_live_workers_and_the_status_of_unreaped_ones() -> None:
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    exited = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    killed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        os.kill(killed.pid, signal.SIGKILL)
        for proc in (exited, killed):
            _until_zombie(proc.pid)  # dead, not yet reaped: what an agent blocked elsewhere leaves behind
        found = children()
        assert found[alive.pid] is None
        assert found[exited.pid] == 3
        assert found[killed.pid] == 128 + signal.SIGKILL
    finally:
        for proc in (alive, exited, killed):
            proc.kill()
            proc.wait()
    assert not {alive.pid, exited.pid, killed.pid} & set(children())  # reaped: gone


def test_rdzv_conf() -> None:
    assert _rdzv_conf("is_host=true, join_timeout=10") == {"is_host": "true", "join_timeout": "10"}
    assert _rdzv_conf("") == {}
