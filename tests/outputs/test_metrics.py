"""metrics.jsonl: one JSON object per iteration, TensorBoard tags as rsl_rl names them."""

from __future__ import annotations

import json
import time
from pathlib import Path

from redline.outputs.metrics import LAUNCHED_AT_ENV, MetricsLog


class _Writer:
    def __init__(self) -> None:
        self.scalars: list[tuple[str, float, int]] = []

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        self.scalars.append((tag, value, step))

    def flush(self) -> None:
        pass


def _record(it: int, reward: float | None) -> dict:
    return {
        "iteration": it,
        "env_steps": 100 * (it + 1),
        "wall_time_s": 1.0 * (it + 1),
        "sps": 100.0,
        "mean_reward": reward,
        "mean_episode_length": None if reward is None else 10.0,
        "collect_s": 0.6,
        "learn_s": 0.4,
        "value_loss": 0.5,
        "action_std": 0.8,
        "loss/symmetry": 0.1,
        "episode/success_rate": float("nan"),
        "episode/Episode_Reward/alive": 1.0,
        "episode/Episode_Termination/alive": 0.0,
    }


def test_one_line_per_iteration_and_tb_tags(tmp_path: Path, capsys) -> None:
    writer = _Writer()
    log = MetricsLog(tmp_path, total_iterations=2, writer=writer, live=False)
    log.write(_record(0, None))
    log.write(_record(1, 2.5))
    log.close()
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in lines] == [0, 1]
    assert lines[0]["mean_reward"] is None and lines[1]["mean_reward"] == 2.5
    assert lines[1]["episode/success_rate"] is None  # NaN is not JSON
    tags = {tag for tag, _, step in writer.scalars if step == 1}
    assert {"Train/mean_reward", "Perf/total_fps", "Perf/collection_time", "Loss/value", "Policy/mean_std"} <= tags
    assert {"Loss/symmetry", "Episode_Reward/alive", "Episode_Termination/alive"} <= tags  # rsl_rl's own tags
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and "reward    2.500" in out[1] and "ETA 0:00:00" in out[1]


def test_since_launch_counts_from_the_commands_start(tmp_path: Path, monkeypatch) -> None:
    """``redline train`` names its start in REDLINE_LAUNCHED_AT (its ranks inherit it); each record then carries the
    wall time since, start-up included. Without it (a runner used from Python) the key is absent."""
    monkeypatch.setenv(LAUNCHED_AT_ENV, repr(time.time() - 42.0))
    log = MetricsLog(tmp_path / "a", total_iterations=1, live=False)
    log.write(_record(0, 1.0))
    log.close()
    (line,) = (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()
    assert 42.0 <= json.loads(line)["since_launch_s"] < 60.0
    monkeypatch.delenv(LAUNCHED_AT_ENV)
    log = MetricsLog(tmp_path / "b", total_iterations=1, live=False)
    log.write(_record(0, 1.0))
    log.close()
    assert "since_launch_s" not in json.loads((tmp_path / "b" / "metrics.jsonl").read_text())
