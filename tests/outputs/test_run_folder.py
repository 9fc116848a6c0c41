"""The run folder a command writes in: a new one created with its record, an interrupted one continued (its metrics
trimmed to the checkpoint), either locked while the process writes in it and removed if the run stops before its
first checkpoint."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from redline.errors import OutputError, UserError
from redline.outputs import run_folder, run_search
from redline.outputs.run_folder import NewRun, opened
from redline.outputs.run_search import ResumePlan, RunRecord
from tests.outputs.run_support import make_run


def test_trimmed_metrics_drop_iterations_no_checkpoint_holds(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text("\n".join(json.dumps({"iteration": i}) for i in range(6)) + '\n{"iteration": 6, "cut')
    assert [json.loads(x)["iteration"] for x in (run_folder.trimmed_metrics(path, 3) or "").splitlines()] == [
        0,
        1,
        2,
        3,
    ]
    path.write_text("".join(json.dumps({"iteration": i}) + "\n" for i in range(3)))
    assert run_folder.trimmed_metrics(path, 3) is None  # nothing to drop
    assert run_folder.trimmed_metrics(tmp_path / "missing.jsonl", 3) is None


def test_a_new_run_gets_a_locked_folder_with_its_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    new = NewRun(tmp_path, "exp", "walk", "cmd", "job7")
    with opened(ResumePlan(), -1, 10, new) as run_dir:
        assert run_dir is not None and run_dir.parent == (tmp_path / "exp").resolve() and run_dir.name.endswith("_walk")
        assert run_search.read_record(run_dir) == RunRecord("cmd", 9, "job7")  # iterations 0..9
        assert run_search.in_use(run_dir) and capsys.readouterr().out == ""
        with opened(ResumePlan(tmp_path / "elsewhere" / "model_4.pt"), 4, 10, new) as second:  # rsl_rl's --resume
            assert second is not None and second != run_dir
            assert run_search.read_record(second) == RunRecord("cmd", 14, "job7")
            assert "resuming from" in capsys.readouterr().out
        (run_dir / "model_0.pt").write_bytes(b"saved")
    assert not run_search.in_use(run_dir) and run_dir.is_dir() and second.is_dir()
    with opened(ResumePlan(), -1, 10, None) as nothing:  # a rank other than 0 writes no files
        assert nothing is None


def test_a_run_that_stops_before_its_first_checkpoint_leaves_no_folder(tmp_path: Path) -> None:
    with pytest.raises(OutputError), opened(ResumePlan(), -1, 10, NewRun(tmp_path, "exp", None, "cmd", None)) as d:
        raise OutputError("checkpoint: the disk is full")  # an expected exit before the first save
    assert d is not None and not d.exists()
    with pytest.raises(KeyError), opened(ResumePlan(), -1, 10, NewRun(tmp_path, "exp", None, "cmd", None)) as kept:
        raise KeyError("a bug")  # not an expected exit: the folder stays, to be looked at
    assert kept is not None and kept.is_dir()


def test_a_continued_run_is_locked_then_trimmed_to_its_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run(tmp_path, "2026-01-02_00-00-00", RunRecord("cmd", 9), saved=(2, 4))
    (run / "metrics.jsonl").write_text("".join(json.dumps({"iteration": i}) + "\n" for i in range(7)))
    plan = ResumePlan(run / "model_4.pt", run, 9, found_by="same command")
    new = NewRun(tmp_path, "exp", None, "cmd", None)
    with opened(plan, 4, 5, new) as run_dir:
        assert run_dir == run and len((run / "metrics.jsonl").read_text().splitlines()) == 5  # iterations 0..4
        line = capsys.readouterr().out
        assert "continuing this command's unfinished run" in line and "after iteration 4, to iteration 9" in line
        (run / "metrics.jsonl").write_text(json.dumps({"iteration": 8}) + "\n")
        with pytest.raises(UserError) as busy, opened(plan, 4, 5, new):  # the same command, started twice at once
            pass
        assert str(busy.value) == (
            f"this command's unfinished run '{run}' is being continued by another process (the same command started "
            "twice at once); run it again for a run of its own"
        )  # no --resume: the user gave none
        resume = dataclasses.replace(plan, found_by="resume")
        with (
            pytest.raises(UserError, match=r"^--resume: run folder .* is being written by another"),
            opened(resume, 4, 5, new),
        ):
            pass
        assert (run / "metrics.jsonl").read_text().strip()  # the live run's metrics are left alone
    assert not run_search.in_use(run)


def test_readers_never_delete_and_the_lock_holder_removes_stale_temps(tmp_path: Path) -> None:
    run = make_run(tmp_path, "2026-01-02_00-00-00", RunRecord("cmd", 9), saved=(2, 4))
    # a save in progress by a process this one cannot see (another container, another host): its pid is not alive here
    live = run / f".model_6.pt.{2**31 - 1}.tmp"
    live.write_bytes(b"half a checkpoint")
    fd = run_folder.lock(run)  # ... and that process holds the run's lock
    assert run_search.resolve_checkpoint("latest", tmp_path) == run / "model_4.pt"  # play --checkpoint latest
    assert run_search.resolve_checkpoint(str(run), tmp_path) == run / "model_4.pt"
    assert run_search.plan_resume("latest", tmp_path, None, "other") == ResumePlan(run / "model_4.pt")  # a branch
    assert run_search.last_checkpoint(run) == run / "model_4.pt"
    assert run_search.find_run(tmp_path, fingerprint="cmd") is None
    assert live.read_bytes() == b"half a checkpoint"  # the readers deleted nothing
    os.close(fd)  # the writer died mid-save: the next process that locks the folder removes its temporary file
    plan = ResumePlan(run / "model_4.pt", run, 9, found_by="same command")
    with opened(plan, 4, 5, NewRun(tmp_path, "exp", None, "cmd", None)) as run_dir:
        assert run_dir == run and not live.exists()
        assert sorted(p.name for p in run.glob("model_*.pt")) == ["model_2.pt", "model_4.pt"]
