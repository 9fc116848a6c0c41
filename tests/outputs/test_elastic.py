"""Elastic restarts: the attempt torchrun describes, the run-folder marker, the plan a restarted worker follows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.commands.train_resume import ResumePlan, _plan
from redline.outputs import elastic


def test_attempt_from_torchrun_variables() -> None:
    assert elastic.Attempt.from_environ({}) is None  # not under torchrun: nothing elastic happens
    first = elastic.Attempt.from_environ({"TORCHELASTIC_RUN_ID": "job7", "TORCHELASTIC_RESTART_COUNT": "0"})
    assert first == elastic.Attempt("job7", 0) and not first.restarted
    again = elastic.Attempt.from_environ({"TORCHELASTIC_RUN_ID": "job7", "TORCHELASTIC_RESTART_COUNT": "2"})
    assert again is not None and again.restarted
    assert elastic.Attempt.from_environ({"TORCHELASTIC_RUN_ID": "job7", "TORCHELASTIC_RESTART_COUNT": "x"}) is None


def _run(exp: Path, name: str, run_id: str | None, last: int = 9) -> Path:
    run = exp / name
    run.mkdir(parents=True)
    if run_id is not None:
        elastic.write_marker(run, run_id, last)
    return run


def _save(path: Path, it: int) -> None:
    import torch

    torch.save({"actor_state_dict": {}, "critic_state_dict": {}, "iter": it}, path)


def test_find_run_takes_the_newest_folder_of_the_run_id(tmp_path: Path) -> None:
    _run(tmp_path, "2026-01-01_00-00-00", "job7", last=4)
    newest = _run(tmp_path, "2026-01-02_00-00-00", "job7", last=19)
    _run(tmp_path, "2026-01-03_00-00-00", "other")
    _run(tmp_path, "2026-01-04_00-00-00", None)
    assert elastic.find_run(tmp_path, "job7") == (newest, 19)
    assert elastic.find_run(tmp_path, "nobody") is None
    assert elastic.find_run(tmp_path / "missing", "job7") is None


def test_restart_plan_continues_the_run_and_its_iteration_count(tmp_path: Path) -> None:
    run = _run(tmp_path, "2026-01-02_00-00-00", "job7", last=9)
    for it in (2, 4):
        _save(run / f"model_{it}.pt", it)
    (run / "model_5.pt").write_bytes(b"cut short")  # not a whole archive: skipped
    first = _plan(None, tmp_path, elastic.Attempt("job7", 0))
    assert first == ResumePlan()  # the first attempt starts fresh in a new folder
    plan = _plan(None, tmp_path, elastic.Attempt("job7", 1))
    assert plan == ResumePlan(run / "model_4.pt", run, 9)
    assert plan.iterations(4, max_iterations=10) == 5  # iterations 5..9: the first attempt's end, not 10 more
    assert ResumePlan().iterations(4, max_iterations=10) == 10  # a plain --resume runs max_iterations more


def test_restart_before_any_checkpoint_starts_over_in_the_same_folder(tmp_path: Path) -> None:
    run = _run(tmp_path, "2026-01-02_00-00-00", "job7", last=9)
    plan = _plan(None, tmp_path, elastic.Attempt("job7", 1))
    assert plan == ResumePlan(None, run, 9)
    assert plan.iterations(None, max_iterations=10) == 10


def test_trim_metrics_drops_iterations_no_checkpoint_holds(tmp_path: Path) -> None:
    lines = [json.dumps({"iteration": i}) for i in range(6)]
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + '\n{"iteration": 6, "cut')
    assert elastic.trim_metrics(tmp_path, 3) == 3
    assert [json.loads(x)["iteration"] for x in (tmp_path / "metrics.jsonl").read_text().splitlines()] == [0, 1, 2, 3]
    assert elastic.trim_metrics(tmp_path, 3) == 0


@pytest.mark.parametrize("count", ["", "-1"])
def test_odd_restart_counts_are_not_elastic(count: str) -> None:
    assert elastic.Attempt.from_environ({"TORCHELASTIC_RUN_ID": "j", "TORCHELASTIC_RESTART_COUNT": count}) is None
