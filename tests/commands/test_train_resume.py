"""Where a run starts from: an interrupted run of the same command continues in its folder to its planned end (by
``--resume``, by the same command again, by an elastic restart); anything else resumed starts a new run."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.commands.train_resume import RESUME_NEVER, ResumePlan, _plan
from redline.errors import UserError
from redline.outputs import elastic
from redline.outputs.run_record import RunRecord
from tests.outputs.run_support import make_run


def test_the_same_command_again_continues_its_unfinishedmake_run(tmp_path: Path) -> None:
    run = make_run(tmp_path, "2026-01-02_00-00-00", RunRecord("cmd", 9), saved=(2, 4))
    plan = _plan(None, tmp_path, None, "cmd")
    assert plan == ResumePlan(run / "model_4.pt", run, 9, found_by="same command")
    assert plan.iterations(4, max_iterations=10) == 5  # iterations 5..9: the planned end, not 10 more
    assert _plan(None, tmp_path, None, "another command") == ResumePlan()
    assert _plan(RESUME_NEVER, tmp_path, None, "cmd") == ResumePlan()
    unsaved = make_run(tmp_path, "2026-01-03_00-00-00", RunRecord("cmd", 9))  # killed before its first checkpoint
    assert _plan(None, tmp_path, None, "cmd") == ResumePlan(
        None, unsaved, 9, found_by="same command"
    )  # starts over there


def test_resume_of_an_interrupted_run_continues_it_else_starts_a_newmake_run(tmp_path: Path) -> None:
    run = make_run(tmp_path, "2026-01-02_00-00-00", RunRecord("cmd", 9), saved=(2, 4))
    for spec in ("latest", str(run), str(run / "model_4.pt")):
        assert _plan(spec, tmp_path, None, "cmd") == ResumePlan(run / "model_4.pt", run, 9), spec
    assert _plan(str(run / "model_2.pt"), tmp_path, None, "cmd") == ResumePlan(run / "model_2.pt")  # a branch
    assert _plan("latest", tmp_path, None, "other") == ResumePlan(run / "model_4.pt")  # another command's run
    assert ResumePlan(run / "model_4.pt").iterations(4, max_iterations=10) == 10  # rsl_rl's rule: 10 more
    done = make_run(tmp_path, "2026-01-03_00-00-00", RunRecord("cmd", 9), saved=(9,))
    assert _plan("latest", tmp_path, None, "cmd") == ResumePlan(done / "model_9.pt")  # finished: a new run
    with pytest.raises(UserError, match="--checkpoint: 'nowhere' does not exist"):
        _plan("nowhere", tmp_path, None, "cmd")


def test_elastic_restart_continues_the_jobs_folder_and_its_iteration_count(tmp_path: Path) -> None:
    run = make_run(tmp_path, "2026-01-02_00-00-00", RunRecord("cmd", 9, "job7"), saved=(2, 4))
    (run / "model_5.pt").write_bytes(b"cut short")  # not a whole archive: skipped
    assert _plan(RESUME_NEVER, tmp_path, elastic.Attempt("job7", 0), "cmd") == ResumePlan()
    assert _plan(None, tmp_path, elastic.Attempt("job7", 1), "other") == ResumePlan(
        run / "model_4.pt", run, 9, found_by="restart"
    )


def test_elastic_restart_before_any_checkpoint_starts_over_in_the_same_folder(tmp_path: Path) -> None:
    run = make_run(tmp_path, "2026-01-02_00-00-00", RunRecord("cmd", 9, "job7"))
    plan = _plan(None, tmp_path, elastic.Attempt("job7", 1), "cmd")
    assert plan == ResumePlan(None, run, 9, found_by="restart")
    assert plan.iterations(None, max_iterations=10) == 10
