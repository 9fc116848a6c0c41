"""The ``redline`` program's exit: the garbage collector's heap is frozen first, in the program only."""

from __future__ import annotations

import gc
import sys

import pytest

from redline.cli import main

BAD = ["train", "--task", "Redline-Cartpole", "--num_envs", "0"]
"""A command that returns at once (exit 2)."""


def test_the_program_freezes_the_heap_and_a_caller_with_argv_keeps_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """``main()`` as the program (no argv) freezes every object, so the interpreter's shutdown skips collecting them
    (seconds after a training run); ``main(argv)`` from Python leaves the caller's heap collectable."""
    frozen = gc.get_freeze_count()  # some libraries freeze a few objects of their own at import
    assert main(BAD) == 2
    assert gc.get_freeze_count() == frozen
    monkeypatch.setattr(sys, "argv", ["redline", *BAD])
    try:
        assert main() == 2
        assert gc.get_freeze_count() > frozen + 10_000
    finally:
        gc.unfreeze()
