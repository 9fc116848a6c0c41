"""``redline.host``: the glibc allocator tuning is applied unless the user opted out or set glibc's own variable; each
process of a node takes its share of the cores."""

from __future__ import annotations

import sys

import pytest

from redline.cli import main
from redline.host import allocator, cores_per_process, tune_allocator, usable_cores


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


@pytest.mark.parametrize(("local", "share"), [(None, 1), ("1", 1), ("2", 2), ("junk", 1), ("0", 1)])
def test_each_process_of_a_node_takes_its_share_of_the_cores(local: str | None, share: int) -> None:
    """torchrun's LOCAL_WORLD_SIZE divides the usable cores; at least one each; nonsense counts as one process."""
    environ = {} if local is None else {"LOCAL_WORLD_SIZE": local}
    assert cores_per_process(environ) == max(1, usable_cores() // share)
