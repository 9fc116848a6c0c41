"""SIGTERM mid-run on the real simulator under `--nproc 2` (torchrun, 2 gloo ranks): the run exits non-zero, has
saved the iteration it was in (one checkpoint, the ranks agreed), and a resume on one process continues right after
it. The one-process case is tests/runners/test_stop.py (a real signal, the runner's save, the resume) and
tests/test_cli.py (exit status 143 and the one line)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.sim

ARGS = ["--task", "Redline-Cartpole", "--device", "cpu", "--max_iterations", "1000", "agent.save_interval=1000"]


def _records(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def _train_then_sigterm(tmp_path: Path, extra: list[str], iterations: int = 3) -> tuple[int, Path, str]:
    """Start ``redline train``, wait for ``iterations`` records, send SIGTERM; returns (status, run folder, stderr)."""
    log_root = tmp_path / "logs"
    err = tmp_path / "stderr.txt"
    with open(err, "w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "redline.cli", "train", *ARGS, "--log_root", str(log_root), *extra],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        deadline = time.monotonic() + 600
        runs: list[Path] = []
        while time.monotonic() < deadline and proc.poll() is None:
            runs = list(log_root.glob("redline_cartpole/*"))
            if runs and len(_records(runs[0])) >= iterations:
                break
            time.sleep(0.5)
        assert proc.poll() is None, err.read_text()[-3000:]
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(180)
    return status, runs[0], err.read_text()


def _resume_once(tmp_path: Path) -> list[dict]:
    log_root = tmp_path / "logs"
    argv = ["train", "--task", "Redline-Cartpole", "--device", "cpu", "--num_envs", "32", "--max_iterations", "1"]
    done = subprocess.run(
        [sys.executable, "-m", "redline.cli", *argv, "--log_root", str(log_root), "--resume", "latest"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (resumed,) = [r for r in log_root.glob("redline_cartpole/*") if "resumed_from" in _params(r)]
    return _records(resumed)


def _params(run: Path) -> str:
    path = run / "params" / "resume.yaml"
    return path.read_text() if path.is_file() else ""


@pytest.mark.extended  # ~2 min; the ranks' agreement is tested without the simulator (tests/runners/test_stop.py)
def test_sigterm_two_gloo_ranks(tmp_path: Path) -> None:
    status, run, stderr = _train_then_sigterm(tmp_path, ["--num_envs", "16", "--nproc", "2"])
    assert status != 0, stderr[-3000:]
    last = _records(run)[-1]["iteration"]
    # iteration 0's (0 % save_interval == 0) and the signal's, one for all ranks: they agreed on where to stop
    assert sorted(p.name for p in run.glob("model_*.pt")) == ["model_0.pt", f"model_{last}.pt"]
    assert "stopped by SIGTERM" in stderr
    # each rank says it in one line (Isaac Lab's launcher used to add a traceback); the agent's own handling of a group
    # signal: tests/commands/test_launcher_killed_sim.py
    assert "redline.runners.stop.Stopped:" not in stderr, stderr[-3000:]
    assert _resume_once(tmp_path)[0]["iteration"] == last + 1  # resumes on one process (32 = 2 x 16 global envs)
