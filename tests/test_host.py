"""``redline.host``: the glibc allocator tuning is applied unless the user opted out or set glibc's own variable."""

from __future__ import annotations

import sys

import pytest

from redline.cli import main
from redline.host import allocator, tune_allocator


def test_opt_outs_leave_glibc_alone() -> None:
    assert tune_allocator({"REDLINE_MALLOC": "stock"}) is False
    assert tune_allocator({"MALLOC_MMAP_THRESHOLD_": "131072"}) is False  # the user's own setting wins


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_glibc_accepts_the_thresholds() -> None:
    assert tune_allocator({}) is True
    assert allocator() == "tuned"


def test_unknown_mode_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("REDLINE_MALLOC", "jemalloc")
    assert main(["bench", "learner", "--shape", "tiny"]) == 2
    assert capsys.readouterr().err.strip() == (
        "redline bench: error: REDLINE_MALLOC: unknown 'jemalloc' (valid: tuned, stock)"
    )
