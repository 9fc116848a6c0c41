"""A run folder's record: written and read back, unfinished runs found by fingerprint or torchrun run id, metrics
trimmed to a checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.errors import UserError
from redline.outputs import run_record
from redline.outputs.run_record import RunRecord
from tests.outputs.run_support import make_run


def test_fingerprint_is_stable_and_tells_commands_apart() -> None:
    a = run_record.fingerprint({"task": "T", "seed": 1, "overrides": ["x=1"]})
    assert a == run_record.fingerprint({"overrides": ["x=1"], "seed": 1, "task": "T"})  # key order is not the command
    assert a != run_record.fingerprint({"task": "T", "seed": 2, "overrides": ["x=1"]})
    assert len(a) == 16


def test_record_round_trip_and_unreadable_records(tmp_path: Path) -> None:
    record = RunRecord("abc", 9, "job7")
    run_record.write_record(tmp_path, record)
    assert run_record.read_record(tmp_path) == record
    (tmp_path / run_record.RECORD).write_text('{"fingerprint": "abc"}')  # no last iteration
    assert run_record.read_record(tmp_path) is None
    assert run_record.read_record(tmp_path / "missing") is None


def test_find_run_takes_the_newest_unfinished_run_of_the_command(tmp_path: Path) -> None:
    older = make_run(tmp_path, "2026-01-01_00-00-00", RunRecord("cmd", 9), saved=(4,))
    newest = make_run(tmp_path, "2026-01-02_00-00-00", RunRecord("cmd", 9), saved=(2, 4))
    make_run(tmp_path, "2026-01-03_00-00-00", RunRecord("cmd", 9), saved=(4, 9))  # finished
    make_run(tmp_path, "2026-01-05_00-00-00", RunRecord("other", 9), saved=(4,))
    make_run(tmp_path, "2026-01-06_00-00-00", None, saved=(4,))  # from before records
    (newest / "model_6.pt").write_bytes(b"cut short")  # a kill mid-write: skipped
    assert run_record.find_run(tmp_path, fingerprint="cmd") == newest
    lock = run_record.RunLock(newest)  # a live process writes in it: not another command's to continue
    assert run_record.in_use(newest) and run_record.find_run(tmp_path, fingerprint="cmd") == older
    with pytest.raises(UserError, match="is being written by another process"):
        run_record.RunLock(newest)
    lock.release()
    assert not run_record.in_use(newest) and run_record.find_run(tmp_path, fingerprint="cmd") == newest
    unsaved = make_run(tmp_path, "2026-01-04_00-00-00", RunRecord("cmd", 9))  # killed before its first checkpoint
    assert run_record.find_run(tmp_path, fingerprint="cmd") == unsaved
    assert run_record.last_checkpoint(unsaved) is None
    assert run_record.last_checkpoint(newest) == newest / "model_4.pt"
    assert run_record.find_run(tmp_path, fingerprint="nobody") is None
    assert run_record.find_run(tmp_path / "missing", fingerprint="cmd") is None


def test_find_run_by_torchrun_id_takes_any_state(tmp_path: Path) -> None:
    make_run(tmp_path, "2026-01-01_00-00-00", RunRecord("cmd", 4, "job7"), saved=(4,))
    newest = make_run(tmp_path, "2026-01-02_00-00-00", RunRecord("cmd", 19, "job7"))
    make_run(tmp_path, "2026-01-03_00-00-00", RunRecord("cmd", 19, "other"))
    assert run_record.find_run(tmp_path, run_id="job7") == newest
    assert run_record.find_run(tmp_path, run_id="nobody") is None


def test_trim_metrics_drops_iterations_no_checkpoint_holds(tmp_path: Path) -> None:
    lines = [json.dumps({"iteration": i}) for i in range(6)]
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + '\n{"iteration": 6, "cut')
    assert run_record.trim_metrics(tmp_path, 3) == 3
    assert [json.loads(x)["iteration"] for x in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [0, 1, 2, 3]
    assert run_record.trim_metrics(tmp_path, 3) == 0
