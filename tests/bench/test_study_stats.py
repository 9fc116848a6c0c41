"""A study's statistics: one run's summary from its records, censored runs (no simulator)."""

from __future__ import annotations

from typing import Any

from redline.bench.study_stats import metric_values, summarize_run


def records(rewards: list[float | None], key: str = "mean_reward") -> list[dict[str, Any]]:
    """``metrics.jsonl`` records of a run with these rewards: 100 env steps and 2 s per iteration."""
    return [
        {"iteration": i, "wall_time_s": 2.0 * (i + 1), "env_steps": 100 * (i + 1), key: r, "collect_s": 1.5}
        for i, r in enumerate(rewards)
    ]


def test_first_crossing_of_the_reward_key() -> None:
    s = summarize_run(records([None, 1.0, 4.95, 4.0, 4.99]), 4.9)
    assert (s["reached"], s["iteration"], s["env_steps_to_target"], s["wall_s_to_target"]) == (True, 2, 300, 6.0)
    assert (s["total_env_steps"], s["total_wall_s"], s["final_reward"], s["collect_s"]) == (500, 10.0, 4.99, 7.5)


def test_both_learners_are_read_by_mean_reward_not_the_window() -> None:
    rows = records([1.0, 1.0])
    for r in rows:
        r["mean_reward_window"] = 5.0  # the per-iteration window mean is not the compared statistic
    assert not summarize_run(rows, 4.9)["reached"]


def test_a_censored_run_is_kept_and_counts_at_its_total() -> None:
    s = summarize_run(records([1.0, 2.0]), 4.9)
    assert not s["reached"] and s["env_steps_to_target"] is None and s["final_reward"] == 2.0
    assert list(metric_values([s], "env_steps_to_target")) == [200.0]
    assert list(metric_values([s], "wall_s_to_target")) == [4.0]
