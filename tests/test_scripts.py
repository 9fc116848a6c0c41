"""The study scripts whose output backs a claim in docs: the Go1 walking criterion (scripts/walk_time.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _record(it: int, err_xy: float, err_yaw: float, time_out: float, contact: float) -> dict[str, float]:
    return {
        "iteration": it,
        "wall_time_s": 6.0 * (it + 1),
        "env_steps": 1000 * (it + 1),
        "episode/Metrics/base_velocity/error_vel_xy": err_xy,
        "episode/Metrics/base_velocity/error_vel_yaw": err_yaw,
        "episode/Episode_Termination/time_out": time_out,
        "episode/Episode_Termination/base_contact": contact,
    }


def _run(tmp_path: Path, records: list[dict[str, float]]) -> Path:
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return tmp_path


def test_walks_at_the_end_of_the_first_full_window_that_meets_all_three(tmp_path: Path) -> None:
    walk = _script("walk_time")
    records = [_record(i, 0.7, 0.6, 0.5, 0.5) for i in range(10)]  # falls and tracks badly
    records += [_record(i, 0.3, 0.3, 0.85, 0.15) for i in range(10, 20)]  # tracks, but 85 % time-outs
    records += [_record(i, 0.3, 0.3, 0.95, 0.05) for i in range(20, 30)]  # walks
    result = walk.walk_time(_run(tmp_path, records))
    assert not result["censored"]
    assert result["iteration"] == 29 and result["minutes"] == 3.0 and result["env_steps"] == 30_000
    assert abs(result["timeouts"] - 0.95) < 1e-12


def test_a_partial_window_never_walks_and_the_run_is_censored_at_its_totals(tmp_path: Path) -> None:
    walk = _script("walk_time")
    records = [_record(i, 0.7, 0.6, 0.5, 0.5) for i in range(10)]
    records += [_record(i, 0.2, 0.2, 0.99, 0.01) for i in range(10, 15)]  # stopped mid-window (SIGTERM)
    result = walk.walk_time(_run(tmp_path, records))
    assert result["censored"] and result["iteration"] == 14 and result["minutes"] == 1.5
    assert result["err_xy"] == 0.2  # the last (partial) window's figures, reported


def test_a_folder_without_metrics_is_a_one_line_error(tmp_path: Path) -> None:
    walk = _script("walk_time")
    with pytest.raises(SystemExit, match=r"^walk_time.py: error: RUN_DIR: .* holds no metrics.jsonl") as exit_:
        walk.walk_time(tmp_path)
    assert "\n" not in str(exit_.value)
