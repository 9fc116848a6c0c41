"""``redline bench train``'s reading of a run: time and env steps to the first iteration at the threshold."""

from __future__ import annotations

import pytest

from redline.bench.train import TrainBenchOptions, bench_train, summarize_run
from redline.errors import UserError


def _records(rewards: list[float | None], key: str = "mean_reward") -> list[dict]:
    return [
        {"iteration": i, "wall_time_s": 2.0 * (i + 1), "env_steps": 100 * (i + 1), key: r}
        for i, r in enumerate(rewards)
    ]


def test_first_crossing_of_the_episode_window_mean() -> None:
    s = summarize_run(_records([None, 1.0, 4.95, 4.0, 4.99]), 4.9)
    assert s == {
        "solved": True,
        "iteration": 2,
        "wall_s": 6.0,
        "env_steps": 300,
        "final_reward": 4.99,
        "total_wall_s": 10.0,
    }


def test_rsl_rl_runs_are_read_by_their_window_mean_not_the_last_100() -> None:
    records = _records([1.0, 4.95], key="mean_reward_window")
    for r in records:
        r["mean_reward"] = 0.0  # rsl_rl's last-100 mean lags: not the compared statistic
    assert summarize_run(records, 4.9)["iteration"] == 1


def test_never_reaching_the_threshold_is_not_solved() -> None:
    s = summarize_run(_records([1.0, 2.0]), 4.9)
    assert not s["solved"] and s["wall_s"] is None and s["final_reward"] == 2.0


def test_unknown_opponent_is_refused() -> None:
    with pytest.raises(UserError, match="--vs: unknown learner 'sb3'"):
        bench_train(TrainBenchOptions(vs="sb3"))
