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


def test_rollout_mode_splits_each_learners_time_per_env_step(capsys: pytest.CaptureFixture) -> None:
    """``--rollout``: both learners' loop bodies at the Cartpole shape, per env step, split into parts; the
    learners' own parts are there (rsl_rl's noise is its Normal.sample, redline's the per-env Philox draw)."""
    argv = ["bench", "learner", "--rollout", "--shape", "cartpole", "--iterations", "1", "--device", "cpu", "--json"]
    assert main(argv) == 0
    (result,) = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["rollout"]
    assert (result["shape"], result["num_envs"], result["steps"]) == ("cartpole", 256, 16)
    for name in ("rsl_rl", "redline"):
        t = result[name]
        assert t["per_step_s"] > 0 and t["returns_s"] > 0
        parts = t["parts_s"]
        assert parts["normaliser"] == 0.0  # Cartpole's models do not normalise observations
        assert all(parts[p] > 0 for p in ("inference", "noise", "storage", "bookkeeping")), parts
    assert result["ratio"] == pytest.approx(result["redline"]["per_step_s"] / result["rsl_rl"]["per_step_s"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rollout", "--shape", "legged"], "--shape: 'legged' with --rollout (valid: cartpole, ant, go1)"),
        (["--shape", "go1"], "--shape: 'go1' (valid: legged, tiny, go1_rank; the task shapes need --rollout)"),
        (["--rollout", "--precision", "bf16"], "--rollout: measures the CPU in fp32"),
    ],
)
def test_rollout_mode_bad_input_is_one_line(args: list[str], message: str, capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "learner", *args, "--device", "cpu"]) == 2
    assert message in capsys.readouterr().err
