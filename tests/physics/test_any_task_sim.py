"""``physics=mujoco_cpu`` on tasks that are not redline's, on the real simulator (CPU): parity with MuJoCo-Warp on the
stock Isaac-Cartpole-Direct, and a user's task through ``redline``'s config path. Stock tasks run in subprocesses:
Isaac Lab reads ``ISAACSIM_ASSET_ROOT`` at import. Isaac Lab's own ``isaaclab train ... physics=mujoco_cpu`` on the
stock task (training, ``params/env.yaml`` recording MuJoCo-C, play) is in tests/commands/test_dropin_sim.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.sim

ROOT = Path(__file__).resolve().parents[2]
ISAACLAB = str(Path(sys.executable).with_name("isaaclab"))


def _env() -> dict[str, str]:
    from redline.assets import ensure_asset_root

    return {**os.environ, "PYTHONUNBUFFERED": "1", "ISAACSIM_ASSET_ROOT": str(ensure_asset_root())}


def _parity_run(tag: str, *args: str) -> dict:
    """Run ``tests.physics.any_task_parity ARGS`` in a fresh process; its ``TAG {json}`` line, parsed."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.physics.any_task_parity", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=_env(),
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    (line,) = [x for x in done.stdout.splitlines() if x.startswith(f"{tag} ")]
    return json.loads(line.removeprefix(f"{tag} "))


@pytest.mark.extended  # ~2 min on 2 loaded cores; Redline-Cartpole's parity test runs in CI
def test_stock_cartpole_matches_mujoco_warp() -> None:
    # as for Redline-Cartpole (tests/physics/test_mujoco_cpu_sim.py): both engines run MuJoCo's algorithms on the same
    # model; float64 vs float32 and a cold warm start leave ~1e-7 per step, which the inverted pole grows to a few
    # 1e-6 rad in 150 steps; a wrong model, control or reset moves the pole by > 0.01 rad within one episode
    result = _parity_run("PARITY", "Isaac-Cartpole-Direct", "8", "150")
    print(result)
    assert result["solvers"] == ["SolverMuJoCo", "SolverMuJoCoCPU"]
    assert result["same_dones"] and result["dones"] > 0, "no episode ended: the comparison never crossed a reset"
    assert result["pos"] < 1e-4 and result["vel"] < 1e-3 and result["reward"] < 1e-3
    assert result["moved"] > 0.1  # the state did move


def test_user_task_steps_its_own_config_on_mujoco_cpu() -> None:
    # a task registered by a user's package (tests/physics/user_tasks, its own config classes), through redline's
    # one config path (prepare_env: entry rewrite, resolution, the support check)
    result = _parity_run("USER", "user", "4", "130")
    assert result["solver"] == "SolverMuJoCoCPU" and result["njmax"] == 7  # the user's MuJoCo-Warp options
    assert result["finite"] and result["truncated_at"][:1] == [119]  # the user's 2 s episode: 120 env steps
