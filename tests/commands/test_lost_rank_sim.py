"""A rank of `redline train --nproc 2` killed with SIGKILL on the real simulator (issue 37 item 7): the survivor names
the lost rank in one line, torchrun's agent names the killed one in the last line, the run exits 1 (below 128: the
run failed, it was not killed itself), no traceback, the checkpoints whole. Its agent killed instead:
tests/commands/test_process_group.py; across nodes: tests/multinode/."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from redline.outputs.checkpoints import load_checkpoint
from redline.outputs.run_search import intact

pytestmark = pytest.mark.sim

ARGS = [
    *("train", "--task", "Redline-Cartpole", "--device", "cpu", "--nproc", "2", "--num_envs", "8"),
    *("--max_iterations", "1000", "agent.save_interval=1", "agent.algorithm.num_mini_batches=2"),
]
"""A run that ends only by the kill: small, a checkpoint every iteration."""


def _records(log_root: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in log_root.glob("redline_cartpole/*/metrics.jsonl"))


def _children(pid: int) -> list[int]:
    tasks = Path(f"/proc/{pid}/task").glob("*")
    return [int(c) for task in tasks for c in (task / "children").read_text().split()]


def _rank(pid: int) -> int:
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return int(next(v for v in environ if v.startswith(b"RANK=")).split(b"=", 1)[1])


def test_a_rank_killed_mid_run_is_named_and_the_run_exits_1(tmp_path: Path) -> None:
    log_root, err = tmp_path / "logs", tmp_path / "stderr.txt"
    with open(err, "w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "redline.cli", *ARGS, "--log_root", str(log_root)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        try:
            deadline = time.monotonic() + 600
            while proc.poll() is None and _records(log_root) < 2 and time.monotonic() < deadline:
                time.sleep(0.5)
            assert proc.poll() is None, err.read_text()[-3000:]
            (agent,) = _children(proc.pid)
            (rank_1,) = [pid for pid in _children(agent) if _rank(pid) == 1]
            os.kill(rank_1, signal.SIGKILL)
            status = proc.wait(180)
        finally:
            proc.kill()
    text = err.read_text()
    assert status == 1, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
    assert re.search(r"redline train: error: rank 0: rank 1 \(node 0\) of 2 stopped answering during \w+", text)
    last = text.strip().splitlines()[-1]
    assert last == "redline torchrun: rank 1 (local rank 1 on this node) was killed by SIGKILL; stopping the run"
    (run,) = log_root.glob("redline_cartpole/*")
    saved = list(run.glob("model_*.pt"))
    assert saved and all(intact(p) and load_checkpoint(p) for p in saved)  # whole, finite
    assert json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])["world_size"] == 2
