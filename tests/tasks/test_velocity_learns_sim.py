"""Redline-Velocity-Flat-Go1 learns on the CPU: the README's training command, shortened to 40 iterations.

About 5 minutes of training on 2 cores, so it stays out of the default suite: it runs when the marker expression
names ``slow`` (``./redline.sh test -m slow``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.cli import main

pytestmark = [pytest.mark.sim, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _only_when_slow_is_selected(request: pytest.FixtureRequest) -> None:
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("5 min of training; runs with -m slow")


def _window(records: list[dict], first: int, last: int, key: str) -> float:
    values = [r[key] for r in records if first <= r["iteration"] <= last and r.get(key) is not None]
    return sum(values) / len(values)


def test_go1_learns_to_stay_up_and_track(tmp_path: Path) -> None:
    """256 envs, seed 42 (README: iterations 1-9 vs 30-39 give episodes 127 -> 440 steps, tracking rewards x2.3)."""
    argv = ["--task", "Redline-Velocity-Flat-Go1", "--device", "cpu", "--num_envs", "256", "--seed", "42"]
    assert main(["train", *argv, "--max_iterations", "40", "--log_root", str(tmp_path)]) == 0
    (run,) = (tmp_path / "redline_velocity_flat_go1").iterdir()
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    for key, factor in (
        ("mean_episode_length", 2.0),
        ("episode/Episode_Reward/track_lin_vel_xy_exp", 1.5),
        ("episode/Episode_Reward/track_ang_vel_z_exp", 1.5),
    ):
        start, end = _window(records, 1, 9, key), _window(records, 30, 39, key)
        assert end >= factor * start, (key, start, end)
