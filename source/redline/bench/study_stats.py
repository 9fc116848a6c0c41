"""The statistics of a ``redline bench train`` study: one run's summary from its ``metrics.jsonl`` records, one
learner's runs of a task over seeds, and one learner's runs held against another's.

Per run, from the reward key :data:`REWARD_KEY`: env steps and wall time to the first iteration at the task's target,
final return, and the normalised area under the learning curve; a run that never reaches the target is *censored*
(:data:`CENSORING`). Across seeds: the IQM with a 95 % percentile bootstrap CI, and the probability that a run of one
learner beats a run of the other (:mod:`redline.bench.stats`). :mod:`redline.bench.study` runs the study and
``scripts/compare_studies.py`` holds two studies' runs against each other.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from redline.bench import stats
from redline.errors import UserError

REWARD_KEY = "mean_reward"
"""The ``metrics.jsonl`` key read for both learners: mean return of the last 100 finished episodes."""
METRICS = {
    "env_steps_to_target": False,
    "wall_s_to_target": False,
    "final_reward": True,
    "auc": True,
}
"""Metric -> higher is better (time and steps to the target: lower is better)."""
CENSORING = (
    "a run that never reaches the target is censored: reached=false and its *_to_target is null in the run's "
    "summary; for the IQM, its CI and P(improvement) its env steps / wall time to target count as the run's total "
    "(a lower bound on the true value), never dropped"
)


def summarize_run(records: list[dict[str, Any]], target: float, reward_key: str = REWARD_KEY) -> dict[str, Any]:
    """One run's summary from its ``metrics.jsonl`` records.

    Args:
        records: the records, in iteration order (``iteration``, ``env_steps``, ``wall_time_s``, ``reward_key``,
            optionally ``collect_s``/``learn_s`` [s]).
        target: the mean return that counts as reaching the target.
        reward_key: the record key of the return.

    Returns:
        ``reached``; ``iteration``, ``env_steps_to_target`` and ``wall_s_to_target`` [s] at the first record whose
        return is >= ``target`` (None when censored); ``total_env_steps``, ``total_wall_s`` [s]; ``final_reward``
        (the last record's); ``auc`` (:func:`~redline.bench.stats.normalized_auc`, return units); ``collect_s`` and
        ``learn_s``, summed over the run [s]; ``curve``: ``env_steps``, ``wall_s`` and ``reward`` per iteration.
    """
    if not records:
        raise UserError("bench train: a run wrote no metrics records")
    rewards = [r.get(reward_key) for r in records]
    steps = [int(r["env_steps"]) for r in records]
    walls = [float(r["wall_time_s"]) for r in records]
    hit = stats.first_crossing(rewards, target)
    return {
        "reached": hit is not None,
        "iteration": None if hit is None else int(records[hit]["iteration"]),
        "env_steps_to_target": None if hit is None else steps[hit],
        "wall_s_to_target": None if hit is None else walls[hit],
        "total_env_steps": steps[-1],
        "total_wall_s": walls[-1],
        "final_reward": rewards[-1],
        "auc": stats.normalized_auc(steps, rewards),
        "collect_s": sum(float(r.get("collect_s") or 0.0) for r in records),
        "learn_s": sum(float(r.get("learn_s") or 0.0) for r in records),
        "curve": {"env_steps": steps, "wall_s": walls, "reward": rewards},
    }


def metric_values(runs: list[dict[str, Any]], metric: str) -> np.ndarray:
    """One value per run; a censored run's time to target is its total (see :data:`CENSORING`)."""
    if metric == "env_steps_to_target":
        return np.array([r[metric] if r["reached"] else r["total_env_steps"] for r in runs], dtype=float)
    if metric == "wall_s_to_target":
        return np.array([r[metric] if r["reached"] else r["total_wall_s"] for r in runs], dtype=float)
    return np.array([np.nan if r[metric] is None else r[metric] for r in runs], dtype=float)


def summarize_learner(runs: list[dict[str, Any]], reps: int, seed: int = 0) -> dict[str, Any]:
    """IQM [95 % CI], median and mean of every metric in :data:`METRICS` over one learner's runs of one task."""
    out: dict[str, Any] = {"runs": len(runs), "reached": sum(bool(r["reached"]) for r in runs)}
    for metric in METRICS:
        x = metric_values(runs, metric)
        x = x[np.isfinite(x)]
        if x.size == 0:
            out[metric] = None
            continue
        low, high = stats.stratified_bootstrap_ci([x], reps=reps, seed=seed)
        out[metric] = {
            "iqm": stats.iqm(x),
            "ci95": [low, high],
            "median": float(np.median(x)),
            "mean": float(np.mean(x)),
        }
    out["collect_s"] = float(np.mean([r["collect_s"] for r in runs]))
    out["learn_s"] = float(np.mean([r["learn_s"] for r in runs]))
    return out


def compare(ours: list[dict[str, Any]], theirs: list[dict[str, Any]], reps: int, seed: int = 0) -> dict[str, Any]:
    """P(a redline run beats a run of the other learner) per metric, with a 95 % bootstrap CI."""
    out: dict[str, Any] = {}
    for metric, higher_better in METRICS.items():
        sign = 1.0 if higher_better else -1.0  # lower time is better: compare negated values
        x, y = sign * metric_values(ours, metric), sign * metric_values(theirs, metric)
        x, y = x[np.isfinite(x)], y[np.isfinite(y)]
        if x.size == 0 or y.size == 0:
            out[metric] = None
            continue
        low, high = stats.probability_of_improvement_ci(x, y, reps=reps, seed=seed)
        out[metric] = {"p": stats.probability_of_improvement(x, y), "ci95": [low, high]}
    return out
