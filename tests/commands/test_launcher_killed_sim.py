"""``redline train --nproc 2`` on the real simulator, its whole process group signalled (issue 44 item 5): SIGKILL
(``timeout -s KILL``, a closed terminal's job killer) ends every rank within seconds and writes no checkpoint; SIGTERM
(Slurm's scancel) saves once and ends 143 with no traceback from torchrun's agent. Stand-in workers, every signal:
tests/commands/test_lifeline.py."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.commands.run_support import alive, kill_all

pytestmark = pytest.mark.sim

ARGS = [
    *("train", "--task", "Redline-Cartpole", "--device", "cpu", "--nproc", "2", "--num_envs", "16"),
    *("--max_iterations", "200", "agent.save_interval=1000"),
]
"""A run far from its end at the signal; one checkpoint in it (iteration 0's) until the run ends or is stopped."""


def _train_until_a_record(log_root: Path, stderr: object) -> subprocess.Popen[bytes]:
    """``redline train`` in a process group of its own (as a shell starts a job), once ``metrics.jsonl`` has a row."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "redline.cli", *ARGS, "--log_root", str(log_root)],
        stdout=subprocess.DEVNULL,
        stderr=stderr,  # type: ignore[arg-type]  # a file
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        metrics = list(log_root.glob("redline_cartpole/*/metrics.jsonl"))
        if metrics and metrics[0].read_text().strip():
            break
        time.sleep(0.2)
    assert proc.poll() is None
    return proc


@pytest.mark.extended  # CI runs its plain twin in test_lifeline.py (CI's 20 min budget)
def test_sigkill_to_the_commands_group_stops_every_rank_and_saves_nothing(tmp_path: Path) -> None:
    """Was: torchrun's workers, each in a session of its own, trained on to the end as orphans."""
    log_root, err = tmp_path / "logs", tmp_path / "stderr.txt"
    with open(err, "w") as stderr:
        proc = _train_until_a_record(log_root, stderr)
        try:
            saved = sorted(log_root.glob("redline_cartpole/*/model_*.pt"))
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
            deadline = time.monotonic() + 10
            while alive(str(log_root)) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert alive(str(log_root)) == [], err.read_text()[-3000:]
            time.sleep(1)  # a rank that trained on would write its next checkpoint at the end of the run
            assert sorted(log_root.glob("redline_cartpole/*/model_*.pt")) == saved  # iteration 0's
        finally:
            kill_all(str(log_root))
    assert [p.name for p in saved] == ["model_0.pt"]
    assert "the launching command" in err.read_text() and "saving nothing" in err.read_text()


@pytest.mark.extended  # CI runs its plain twin in test_lifeline.py (CI's 20 min budget)
def test_sigterm_to_the_commands_group_saves_once_without_a_traceback(tmp_path: Path) -> None:
    """Was: at times two tracebacks from torchrun's agent (``--- Logging error ---``, ``SignalException``), which got
    the signal twice: from the group and passed on by the launcher."""
    log_root, err = tmp_path / "logs", tmp_path / "stderr.txt"
    with open(err, "w") as stderr:
        proc = _train_until_a_record(log_root, stderr)
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            status = proc.wait(120)
        finally:
            kill_all(str(log_root))
    text = err.read_text()
    assert status == 143, text[-3000:]
    assert "Traceback" not in text and "Logging error" not in text, text[-3000:]
    saves = re.findall(r"stopped by SIGTERM after iteration (\d+); checkpoint (\S+) \(continue with --resume\)", text)
    assert len(saves) == 1, text[-3000:]  # one run, one save line (rank 0's; rank 1 saves nothing)
    ((iteration, checkpoint),) = saves
    assert Path(checkpoint).name == f"model_{iteration}.pt" and Path(checkpoint).is_file()
    assert alive(str(log_root)) == []
