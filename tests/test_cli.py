"""Bad input: one line naming the field and the valid values, exit status 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from redline.cli import main


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["train", "--task", "Redline-Cartpol"], "did you mean Redline-Cartpole"),
        (["train", "--task", "Nope"], "unknown task 'Nope'"),
        (["train", "--task", "Redline-Cartpole", "--num_envs", "0"], "--num_envs: must be a positive integer"),
        (["train", "--task", "Redline-Cartpole", "--num_envs", "12.5"], "--num_envs: must be a positive integer"),
        (["train", "--task", "Redline-Cartpole", "--seed", "-1"], "--seed: must be an integer in [0, 4294967295]"),
        (["train", "--task", "Redline-Cartpole", "--device", "tpu"], "valid: cpu, cuda, cuda:N"),
        (
            ["train", "--task", "Redline-Cartpole", "--learner", "sb3"],
            "--learner: unknown learner 'sb3' (valid: redline, rsl_rl)",
        ),
        (["train", "--task", "Redline-Cartpole", "--frobnicate"], "unrecognized argument '--frobnicate'"),
        (["play", "--task", "Redline-Cartpole", "--checkpoint", "/no/such/model_3.pt"], "does not exist"),
        (["play", "--task", "Redline-Cartpole", "--steps", "0"], "--steps: must be a positive integer"),
        (["train", "--task", "Redline-Cartpole", "--seeding", "random"], "unknown strategy 'random' (valid: shared"),
        (["train", "--task", "Redline-Cartpole", "env.seeding.strategy=perenv"], "unknown strategy 'perenv'"),
        (["train", "--task", "Redline-Cartpole", "--distributed"], "--distributed: not started by torchrun"),
        (["train", "--task", "Redline-Cartpole", "--nproc", "2", "--distributed"], "--nproc: starts torchrun itself"),
        (["train", "--task", "Redline-Cartpole", "--dist_timeout", "0"], "--dist_timeout: must be a positive number"),
        (["bench", "distributed", "--shape", "huge"], "argument --shape: invalid choice: 'huge'"),
        (["list", "extra"], "unrecognized arguments: extra"),
        (["fly"], "invalid choice: 'fly'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv: list[str], expected: str, capsys: pytest.CaptureFixture) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert expected in err[0]
    assert err[0].startswith("redline")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_cuda_without_gpu_is_refused(capsys: pytest.CaptureFixture) -> None:
    assert main(["train", "--task", "Redline-Cartpole", "--device", "cuda"]) == 2
    assert "no CUDA GPU is available (valid here: cpu)" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_rsl_rl_multi_process_on_cpu_is_refused_before_launch(capsys: pytest.CaptureFixture) -> None:
    assert main(["train", "--task", "Redline-Cartpole", "--nproc", "2", "--learner", "rsl_rl"]) == 2
    assert "rsl_rl's multi-process training needs CUDA (NCCL); on CPU use --learner redline" in capsys.readouterr().err


def test_console_script_prints_no_traceback() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "redline.cli", "train", "--task", "Redline-Cartpole", "--num_envs", "-4"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == "redline train: error: argument --num_envs: must be a positive integer, got '-4'"


def test_list_shows_every_task_and_its_play_twin(capsys: pytest.CaptureFixture) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for task in ("Redline-Cartpole", "Redline-Ant", "Redline-Velocity-Flat-Go1", "Redline-Velocity-Flat-G1"):
        assert f"\n{task} " in out and f"\n{task}-Play " in out


def test_a_stop_signal_is_exit_status_128_plus_it_and_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    import signal
    from pathlib import Path

    import redline.commands.train as train_command
    from redline.runners.stop import Stopped

    def stopped(opts: object, stop: object = None) -> None:
        raise Stopped(signal.SIGTERM, 7, Path("run/model_7.pt"))

    monkeypatch.setattr(train_command, "train", stopped)
    assert main(["train", "--task", "Redline-Cartpole"]) == 143
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "redline train: stopped by SIGTERM after iteration 7; checkpoint run/model_7.pt (continue with --resume)"
    ]


def test_an_output_that_cannot_be_written_is_exit_status_74_and_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    import errno

    import redline.commands.train as train_command
    from redline.errors import OutputError

    def full(opts: object, stop: object = None) -> None:
        exc = OSError(errno.ENOSPC, "No space left on device")
        raise OutputError.writing("checkpoint", "run/model_9.pt", exc, "the checkpoints saved before it are kept")

    monkeypatch.setattr(train_command, "train", full)
    assert main(["train", "--task", "Redline-Cartpole"]) == 74
    assert capsys.readouterr().err.strip().splitlines() == [
        "redline train: error: checkpoint: could not write 'run/model_9.pt' (No space left on device); the "
        "checkpoints saved before it are kept"
    ]


def test_a_deleted_working_directory_is_one_line(tmp_path: Path) -> None:
    """Before: 'Intel oneMKL FATAL ERROR: Cannot load .../libtorch_cpu.so.' and exit 2 from torch's import."""
    gone = tmp_path / "gone"
    gone.mkdir()
    redline = Path(sys.executable).parent / "redline"
    script = f"cd '{gone}' && rmdir '{gone}' && exec '{redline}' train --task Redline-Cartpole --device cpu --nproc 1"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert (done.returncode, done.stderr.splitlines()) == (
        2,
        ["redline: error: the working directory no longer exists; cd to an existing folder"],
    )


HEAVY = ("torch", "tensordict", "rsl_rl", "isaaclab", "isaaclab_rl", "isaaclab_tasks", "warp", "newton", "numpy")
"""Packages that take seconds to import: the CLI parses and refuses bad input before any of them loads."""


@pytest.mark.parametrize(
    "argv", [["--help"], ["train", "--help"], ["train", "--task", "Redline-Cartpole", "--num_envs", "0"]]
)
def test_help_and_bad_input_import_no_heavy_package(argv: list[str]) -> None:
    """An import moved to a module's top must not pull torch, Isaac Lab or Warp in before the arguments are parsed."""
    code = (
        "import contextlib, sys\nfrom redline.cli import main\nwith contextlib.suppress(SystemExit):\n"
        f"    main({argv!r})\nprint(' '.join(sorted({{m.partition('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.splitlines()[-1:] in ([""], []), done.stdout
