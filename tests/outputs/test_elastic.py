"""Elastic restarts: the attempt torchrun describes (the plan a restarted worker follows: test_run_search.py)."""

from __future__ import annotations

import pytest

from redline.outputs import elastic


def test_attempt_from_torchrun_variables() -> None:
    assert elastic.Attempt.from_environ({}) is None  # not under torchrun: nothing elastic happens
    first = elastic.Attempt.from_environ({"TORCHELASTIC_RUN_ID": "job7", "TORCHELASTIC_RESTART_COUNT": "0"})
    assert first == elastic.Attempt("job7", 0) and not first.restarted
    again = elastic.Attempt.from_environ({"TORCHELASTIC_RUN_ID": "job7", "TORCHELASTIC_RESTART_COUNT": "2"})
    assert again is not None and again.restarted
    assert elastic.Attempt.from_environ({"TORCHELASTIC_RUN_ID": "job7", "TORCHELASTIC_RESTART_COUNT": "x"}) is None


@pytest.mark.parametrize("count", ["", "-1"])
def test_odd_restart_counts_are_not_elastic(count: str) -> None:
    assert elastic.Attempt.from_environ({"TORCHELASTIC_RUN_ID": "j", "TORCHELASTIC_RESTART_COUNT": count}) is None
