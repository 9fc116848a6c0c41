"""Finding runs: a record read back, unfinished runs found by fingerprint or torchrun run id, and where a command
resumes: an interrupted run of the same command continues in its folder to its planned end (by ``--resume``, by the
same command again, by an elastic restart); anything else resumed starts a new run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from redline.errors import UserError
from redline.outputs import elastic, run_search
from redline.outputs.run_folder import lock
from redline.outputs.run_search import RESUME_NEVER, ResumePlan, RunRecord, plan_resume, resolve_checkpoint
from tests.outputs.run_support import make_run, write_record


def test_fingerprint_is_stable_and_tells_commands_apart() -> None:
    a = run_search.fingerprint({"task": "T", "seed": 1, "overrides": ["x=1"]})
    assert a == run_search.fingerprint({"overrides": ["x=1"], "seed": 1, "task": "T"})  # key order is not the command
    assert a != run_search.fingerprint({"task": "T", "seed": 2, "overrides": ["x=1"]})
    assert len(a) == 16


def test_record_round_trip_and_unreadable_records(tmp_path: Path) -> None:
    record = RunRecord("abc", 9, "job7")
    write_record(tmp_path, record)
    assert run_search.read_record(tmp_path) == record
    (tmp_path / run_search.RECORD).write_text('{"fingerprint": "abc"}')  # no last iteration
    assert run_search.read_record(tmp_path) is None
    assert run_search.read_record(tmp_path / "missing") is None


def test_find_run_takes_the_newest_unfinished_run_of_the_command(tmp_path: Path) -> None:
    older = make_run(tmp_path, "2026-01-01_00-00-00", RunRecord("cmd", 9), saved=(4,))
    newest = make_run(tmp_path, "2026-01-02_00-00-00", RunRecord("cmd", 9), saved=(2, 4))
    make_run(tmp_path, "2026-01-03_00-00-00", RunRecord("cmd", 9), saved=(4, 9))  # finished
    make_run(tmp_path, "2026-01-05_00-00-00", RunRecord("other", 9), saved=(4,))
    make_run(tmp_path, "2026-01-06_00-00-00", None, saved=(4,))  # from before records
    (newest / "model_6.pt").write_bytes(b"cut short")  # a kill mid-write: skipped
    assert run_search.find_run(tmp_path, fingerprint="cmd") == newest
    fd = lock(newest)  # a live process writes in it: not another command's to continue
    assert run_search.in_use(newest) and run_search.find_run(tmp_path, fingerprint="cmd") == older
    with pytest.raises(UserError, match="is being written by another process"):
        lock(newest)
    os.close(fd)
    assert not run_search.in_use(newest) and run_search.find_run(tmp_path, fingerprint="cmd") == newest
    unsaved = make_run(tmp_path, "2026-01-04_00-00-00", RunRecord("cmd", 9))  # killed before its first checkpoint
    assert run_search.find_run(tmp_path, fingerprint="cmd") == unsaved
    assert run_search.last_checkpoint(unsaved) is None
    assert run_search.last_checkpoint(newest) == newest / "model_4.pt"
    assert run_search.find_run(tmp_path, fingerprint="nobody") is None
    assert run_search.find_run(tmp_path / "missing", fingerprint="cmd") is None


def test_find_run_by_torchrun_id_takes_any_state(tmp_path: Path) -> None:
    make_run(tmp_path, "2026-01-01_00-00-00", RunRecord("cmd", 4, "job7"), saved=(4,))
    newest = make_run(tmp_path, "2026-01-02_00-00-00", RunRecord("cmd", 19, "job7"))
    make_run(tmp_path, "2026-01-03_00-00-00", RunRecord("cmd", 19, "other"))
    assert run_search.find_run(tmp_path, run_id="job7") == newest
    assert run_search.find_run(tmp_path, run_id="nobody") is None


def test_the_same_command_again_continues_its_unfinished_run(tmp_path: Path) -> None:
    run = make_run(tmp_path, "2026-01-02_00-00-00", RunRecord("cmd", 9), saved=(2, 4))
    plan = plan_resume(None, tmp_path, None, "cmd")
    assert plan == ResumePlan(run / "model_4.pt", run, 9, found_by="same command")
    assert plan.iterations(4, max_iterations=10) == 5  # iterations 5..9: the planned end, not 10 more
    assert plan_resume(None, tmp_path, None, "another command") == ResumePlan()
    assert plan_resume(RESUME_NEVER, tmp_path, None, "cmd") == ResumePlan()
    unsaved = make_run(tmp_path, "2026-01-03_00-00-00", RunRecord("cmd", 9))  # killed before its first checkpoint
    assert plan_resume(None, tmp_path, None, "cmd") == ResumePlan(
        None, unsaved, 9, found_by="same command"
    )  # starts over there


def test_resume_of_an_interrupted_run_continues_it_else_starts_a_new_run(tmp_path: Path) -> None:
    run = make_run(tmp_path, "2026-01-02_00-00-00", RunRecord("cmd", 9), saved=(2, 4))
    for spec in ("latest", str(run), str(run / "model_4.pt")):
        assert plan_resume(spec, tmp_path, None, "cmd") == ResumePlan(run / "model_4.pt", run, 9), spec
    assert plan_resume(str(run / "model_2.pt"), tmp_path, None, "cmd") == ResumePlan(run / "model_2.pt")  # a branch
    assert plan_resume("latest", tmp_path, None, "other") == ResumePlan(run / "model_4.pt")  # another command's run
    assert ResumePlan(run / "model_4.pt").iterations(4, max_iterations=10) == 10  # rsl_rl's rule: 10 more
    done = make_run(tmp_path, "2026-01-03_00-00-00", RunRecord("cmd", 9), saved=(9,))
    assert plan_resume("latest", tmp_path, None, "cmd") == ResumePlan(done / "model_9.pt")  # finished: a new run
    with pytest.raises(UserError, match="--checkpoint: 'nowhere' does not exist"):
        plan_resume("nowhere", tmp_path, None, "cmd")


def test_elastic_restart_continues_the_jobs_folder_and_its_iteration_count(tmp_path: Path) -> None:
    run = make_run(tmp_path, "2026-01-02_00-00-00", RunRecord("cmd", 9, "job7"), saved=(2, 4))
    (run / "model_5.pt").write_bytes(b"cut short")  # not a whole archive: skipped
    assert plan_resume(RESUME_NEVER, tmp_path, elastic.Attempt("job7", 0), "cmd") == ResumePlan()
    assert plan_resume(None, tmp_path, elastic.Attempt("job7", 1), "other") == ResumePlan(
        run / "model_4.pt", run, 9, found_by="restart"
    )


def test_elastic_restart_before_any_checkpoint_starts_over_in_the_same_folder(tmp_path: Path) -> None:
    run = make_run(tmp_path, "2026-01-02_00-00-00", RunRecord("cmd", 9, "job7"))
    plan = plan_resume(None, tmp_path, elastic.Attempt("job7", 1), "cmd")
    assert plan == ResumePlan(None, run, 9, found_by="restart")
    assert plan.iterations(None, max_iterations=10) == 10


def test_resolve_latest_run_and_highest_iteration(tmp_path: Path) -> None:
    for run, its in (("2026-01-01_00-00-00", (0, 50)), ("2026-01-02_00-00-00", (0, 9, 10)), ("2026-01-03_x", ())):
        (tmp_path / run).mkdir()
        for it in its:
            torch.save({"iter": it}, tmp_path / run / f"model_{it}.pt")
    assert resolve_checkpoint("latest", tmp_path) == tmp_path / "2026-01-02_00-00-00" / "model_10.pt"
    assert resolve_checkpoint(str(tmp_path / "2026-01-01_00-00-00"), tmp_path).name == "model_50.pt"
    file = tmp_path / "2026-01-01_00-00-00" / "model_0.pt"
    assert resolve_checkpoint(str(file), tmp_path) == file
    with pytest.raises(UserError, match="holds no model"):
        resolve_checkpoint(str(tmp_path / "2026-01-03_x"), tmp_path)
    with pytest.raises(UserError, match="found no run"):
        resolve_checkpoint("latest", tmp_path / "nothing-here")
    assert run_search.checkpoints_in(tmp_path / "2026-01-03_x") == []
