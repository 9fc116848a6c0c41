"""Launching multi-process training: the launch plan and the torchrun command line written from it, and a
rendezvous that cannot be reached."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from redline import options
from redline.cli import build_parser, main
from redline.commands import launch, preflight
from redline.commands.launch import auto_nproc, plan_launch
from redline.commands.spawn import torchrun_command
from redline.envs import prepare
from redline.options import TrainOptions


def _parsed(argv: list[str]) -> TrainOptions:
    """``redline <argv>``'s train options, as the CLI reads them."""
    args, extra = build_parser(argv).parse_known_args(argv)
    return options.from_arguments(TrainOptions, args, extra)


def test_nproc_becomes_a_standalone_torchrun_of_the_same_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--nproc 4``: the workers' command is written from the options (argv is never edited): the same options,
    ``--distributed`` in place of ``--nproc``, ``--num_envs`` per process as given."""
    checked: list[TrainOptions] = []
    monkeypatch.setattr(preflight, "check_launch", checked.append)
    opts = _parsed(
        ["train", "--task", "Redline-Cartpole", "--nproc", "4", "--num_envs", "64", "--seed", "3", "env.x=1"]
    )
    plan = plan_launch(opts)
    assert (plan.nproc, plan.torchrun, plan.automatic, plan.options.run.num_envs) == (4, True, False, 64)
    assert checked == [opts]  # validated once, in the launching process, with the process count
    command = torchrun_command(plan.nproc, plan.worker_argv)
    assert command[:5] == [sys.executable, "-m", "redline.commands.torchrun", "--standalone", "--nproc_per_node=4"]
    assert command[5:] == [
        *("-m", "redline.cli", "train", "--task=Redline-Cartpole", "--num_envs=64", "--seed=3", "--distributed"),
        "env.x=1",
    ]
    assert _parsed(command[7:]) == plan.options  # what each worker reads back


@pytest.mark.parametrize(
    ("total", "cores", "expected"),
    [(1024, 2, 2), (512, 2, 2), (256, 2, 1), (64, 2, 1), (1023, 2, 1), (1024, 1, 1), (768, 4, 3), (4096, 16, 16)],
)
def test_the_cores_are_filled_with_an_even_split_of_enough_envs(total: int, cores: int, expected: int) -> None:
    """One process per core when the envs split evenly with >= MIN_ENVS_PER_RANK (256) each; else fewer."""
    assert auto_nproc(total, cores) == expected


def test_the_workers_get_the_per_process_env_count_in_place_of_the_total(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a process count on a 2-core CPU: the total (``env.scene.num_envs`` too) becomes 2 x 512."""
    monkeypatch.delenv("REDLINE_NPROC")
    monkeypatch.setattr(launch, "usable_cores", lambda: 2)
    monkeypatch.setattr(preflight, "check_launch", lambda opts: None)
    scene = type("Cfg", (), {"scene": type("Scene", (), {"num_envs": 1024})})
    prepared = type("Prepared", (), {"device": "cpu", "env_cfg": scene})
    monkeypatch.setattr(prepare, "prepare_env", lambda run, agent_entry_point=None: prepared)
    opts = _parsed(["train", "--task", "T", "--num_envs", "1024", "env.scene.num_envs=8", "agent.x=1"])
    plan = plan_launch(opts)
    assert (plan.nproc, plan.torchrun, plan.automatic) == (2, True, True)
    assert plan.worker_argv == ["train", "--task=T", "--num_envs=512", "--distributed", "agent.x=1"]
    assert opts.run.num_envs == 1024 and "env.scene.num_envs=8" in opts.run.overrides  # the command's, untouched


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
from redline.commands import spawn
from redline.errors import ExpectedExit
spawn.torchrun_command = lambda nproc, argv: [sys.executable, "-c", sys.argv[1], sys.argv[2]]
try:
    spawn.run_torchrun(2, ["train", "--task=T", "--device=cpu", "--distributed"], "cpu")
except ExpectedExit as exc:
    print(f"redline train: {exc}", file=sys.stderr)
    sys.exit(exc.exit_status)
"""
"""``redline train --nproc 2``'s launcher (``spawn.run_torchrun``), as the CLI ends an expected exit, over
:data:`AGENT`."""


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


def test_too_many_envs_are_refused_before_torch_is_imported() -> None:
    """The launch plan's first check, the env count against this host's memory, costs milliseconds: it runs before
    torch or Isaac Lab is imported (a planted top-level import of the train command in launch.py fails this)."""
    code = (
        "import sys\n"
        "from redline.cli import main\n"
        "status = main(['train', '--task', 'Redline-Cartpole', '--num_envs', '3000000000'])\n"
        "print(status, sorted(m for m in ('torch', 'isaaclab') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.split("\n")[0] == "2 []", proc.stderr[-2000:]
    assert "--num_envs: 3000000000 envs of Redline-Cartpole need an estimated" in proc.stderr
