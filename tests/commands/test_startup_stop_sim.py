"""SIGTERM and Ctrl-C during start-up (imports, configs, scene building) end a real ``redline train`` process at once:
exit 128 + signal, one line from redline, no traceback, and no run folder left (none holds a checkpoint yet). Before
issue 22 the handler that defers a stop to the end of an iteration was already installed while the scene was built,
so a run building a large scene ignored SIGTERM for minutes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.sim


def _start(log_root: Path, err: Path, task: str, num_envs: int) -> subprocess.Popen:
    argv = ["train", "--task", task, "--device", "cpu", "--num_envs", str(num_envs), "--max_iterations", "2"]
    with open(err, "w") as stderr:
        return subprocess.Popen(
            [sys.executable, "-m", "redline.cli", *argv, "--log_root", str(log_root)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


def _stop(proc: subprocess.Popen, signum: int) -> tuple[int, float]:
    assert proc.poll() is None
    t0 = time.monotonic()
    proc.send_signal(signum)
    status = proc.wait(60)
    return status, time.monotonic() - t0


def _redline_lines(err: Path) -> list[str]:
    text = err.read_text()
    assert "Traceback" not in text, text[-3000:]
    return [line for line in text.splitlines() if line.startswith("redline train:")]


def test_sigterm_while_the_scene_is_built_exits_143_at_once_and_removes_the_run_folder(tmp_path: Path) -> None:
    """Go1 with 2048 envs on mujoco_cpu takes tens of seconds to build here: the signal lands inside it."""
    log_root, err = tmp_path / "logs", tmp_path / "stderr.txt"
    proc = _start(log_root, err, "Redline-Velocity-Flat-Go1", 2048)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if list(log_root.glob("*/*/params/env.yaml")):  # the run folder exists; the simulator is starting
            break
        time.sleep(0.1)
    time.sleep(1.0)
    assert not list(log_root.glob("*/*/metrics.jsonl")), "training already started: build a larger scene"
    status, seconds = _stop(proc, signal.SIGTERM)
    assert status == 143 and seconds < 5.0, (status, seconds, err.read_text()[-3000:])
    (line,) = _redline_lines(err)
    assert line.startswith("redline train: stopped by SIGTERM during start-up; removed the run folder ")
    assert not list(log_root.glob("*/*"))  # no run folder left behind


def test_ctrl_c_during_the_imports_exits_130_in_one_line(tmp_path: Path) -> None:
    log_root, err = tmp_path / "logs", tmp_path / "stderr.txt"
    proc = _start(log_root, err, "Redline-Cartpole", 16)
    time.sleep(2.0)  # Isaac Lab's import takes ~20 s here
    status, seconds = _stop(proc, signal.SIGINT)
    assert status == 130 and seconds < 5.0, (status, seconds, err.read_text()[-3000:])
    assert _redline_lines(err) == ["redline train: stopped by SIGINT during start-up"]
    assert not log_root.exists() or not list(log_root.glob("*/*"))
