"""``redline train --nproc``'s lifeline (issue 44 item 5): the launching command killed, SIGKILL to its process group
included, ends torchrun's agent and every worker within seconds, saving nothing; a SIGTERM or Ctrl-C to the group
reaches each worker once, through the launcher, and ends in one line per process, no traceback. Here with the real
launcher (``spawn.run_torchrun``) and the real agent (``redline.commands.torchrun``) over stand-in workers; on the
real simulator: tests/commands/test_launcher_killed_sim.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from redline.commands import lifeline
from redline.commands.torchrun import stop_handler
from tests.commands.run_support import alive, kill_all

WORKER = """
import os, signal, sys, time
from redline.commands import lifeline
lifeline.watch(lifeline.exit_now)
out = sys.argv[1]
def stop(signum, frame):
    time.sleep(2)  # a save that takes a while
    with open(f"{out}/saved-{os.environ['RANK']}", "a") as f:
        f.write(f"{signum}\\n")
    sys.exit(128 + signum)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
open(f"{out}/ready-{os.environ['RANK']}", "w").close()
time.sleep(120)
"""
"""A stand-in for a ``redline train --distributed`` worker: watches the launcher, saves (slowly) on a stop signal."""

LAUNCHER = """
import sys
from redline.commands import spawn
from redline.errors import ExpectedExit
agent = [sys.executable, "-m", "redline.commands.torchrun", "--standalone", "--nproc_per_node=2", *sys.argv[1:]]
spawn.torchrun_command = lambda nproc, argv: agent
sys.exit(spawn.run_torchrun(2, [], "cpu"))
"""
"""``redline train --nproc 2``'s launcher (``spawn.run_torchrun``) over the real agent and :data:`WORKER`."""


def _start(tmp_path: Path) -> subprocess.Popen[str]:
    """The launcher in a process group of its own, once both workers are ready."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(script), str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready-{r}").exists() for r in range(2)):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-3000:]
        time.sleep(0.1)
    return proc


def test_sigkill_to_the_commands_group_ends_the_agent_and_every_worker_saving_nothing(tmp_path: Path) -> None:
    """Was: torchrun starts its workers in sessions of their own, so they trained on as orphans."""
    proc = _start(tmp_path)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # what `timeout -s KILL` or a job killer does
        proc.wait(10)
        deadline = time.monotonic() + 10
        while alive(str(tmp_path)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert alive(str(tmp_path)) == []
        assert list(tmp_path.glob("saved-*")) == []  # killed, not stopped: nothing saved
    finally:
        kill_all(str(tmp_path))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_group_stop_signal_reaches_each_worker_once_and_ends_without_a_traceback(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """Was: the agent got the signal twice (from the group and from the launcher) and raised again inside its
    shutdown (``--- Logging error ---``, ``SignalException``), at times ending before its workers had saved."""
    proc = _start(tmp_path)
    try:
        (agent,) = [
            int(c) for task in Path(f"/proc/{proc.pid}/task").glob("*") for c in (task / "children").read_text().split()
        ]
        assert os.getpgid(agent) != proc.pid  # the group's signal reaches the agent once: passed on by the launcher
        os.killpg(proc.pid, signum)  # Slurm's scancel, Ctrl-C in a terminal
        _, stderr = proc.communicate(timeout=60)
    finally:
        kill_all(str(tmp_path))
    assert proc.returncode == 128 + signum, stderr[-3000:]
    assert "Traceback" not in stderr and "Logging error" not in stderr, stderr[-3000:]
    # each worker saved once, before the command ended
    assert [(tmp_path / f"saved-{r}").read_text() for r in range(2)] == [f"{int(signum)}\n"] * 2, stderr[-3000:]
    assert (
        stderr.strip().splitlines()[-1]
        == f"redline torchrun: stopped by {signum.name}; the workers were asked to stop too"
    )


def test_the_agents_first_stop_signal_raises_and_a_repeated_one_goes_to_the_workers(tmp_path: Path) -> None:
    worker = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys, time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(7)); "
            "print(flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        start_new_session=True,  # as torchrun starts its workers
    )
    try:
        assert worker.stdout is not None
        worker.stdout.readline()
        handle = stop_handler(lambda s: RuntimeError(s.name))
        with pytest.raises(RuntimeError, match="SIGTERM"):
            handle(signal.SIGTERM, None)
        assert worker.poll() is None  # the first is torchrun's to pass on
        handle(signal.SIGTERM, None)  # raises nothing: the agent goes on waiting for its workers
        assert worker.wait(10) == 7
    finally:
        worker.kill()


def test_a_token_names_a_live_process_and_anything_else_is_ignored() -> None:
    pid, start = lifeline.parse_token(lifeline.token()) or (0, "")
    assert pid == os.getpid() and start == lifeline.start_time(os.getpid()) != ""
    assert [lifeline.parse_token(t) for t in ("", "12", "x:1", "-3:1", "0:1")] == [None] * 5


def test_waiting_for_a_launcher_that_is_gone_or_was_reused_returns_at_once() -> None:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    lifeline.wait_gone(ended.pid, "")  # reaped
    lifeline.wait_gone(os.getpid(), "1")  # this pid, but another start time: a reused pid


def test_a_killed_launcher_is_seen_while_it_is_still_a_zombie() -> None:
    launcher = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    watcher = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from redline.commands import lifeline; import time; "
            "print(lifeline.watch(lifeline.exit_now), flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, lifeline.LAUNCHER_ENV: lifeline.token(launcher.pid)},
    )
    try:
        assert watcher.stdout is not None and watcher.stdout.readline() == "True\n"
        launcher.kill()  # not reaped yet: a zombie until the wait below
        assert watcher.wait(5) == 1
    finally:
        watcher.kill()
        launcher.wait()


def test_started_at_is_the_process_start_on_the_wall_clock() -> None:
    """A child's start read from /proc lies between the moments before and after it was started (clock ticks:
    10 ms, so within that of either side)."""
    before = time.time()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    after = time.time()
    try:
        started = lifeline.started_at(child.pid)
    finally:
        child.kill()
        child.wait()
    assert started is not None and before - 0.02 <= started <= after + 0.02
    own = lifeline.started_at()
    assert own is not None and own < before
