"""``scripts/gpu_sim_check.sh``'s driver at CI's size on the CPU: every stage runs and is recorded (~1 min)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tools.gpu import gpu_sim

ROOT = Path(__file__).resolve().parents[3]


def returned(out: Path) -> list[str]:
    """The files under ``out``, after checking that the device tool returns each: at most 8 files, 16 MiB each, no
    more than 2 folders down, named in letters, digits, '.', '_' and '-' (its README's limits)."""
    files = sorted(p for p in out.rglob("*") if p.is_file())
    assert len(files) <= 8, files
    for f in files:
        parts = f.relative_to(out).parts
        assert len(parts) <= 3 and f.stat().st_size <= 16 * 2**20, f
        assert all(re.fullmatch(r"[A-Za-z0-9._-]+", part) for part in parts), f
    return [f.relative_to(out).as_posix() for f in files]


@pytest.mark.sim
def test_every_stage_runs_at_the_tiny_size(tmp_path: Path) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "tools.gpu.gpu_sim", "--device", "cpu", "--tiny", "--out", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([*cmd, "--runs", str(tmp_path / "runs")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert returned(out) == ["gpu_sim.json", "gpu_sim.log"]  # the runs' checkpoints stay out of $OUT
    result = json.loads((out / "gpu_sim.json").read_text())
    assert list(result["stages"]) == list(gpu_sim.STAGES)
    assert all(s["ok"] for s in result["stages"].values()), result["stages"]
    run = result["stages"]["throughput"]["tasks"]["Redline-Velocity-Flat-Go1@4"]
    assert run["sps"] > 0 and set(run["split_s"]) == {"env_s", "inference_s", "gae_s", "update_s"}
    assert run["bottleneck"] and result["stages"]["throughput"]["syncs"]["reason"].startswith("no CUDA")
    assert len(result["stages"]["rsl_rl_ratio"]["rsl_rl_over_redline"]) == 1
    walk = result["stages"]["learning"]["walk"]
    assert walk["censored"] and walk["iteration"] == 1
    assert done.stdout.strip().splitlines()[-1] == result["verdict"] and "4/4 stages ok" in result["verdict"]
    log = (out / "gpu_sim.log").read_text()
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


def test_pytest_collecting_nothing_fails_stage_a(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest's exit 5 ("no tests ran": a renamed file or a -k that matches nothing) is no pass."""
    monkeypatch.setattr(gpu_sim.Run, "child", lambda self, cmd, budget: (5, "no tests ran in 0.01s", 0.1))
    result = gpu_sim.check(tmp_path, "cpu", True, 60.0, ("cuda_tests",))
    assert result["stages"]["cuda_tests"]["ok"] is False
    assert result["stages"]["cuda_tests"]["error"] == "RuntimeError: pytest rc 5: no tests ran in 0.01s"


def fake_train(self: gpu_sim.Run, cmd: list[str], budget: float) -> tuple[int, str, float]:
    """``redline train`` as far as the stages see it: a run folder with two iterations under ``--log_root``."""
    run = Path(cmd[cmd.index("--log_root") + 1]) / "task" / "run"
    run.mkdir(parents=True)
    rows = [{"sps": 10.0, "collect_s": 1.0, "learn_s": 1.0}] * 2
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / "model_1.pt").write_bytes(b"checkpoint")
    return 0, "", 0.1


def test_runs_are_written_outside_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 16,384-env run's checkpoints under $OUT could keep gpu_sim.json from coming back (8 files at most)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where the runs go by default
    monkeypatch.setattr(gpu_sim.Run, "child", fake_train)
    out = tmp_path / "out"
    result = gpu_sim.check(out, "cpu", True, 60.0, ("throughput", "rsl_rl_ratio"))
    assert all(stage["ok"] for stage in result["stages"].values()), result["stages"]
    assert returned(out) == ["gpu_sim.json", "gpu_sim.log"]
    run = Path(result["stages"]["throughput"]["tasks"]["Redline-Velocity-Flat-Go1@4"]["run"])
    assert run.is_relative_to(tmp_path / "tmp" / "redline-gpu-sim-runs") and (run / "model_1.pt").is_file()


def test_the_first_training_run_gets_the_cold_cache_allowance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    budgets: list[float] = []

    def child(self: gpu_sim.Run, cmd: list[str], budget: float) -> tuple[int, str, float]:
        budgets.append(budget)
        return fake_train(self, cmd, budget) if "--log_root" in cmd else (1, "", 0.1)  # bench env: not here

    monkeypatch.setattr(gpu_sim.Run, "child", child)
    gpu_sim.check(tmp_path / "out", "cpu", False, 1000.0, ("throughput",), tmp_path / "runs")
    trains = budgets[: len(gpu_sim.GPU.tasks) + 1]
    share = (gpu_sim.GPU.budgets["throughput"] - gpu_sim.GPU.cold_s) / (len(trains) + 3)
    assert trains == pytest.approx([share + gpu_sim.GPU.cold_s] + [share] * (len(trains) - 1), abs=0.5)


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
    [
        (["--stages", "throughput,warp"], "--stages: comma-separated names from"),
        (["--deadline", "0"], "--deadline"),
        (["--out", "/tmp/o", "--runs", "/tmp/o/runs", "--stages", "learning"], "--runs: must be outside --out"),
    ],
)
def test_bad_input_is_one_line(argv: list[str], message: str) -> None:
    cmd = [sys.executable, "-m", "tools.gpu.gpu_sim", *argv]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)  # run from the repository root
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and message in done.stderr
