"""``redline bench learner``: both learners timed side by side, with op counts and the GEMM share of the update."""

from __future__ import annotations

import json

import pytest

from redline.cli import main


def test_tiny_shape_reports_both_learners_and_their_ratio(capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "learner", "--shape", "tiny", "--iterations", "1", "--device", "cpu", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    rsl, red = result["rsl_rl"], result["redline"]
    for t in (rsl, red):
        assert t["rollout_s"] > 0 and t["update_s"] > 0 and t["ops_per_update"] > 1000
        assert 0 < t["gemm_share"] < 1  # matrix multiplies are part, never all, of an update's CPU time
    assert result["allocator"] == "tuned"  # the redline command tunes malloc before any learner runs
    assert result["speedup"] == pytest.approx(rsl["total_s"] / red["total_s"])
    # redline's update dispatches fewer aten ops than rsl_rl's (fused Adam, closed-form Gaussian, no host syncs)
    assert red["ops_per_update"] < rsl["ops_per_update"]
    # the stock loop with redline's update (the drop-in algorithm class) runs redline's update: its op count
    drop = result["drop_in"]
    assert drop["update_s"] > 0 and result["drop_in_speedup"] == pytest.approx(rsl["total_s"] / drop["total_s"])
    assert drop["ops_per_update"] < rsl["ops_per_update"]
