"""Launching multi-process training: the torchrun command line, and a rendezvous that cannot be reached."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from redline.commands.launch import strip_nproc, torchrun_command


def test_nproc_becomes_a_standalone_torchrun_of_the_same_command() -> None:
    argv = ["train", "--task", "Redline-Cartpole", "--nproc", "4", "--num_envs", "64", "--nproc=4", "env.x=1"]
    assert strip_nproc(argv) == ["train", "--task", "Redline-Cartpole", "--num_envs", "64", "env.x=1"]
    command = torchrun_command(4, strip_nproc(argv))
    assert command[:5] == [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=4"]
    assert command[5:8] == ["-m", "redline.cli", "train"] and command[-1] == "--distributed"


def test_unreachable_rendezvous_is_one_line_within_the_timeout() -> None:
    env = {**os.environ, "RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1"}
    env["MASTER_PORT"] = "9"  # discard: nothing listens there
    argv = ["train", "--task", "Redline-Cartpole", "--distributed", "--dist_timeout", "2", "--device", "cpu"]
    proc = subprocess.run(
        [sys.executable, "-m", "redline.cli", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines[0].startswith("redline train: error: --distributed: rank 1 could not join the process group at")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"RANK": "abc"}, "--distributed: RANK='abc' is not a non-negative integer (set by torchrun)"),
        ({"WORLD_SIZE": "-2"}, "--distributed: WORLD_SIZE='-2' is not a non-negative integer (set by torchrun)"),
        ({"RANK": "3", "WORLD_SIZE": "2"}, "--distributed: RANK=3 and WORLD_SIZE=2 (valid: 0 <= RANK < WORLD_SIZE)"),
    ],
)
def test_odd_torchrun_variables_are_one_line(monkeypatch: pytest.MonkeyPatch, env: dict, expected: str) -> None:
    from redline.commands.launch import init
    from redline.errors import UserError

    base = {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "localhost", "MASTER_PORT": "1"}
    for key, value in (base | env).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(UserError) as caught:
        init("cpu", 5.0)
    assert str(caught.value) == expected
