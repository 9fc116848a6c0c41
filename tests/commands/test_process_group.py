"""Launching multi-process training: the torchrun command line, and a rendezvous that cannot be reached."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from redline.cli import main
from redline.commands.process_group import auto_nproc, strip_nproc, torchrun_command, with_num_envs


def test_nproc_becomes_a_standalone_torchrun_of_the_same_command() -> None:
    argv = ["train", "--task", "Redline-Cartpole", "--nproc", "4", "--num_envs", "64", "--nproc=4", "env.x=1"]
    assert strip_nproc(argv) == ["train", "--task", "Redline-Cartpole", "--num_envs", "64", "env.x=1"]
    command = torchrun_command(4, strip_nproc(argv))
    assert command[:5] == [sys.executable, "-m", "redline.commands.torchrun", "--standalone", "--nproc_per_node=4"]
    assert command[5:8] == ["-m", "redline.cli", "train"] and command[-1] == "--distributed"


@pytest.mark.parametrize(
    ("total", "cores", "expected"),
    [(1024, 2, 2), (512, 2, 2), (256, 2, 1), (64, 2, 1), (1023, 2, 1), (1024, 1, 1), (768, 4, 3), (4096, 16, 16)],
)
def test_the_cores_are_filled_with_an_even_split_of_enough_envs(total: int, cores: int, expected: int) -> None:
    """One process per core when the envs split evenly with >= MIN_ENVS_PER_RANK (256) each; else fewer."""
    assert auto_nproc(total, cores) == expected


def test_the_workers_get_the_per_process_env_count_in_place_of_the_total() -> None:
    argv = ["train", "--task", "T", "--num_envs", "1024", "env.scene.num_envs=8", "--num_envs=4", "agent.x=1"]
    assert with_num_envs(argv, 512) == ["train", "--task", "T", "agent.x=1", "--num_envs", "512"]


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_redline_nproc_is_one_line(value: str, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("REDLINE_NPROC", value)
    assert main(["train", "--task", "Redline-Cartpole", "--device", "cpu"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"redline train: error: REDLINE_NPROC: must be a positive integer, got '{value}'"
    )


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
        # read by Isaac Lab's USD spawner too (int(), a ValueError traceback while building the scene, issue 22)
        ({"LOCAL_WORLD_SIZE": "abc"}, "--distributed: LOCAL_WORLD_SIZE='abc' is not a non-negative integer (set by "),
        ({"LOCAL_WORLD_SIZE": "0"}, "--distributed: LOCAL_WORLD_SIZE=0 and LOCAL_RANK=0 (valid: 0 <= LOCAL_RANK < "),
        ({"LOCAL_WORLD_SIZE": "3"}, "--distributed: LOCAL_WORLD_SIZE=3 and LOCAL_RANK=0 (valid: 0 <= LOCAL_RANK < "),
    ],
)
def test_odd_torchrun_variables_are_one_line(monkeypatch: pytest.MonkeyPatch, env: dict, expected: str) -> None:
    from redline.commands.process_group import init
    from redline.errors import UserError

    base = {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "localhost", "MASTER_PORT": "1"}
    for key, value in (base | env).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(UserError) as caught:
        init("cpu", 5.0)
    assert str(caught.value).startswith(expected)


AGENT = """
import os, signal, subprocess, sys
worker = (
    "import signal, sys, time\\n"
    "def stop(signum, frame):\\n"
    "    open(sys.argv[1], 'w').write('saved'); sys.exit(143)\\n"
    "signal.signal(signal.SIGTERM, stop)\\n"
    "print('ready', flush=True)\\n"
    "time.sleep(120)\\n"
)
for i in range(2):  # as torchrun starts them: each in a session of its own
    args = [sys.executable, "-c", worker, f"{sys.argv[1]}/{i}"]
    subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True).stdout.readline()
os.kill(os.getpid(), signal.SIGKILL)  # what `kill -9 $(pgrep -f -- --distributed | head -1)` hits: the agent
"""
"""A stand-in for torchrun's agent: starts two workers that save on SIGTERM, then is killed by SIGKILL."""

LAUNCHER = """
import sys
from redline.commands import process_group
from redline.errors import ExpectedExit
process_group.torchrun_command = lambda nproc, argv: [sys.executable, "-c", sys.argv[1], sys.argv[2]]
try:
    process_group.launch(2, [], "cpu")
except ExpectedExit as exc:
    print(f"redline train: {exc}", file=sys.stderr)
    sys.exit(exc.exit_status)
"""
"""``redline train --nproc 2``'s launcher (``launch``), as the CLI ends an expected exit, over :data:`AGENT`."""


def test_a_killed_torchrun_agent_has_its_workers_stopped_in_one_line(tmp_path: Path) -> None:
    """The agent killed (issue 37 item 7: the workers trained on, unseen, and `redline train` exited 247 without a
    word): the launcher adopts the workers, stops them with SIGTERM (each saves), ends in one line, exit 1."""
    proc = subprocess.run(
        [sys.executable, "-c", LAUNCHER, AGENT, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert re.fullmatch(
        r"redline train: torchrun's agent \(pid \d+\) was killed by SIGKILL; stopped its 2 worker\(s\) with SIGTERM "
        r"\(each saves the iteration in progress; continue with --resume\)",
        last,
    ), proc.stderr[-3000:]
    assert [(tmp_path / str(i)).read_text() for i in range(2)] == ["saved", "saved"]
    assert "Traceback" not in proc.stderr
