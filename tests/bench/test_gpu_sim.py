"""``scripts/gpu_sim_check.sh``'s driver at CI's size on the CPU: every stage runs and is recorded (~1 min)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from redline.bench import gpu_sim

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.sim
def test_every_stage_runs_at_the_tiny_size(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "redline.bench.gpu_sim", "--device", "cpu", "--tiny", "--out", str(tmp_path)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "gpu_sim.json").read_text())
    assert list(result["stages"]) == list(gpu_sim.STAGES)
    assert all(s["ok"] for s in result["stages"].values()), result["stages"]
    run = result["stages"]["throughput"]["tasks"]["Redline-Velocity-Flat-Go1@4"]
    assert run["sps"] > 0 and set(run["split_s"]) == {"env_s", "inference_s", "gae_s", "update_s"}
    assert run["bottleneck"] and result["stages"]["throughput"]["syncs"]["reason"].startswith("no CUDA")
    assert len(result["stages"]["rsl_rl_ratio"]["rsl_rl_over_redline"]) == 1
    walk = result["stages"]["learning"]["walk"]
    assert walk["censored"] and walk["iteration"] == 1
    assert done.stdout.strip().splitlines()[-1] == result["verdict"] and "4/4 stages ok" in result["verdict"]
    log = (tmp_path / "gpu_sim.log").read_text()
    assert log.count("$ ") == 3 and "physics=newton_mjwarp" in log


def test_a_failing_stage_is_recorded_and_the_next_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(run: gpu_sim.Run, budget: float) -> dict:
        raise RuntimeError("no CUDA device")

    monkeypatch.setitem(gpu_sim.STAGES, "cuda_tests", broken)
    monkeypatch.setitem(gpu_sim.STAGES, "throughput", lambda run, budget: {"tasks": {}})
    result = gpu_sim.check(tmp_path, "cpu", True, 60.0, ("cuda_tests", "throughput"))
    assert result["stages"]["cuda_tests"] == {"ok": False, "error": "RuntimeError: no CUDA device",
                                              "seconds": pytest.approx(0, abs=1)}  # fmt: skip
    assert result["stages"]["throughput"]["ok"] and "failed: cuda_tests" in result["verdict"]
    assert json.loads((tmp_path / "gpu_sim.json").read_text())["verdict"] == result["verdict"]


def test_train_figures_leave_out_the_first_iteration(tmp_path: Path) -> None:
    rows = [
        {"sps": 10.0, "collect_s": 5.0, "learn_s": 5.0, "env_s": 4.0, "bottleneck": "x"},
        {"sps": 100.0, "collect_s": 0.5, "learn_s": 0.5, "env_s": 0.4, "bottleneck": "env-bound", "mfu": 0.1},
        {"sps": 120.0, "collect_s": 0.4, "learn_s": 0.4, "env_s": 0.2, "bottleneck": "env-bound", "mfu": 0.2},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    figures = gpu_sim.train_figures(tmp_path / "metrics.jsonl")
    assert figures["sps"] == 110.0 and figures["iteration_s"] == pytest.approx(0.9)
    assert figures["split_s"] == {"env_s": pytest.approx(0.3)} and figures["mfu"] == 0.2


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--stages", "throughput,warp"], "--stages: comma-separated names from"), (["--deadline", "0"], "--deadline")],
)
def test_bad_input_is_one_line(argv: list[str], message: str) -> None:
    done = subprocess.run([sys.executable, "-m", "redline.bench.gpu_sim", *argv], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and message in done.stderr
