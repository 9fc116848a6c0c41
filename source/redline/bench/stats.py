"""Statistics of a learning study, as pure numpy/scipy functions (rliable's definitions, Agarwal et al. 2021).

- the interquartile mean (IQM): the mean of the middle 50 % of the runs (``scipy.stats.trim_mean(x, 0.25)``);
- a stratified bootstrap confidence interval: resample the runs of each task with replacement, independently per
  task (the stratum), recompute the statistic, and take the percentiles of the resampled statistics;
- the probability of improvement P(X > Y): the chance that a random run of X beats a random run of Y, ties counting
  one half; it is the Mann–Whitney U statistic over n · m;
- a learning curve's first crossing of a target and its normalised area.

Nothing here reads files or knows about learners; :mod:`redline.bench.study_stats` feeds it numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

Statistic = Callable[[np.ndarray], np.ndarray]
"""Reduces the last axis of an array of runs: ``(..., runs) -> (...)``."""


def iqm(x: Sequence[float] | np.ndarray) -> float:
    """Interquartile mean of ``x`` (1-D, at least one value)."""
    return float(iqm_last_axis(np.asarray(x, dtype=float)))


def iqm_last_axis(x: np.ndarray) -> np.ndarray:
    """Interquartile mean over the last axis (a :data:`Statistic`)."""
    # IQM = mean of the values between the 25th and the 75th percentile (trimming 25 % from each end)
    return np.asarray(stats.trim_mean(x, 0.25, axis=-1))


def stratified_bootstrap_ci(
    strata: Sequence[Sequence[float] | np.ndarray],
    statistic: Statistic = iqm_last_axis,
    reps: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` over the runs of all strata, resampled within each stratum.

    Args:
        strata: the runs of each task (one sequence per task, each non-empty). With one task this is the ordinary
            bootstrap.
        statistic: reduces the last axis of ``(reps, all runs)`` resamples (default :func:`iqm_last_axis`).
        reps: bootstrap resamples.
        confidence: the interval's coverage, e.g. 0.95.
        seed: seeds numpy's generator, so the interval is reproducible.

    Returns:
        ``(low, high)``: the (1 − c)/2 and (1 + c)/2 percentiles of the resampled statistic.
    """
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(s, dtype=float) for s in strata]
    if not arrays or any(a.size == 0 for a in arrays):
        raise ValueError("stratified_bootstrap_ci: every stratum needs at least one run")
    # each resample: n_k draws with replacement from each stratum k, pooled; all resamples at once, (reps, Σ n_k)
    draws = np.concatenate([a[rng.integers(0, a.size, (reps, a.size))] for a in arrays], axis=1)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(statistic(draws), [tail, 100.0 - tail])
    return float(low), float(high)


def probability_of_improvement(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """P(X > Y) + P(X = Y) / 2 for a random run of ``x`` against a random run of ``y`` (higher is better).

    For a metric where lower is better (time to a target), pass the negated values.
    """
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("probability_of_improvement: both samples need at least one run")
    # U = Σ_ij [x_i > y_j] + ½ [x_i = y_j];  P = U / (n m)
    diff = a[:, None] - b[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / (a.size * b.size))


def probability_of_improvement_ci(
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    reps: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of :func:`probability_of_improvement`, resampling ``x`` and ``y``
    independently (each learner's runs are a stratum)."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ra = a[rng.integers(0, a.size, (reps, a.size))]  # (reps, n)
    rb = b[rng.integers(0, b.size, (reps, b.size))]  # (reps, m)
    diff = ra[:, :, None] - rb[:, None, :]  # (reps, n, m)
    draws = ((diff > 0).sum((1, 2)) + 0.5 * (diff == 0).sum((1, 2))) / (a.size * b.size)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(draws, [tail, 100.0 - tail])
    return float(low), float(high)


def first_crossing(values: Sequence[float | None], target: float) -> int | None:
    """Index of the first value ``>= target`` (``None`` values never count), or None when none reaches it."""
    return next((i for i, v in enumerate(values) if v is not None and v >= target), None)


def normalized_auc(steps: Sequence[float], values: Sequence[float | None]) -> float | None:
    """Area under a learning curve divided by its span: the curve's mean value over env steps [return units].

    Args:
        steps: env steps at each point (increasing).
        values: the return at each point; ``None`` (no episode finished yet) points are left out.

    Returns:
        ∫ v d(steps) / (last step − first step) by the trapezoid rule over the defined points; the single value
        when only one point is defined; None when none is.
    """
    pts = [(float(s), float(v)) for s, v in zip(steps, values, strict=True) if v is not None]
    if not pts:
        return None
    if len(pts) == 1 or pts[-1][0] == pts[0][0]:
        return pts[-1][1]
    s, v = np.array(pts).T
    # AUC = Σ (s_{i+1} − s_i) (v_i + v_{i+1}) / 2, normalised by s_last − s_first
    return float(np.sum(np.diff(s) * (v[1:] + v[:-1]) / 2.0) / (s[-1] - s[0]))
