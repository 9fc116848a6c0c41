"""``redline train --profile``: a Chrome trace of exactly one iteration (the real-simulator run is in
``test_train_sim.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from redline.cli import main
from redline.telemetry.profiler import TRACE, IterationProfiler


def _events(path: Path) -> list[dict]:
    trace = json.loads(path.read_text())
    return trace["traceEvents"]


def test_only_the_chosen_iteration_is_traced(tmp_path: Path) -> None:
    profiler = IterationProfiler.for_run(tmp_path, first=5, num_iterations=3, device="cpu")
    assert profiler.iteration == 6 and profiler.path == tmp_path / TRACE
    assert IterationProfiler.for_run(tmp_path, first=0, num_iterations=1, device="cpu").iteration == 0
    x = torch.randn(64, 64)
    for it in range(5, 8):
        with profiler.trace(it):
            y = x @ x if it == 6 else x + x  # only the traced iteration multiplies
        assert profiler.path.is_file() == (it >= 6)
    names = {e.get("name") for e in _events(profiler.path)}
    assert "aten::mm" in names and "aten::add" not in names
    assert y.shape == (64, 64)


def test_profile_needs_the_redline_learner(capsys: pytest.CaptureFixture) -> None:
    assert main(["train", "--task", "Redline-Cartpole", "--learner", "rsl_rl", "--profile"]) == 2
    assert "--profile: only with --learner redline" in capsys.readouterr().err
