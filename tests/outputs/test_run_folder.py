"""The run folder a command writes in: a new one created with its record, an interrupted one continued (its metrics
trimmed to the checkpoint), either locked while the process writes in it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.errors import UserError
from redline.outputs import run_folder, run_search
from redline.outputs.run_folder import NewRun, open_run
from redline.outputs.run_search import ResumePlan, RunRecord
from tests.outputs.run_support import make_run


def test_trim_metrics_drops_iterations_no_checkpoint_holds(tmp_path: Path) -> None:
    lines = [json.dumps({"iteration": i}) for i in range(6)]
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + '\n{"iteration": 6, "cut')
    assert run_folder.trim_metrics(tmp_path, 3) == 3
    assert [json.loads(x)["iteration"] for x in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [0, 1, 2, 3]
    assert run_folder.trim_metrics(tmp_path, 3) == 0


def test_a_new_run_gets_a_locked_folder_with_its_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = NewRun(tmp_path, "exp", "walk", "cmd", "job7")
    lock = open_run(ResumePlan(), -1, 10, new)
    assert lock.run_dir.parent == (tmp_path / "exp").resolve() and lock.run_dir.name.endswith("_walk")
    assert run_search.read_record(lock.run_dir) == RunRecord("cmd", 9, "job7")  # iterations 0..9
    assert run_search.in_use(lock.run_dir) and capsys.readouterr().out == ""
    second = open_run(ResumePlan(tmp_path / "exp" / "elsewhere" / "model_4.pt"), 4, 10, new)  # rsl_rl's --resume
    assert second.run_dir != lock.run_dir and run_search.read_record(second.run_dir) == RunRecord("cmd", 14, "job7")
    assert "resuming from" in capsys.readouterr().out
    lock.release()
    second.release()
    assert not run_search.in_use(lock.run_dir)


def test_a_continued_run_is_locked_then_trimmed_to_its_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(tmp_path, "2026-01-02_00-00-00", RunRecord("cmd", 9), saved=(2, 4))
    (run / "metrics.jsonl").write_text("".join(json.dumps({"iteration": i}) + "\n" for i in range(7)))
    plan = ResumePlan(run / "model_4.pt", run, 9, found_by="same command")
    lock = open_run(plan, 4, 5, NewRun(tmp_path, "exp", None, "cmd", None))
    assert lock.run_dir == run and len((run / "metrics.jsonl").read_text().splitlines()) == 5  # iterations 0..4
    line = capsys.readouterr().out
    assert "continuing this command's unfinished run" in line and "after iteration 4, to iteration 9" in line
    (run / "metrics.jsonl").write_text(json.dumps({"iteration": 8}) + "\n")
    with pytest.raises(UserError, match="is being written by another process"):
        open_run(plan, 4, 5, NewRun(tmp_path, "exp", None, "cmd", None))
    assert (run / "metrics.jsonl").read_text().strip()  # the live run's metrics are left alone
    lock.release()
