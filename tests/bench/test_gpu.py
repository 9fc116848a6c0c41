"""``redline bench gpu --quick --device cpu --json``: the GPU acceptance run's CPU mode, end to end (CI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def result() -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "redline.cli", "bench", "gpu", "--quick", "--device", "cpu", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # one JSON object on the last line


def test_every_learner_is_timed(result: dict) -> None:
    names = {"redline_bf16_captured", "redline_bf16_eager", "redline_fp32", "rsl_rl_fp32", "rsl_rl_mixed_precision"}
    assert set(result["update"]) == names
    for row in result["update"].values():
        assert row["update_ms"] > 0 and row["rollout_ms"] > 0 and row["update_gflop"] > 0
        assert row["mfu"] is None  # no peak for a CPU


def test_capture_plans_and_cpu_fields(result: dict) -> None:
    assert result["capture"] == {
        "redline_bf16_captured": "compile",
        "redline_bf16_eager": "eager",
        "redline_fp32": "eager",
    }
    assert result["shape"] == "tiny" and result["device"] == "cpu"
    assert "reason" in result["sync_debug"]
    assert result["philox"]["envs"] == 4096 and result["philox"]["unfused_ms"] > 0
    assert 0.0 <= result["first_ratio_dev"] < 1e-2  # the fp32 islands keep the first minibatch's ratio at 1
    assert set(result["learning"]) == {"default", "fp32_eager", "bf16_eager"}
    assert all(0.0 < row["mean"] < 1.5 and len(row["final_reward"]) == 1 for row in result["learning"].values())


def test_the_race_trains_every_learner_from_the_same_seed(result: dict) -> None:
    race = result["race"]
    assert (race["shape"], race["iterations"]) == ("tiny", 2)
    for name in ("redline_default", "rsl_rl_fp32", "rsl_rl_mixed_precision"):
        row = race[name]
        assert len(row["final_reward"]) == len(row["wall_s"]) == 1
        assert 0.0 < row["mean_final_reward"] < 1.5 and row["mean_wall_s"] > 0
    assert race["wall_ratio_redline_to_rsl_rl_fp32"] == [
        race["redline_default"]["wall_s"][0] / race["rsl_rl_fp32"]["wall_s"][0]
    ]


def test_reward_meter_sums_each_steps_mean_reward() -> None:
    import torch

    from redline.bench.gpu import _reward_meter
    from redline.bench.shapes import SHAPES, synthetic_env

    env, twin = synthetic_env(SHAPES["tiny"], "cpu", 3), synthetic_env(SHAPES["tiny"], "cpu", 3)
    total = _reward_meter(env)
    actions = torch.full((env.num_envs, env.num_actions), 0.3)
    with torch.inference_mode():  # as the rollout steps the env
        want = sum(float(twin.step(actions)[1].mean()) for _ in range(3))
        for _ in range(3):
            env.step(actions)
    assert float(total) == pytest.approx(want, rel=1e-6) and want != 0.0


def test_show_prints_a_table(result: dict, capsys: pytest.CaptureFixture[str]) -> None:
    from redline.bench.gpu import show

    show(result)
    out = capsys.readouterr().out
    assert "rsl_rl_mixed_precision" in out and "philox at 4096 envs" in out and "race, dummy task" in out
    assert "SAC update at the tiny shape" in out


def test_the_sac_update_is_timed_in_both_precisions(result: dict) -> None:
    sac = result["sac_update"]
    assert sac["shape"] == "tiny" and set(sac["rows"]) == {"fp32", "bf16", "bf16_captured"}
    assert all(row["update_ms"] > 0 and row["gradient_steps"] == 8 for row in sac["rows"].values())
