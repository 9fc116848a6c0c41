"""Faults of the world around a run, without filling a disk: a writer that raises ``OSError(ENOSPC)`` (or writes
short) stands in for a full disk, and a log root under ``/proc``, through a symlink loop or behind a file for an
unusable one. Essential outputs (checkpoints, ``metrics.jsonl``, exports) stop the run with one line naming what and
where (:class:`OutputError`, exit 74) and leave what was written before whole; TensorBoard events, the progress
display and training videos warn once and training goes on."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch

from redline.errors import OutputError, UserError
from redline.outputs import metrics as metrics_module
from redline.outputs.checkpoints import load_checkpoint, save_atomic
from redline.outputs.folders import check_writable
from redline.outputs.metrics import MetricsLog
from redline.outputs.run_folder import new_run_dir

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _ckpt(it: int) -> dict:
    return {"actor_state_dict": {"w": torch.full((2,), float(it))}, "critic_state_dict": {}, "iter": it}


def _record(it: int) -> dict[str, Any]:
    return {"iteration": it, "sps": 1.0, "collect_s": 0.1, "learn_s": 0.1, "mean_reward": 1.0}


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics_module, "_warned", set(), raising=False)


# the log root: created and test-written before the simulator starts -------------------------------------------------


def _loop(tmp_path: Path) -> Path:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    return tmp_path / "a" / "logs"


LOG_ROOTS = [
    ("proc", lambda tmp: Path("/proc/redline-logs"), "No such file or directory"),
    ("symlink loop", _loop, "Too many levels of symbolic links"),
    ("file in the way", lambda tmp: tmp / "file" / "logs", "is a file, not a folder"),
]


@pytest.mark.parametrize(("make", "reason"), [c[1:] for c in LOG_ROOTS], ids=[c[0] for c in LOG_ROOTS])
def test_an_unusable_log_root_is_one_line_naming_it(tmp_path: Path, make: Any, reason: str) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match=r"^--log_root: ") as caught:
        check_writable(make(tmp_path), "--log_root")
    assert reason in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("failing", ["write", "fsync"])
def test_a_full_or_read_only_log_root_is_found_by_the_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    def fails(*args: Any) -> None:
        raise ENOSPC if failing == "write" else OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(os, failing, fails)
    with pytest.raises(UserError) as caught:
        check_writable(tmp_path / "logs", "--log_root")
    monkeypatch.undo()
    expected = "No space left on device" if failing == "write" else "Read-only file system"
    assert str(caught.value).startswith(f"--log_root: cannot write to '{tmp_path / 'logs'}") and expected in str(
        caught.value
    )
    assert list((tmp_path / "logs").iterdir()) == []  # the probe file is gone


def test_a_run_folder_that_cannot_be_created_is_an_output_error(tmp_path: Path) -> None:
    (tmp_path / "exp").write_text("a file where the experiment folder goes")
    with pytest.raises(OutputError, match=r"^run folder: could not write '.*exp'"):
        new_run_dir(tmp_path, "exp")


# checkpoints ------------------------------------------------------------------------------------------------------


def test_a_full_disk_while_saving_keeps_the_previous_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_atomic(_ckpt(1), tmp_path / "model_1.pt")

    def full(obj: Any, f: Any, *args: Any, **kwargs: Any) -> None:
        f.write(b"PK\x03\x04 part of a zip")
        raise ENOSPC

    monkeypatch.setattr(torch, "save", full)
    with pytest.raises(OutputError) as caught:
        save_atomic(_ckpt(2), tmp_path / "model_2.pt")
    monkeypatch.undo()
    assert str(caught.value) == (
        f"checkpoint: could not write '{tmp_path / 'model_2.pt'}' (No space left on device); the checkpoints saved "
        "before it are kept"
    )
    assert caught.value.exit_status == 74
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model_1.pt"]  # no temporary file, the old one whole
    assert load_checkpoint(tmp_path / "model_1.pt")["iter"] == 1


def test_the_runner_stops_on_a_failed_save_with_its_earlier_checkpoints_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from redline.bench.shapes import DummyVecEnv, rsl_rl_cfg
    from redline.learning import PPOConfig
    from redline.runners import redline_runner as runner_module
    from redline.runners.redline_runner import RedlineRunner

    cfg = PPOConfig.from_rsl_rl(rsl_rl_cfg({"steps": 8, "hidden": [16, 16]}, bf16=False), precision="fp32")
    runner = RedlineRunner(DummyVecEnv(num_envs=8, seed=0), cfg, tmp_path, "cpu", seed=0, save_interval=1)
    real_save = runner_module.save_atomic

    def full_from_2(obj: Any, path: Path) -> None:
        if obj["iter"] >= 2:
            raise OutputError.writing("checkpoint", path, ENOSPC)
        real_save(obj, path)

    monkeypatch.setattr(runner_module, "save_atomic", full_from_2)
    with pytest.raises(OutputError, match=r"model_2\.pt' \(No space left on device\)"):
        runner.learn(5)
    assert sorted(p.name for p in tmp_path.glob("model_*.pt")) == ["model_0.pt", "model_1.pt"]
    assert load_checkpoint(tmp_path / "model_1.pt")["iter"] == 1
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["iteration"] for line in lines] == [0, 1, 2]  # whole lines only


# metrics.jsonl ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["raises", "short write"])
def test_a_full_disk_while_appending_metrics_leaves_whole_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    log = MetricsLog(tmp_path, 3, live=False)
    log.write(_record(0))
    real_write = os.write

    def full(fd: int, data: bytes) -> int:
        if fault == "raises":
            raise ENOSPC
        return real_write(fd, data[:7])  # the disk filled after 7 bytes

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OutputError) as caught:
        log.write(_record(1))
    monkeypatch.undo()
    assert str(caught.value) == (
        f"metrics: could not write '{tmp_path / 'metrics.jsonl'}' (No space left on device); the lines written "
        "before it are kept"
    )
    log.close()
    text = (tmp_path / "metrics.jsonl").read_text()
    assert text.endswith("\n") and [json.loads(line)["iteration"] for line in text.splitlines()] == [0]


class _BrokenWriter:
    def __init__(self) -> None:
        self.calls = 0

    def add_scalar(self, *args: Any) -> None:
        self.calls += 1
        raise ENOSPC

    def flush(self) -> None:
        raise ENOSPC


def test_tensorboard_events_that_cannot_be_written_warn_once_and_training_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    writer = _BrokenWriter()
    log = MetricsLog(tmp_path, 3, writer=writer, live=False)
    for it in range(3):
        log.write(_record(it))
    log.close()
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"[redline] warning: TensorBoard events: could not write '{tmp_path}' (No space left on device); "
        "continuing without it"
    ]
    assert writer.calls == 1  # dropped after the first failure
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 3


def test_a_closed_stdout_does_not_stop_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """``redline train ... | head``: the pipe closes; the progress lines stop, the run does not."""
    import builtins

    def broken(*args: Any, **kwargs: Any) -> None:
        if kwargs.get("file") is None:
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    log = MetricsLog(tmp_path, 3, live=False)
    monkeypatch.setattr(builtins, "print", broken)
    for it in range(3):
        log.write(_record(it))
    monkeypatch.undo()
    log.close()
    assert len((tmp_path / "metrics.jsonl").read_text().splitlines()) == 3


# exports ----------------------------------------------------------------------------------------------------------


def test_a_full_disk_during_an_export_keeps_the_previous_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from redline.media import export

    out = tmp_path / "exported" / "model_3"
    out.mkdir(parents=True)
    (out / "policy.pt").write_text("the earlier export")

    def full(actor: Any, jit_path: Path, onnx_path: Path) -> None:
        jit_path.write_text("half")
        raise ENOSPC

    monkeypatch.setattr(export, "_write", full)
    with pytest.raises(OutputError, match=f"^export: could not write '{out}' \\(No space left on device\\)"):
        export.export_policy(object(), out)
    assert (out / "policy.pt").read_text() == "the earlier export"
    assert [p.name for p in out.parent.iterdir()] == ["model_3"]  # no staging folder left
