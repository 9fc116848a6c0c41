"""The study statistics against hand-computed cases: IQM, (stratified) bootstrap CI, probability of improvement."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sp

from redline.bench import stats


def _mean(a: np.ndarray) -> np.ndarray:
    return a.mean(axis=-1)


def test_iqm_is_the_mean_of_the_middle_half() -> None:
    # 8 values: trimming 2 from each end leaves 3, 4, 5, 6 -> 4.5; the outlier 100 does not move it (mean 16)
    assert stats.iqm([7, 1, 100, 3, 5, 2, 6, 4]) == pytest.approx(4.5)
    # 4 values: trimming 1 from each end leaves 2, 3 -> 2.5
    assert stats.iqm([1, 2, 3, 10]) == pytest.approx(2.5)


def test_bootstrap_ci_of_two_values_spans_both() -> None:
    # resamples of [0, 1] have means 0 (p 1/4), 1/2 (p 1/2), 1 (p 1/4): the 2.5th/97.5th percentiles are 0 and 1
    assert stats.stratified_bootstrap_ci([[0.0, 1.0]], _mean, reps=400, seed=1) == (0.0, 1.0)


def test_constant_runs_have_a_zero_width_ci() -> None:
    assert stats.stratified_bootstrap_ci([[3.0] * 5]) == (3.0, 3.0)


def test_bootstrap_resamples_within_each_stratum() -> None:
    # one run per task: every stratified resample is the same pair, so the interval collapses to the mean 5;
    # pooling the two runs into one stratum would resample [0, 0] and [10, 10] too
    assert stats.stratified_bootstrap_ci([[0.0], [10.0]], _mean, reps=200) == (5.0, 5.0)
    assert stats.stratified_bootstrap_ci([[0.0, 10.0]], _mean, reps=200) == (0.0, 10.0)


def test_bootstrap_ci_is_seeded_and_brackets_the_iqm() -> None:
    x = np.random.default_rng(3).normal(10.0, 2.0, 10)
    low, high = stats.stratified_bootstrap_ci([x], seed=7)
    assert (low, high) == stats.stratified_bootstrap_ci([x], seed=7)
    assert low < stats.iqm(x) < high and high - low < 5.0


def test_probability_of_improvement_counts_ties_as_half() -> None:
    # x = [1, 2, 3] vs y = [2, 2]: wins 3 > 2 twice, ties 2 = 2 twice, losses twice: (2 + 2 / 2) / 6 = 0.5
    assert stats.probability_of_improvement([1, 2, 3], [2, 2]) == pytest.approx(0.5)
    # x = [3, 4] vs y = [1, 2, 3]: 3 beats 1, 2 and ties 3 (2.5); 4 beats all three (3): 5.5 / 6
    assert stats.probability_of_improvement([3, 4], [1, 2, 3]) == pytest.approx(5.5 / 6)
    assert stats.probability_of_improvement([3, 4], [1, 2, 3]) == pytest.approx(
        sp.mannwhitneyu([3, 4], [1, 2, 3]).statistic / 6
    )
    assert stats.probability_of_improvement([1], [1]) == 0.5


def test_probability_of_improvement_ci_of_separated_samples_is_one() -> None:
    assert stats.probability_of_improvement_ci([5, 6, 7], [1, 2, 3], reps=100) == (1.0, 1.0)


def test_first_crossing_skips_missing_values() -> None:
    assert stats.first_crossing([None, 4.95, 4.0, 5.0], 4.9) == 1
    assert stats.first_crossing([None, 1.0], 4.9) is None


def test_normalized_auc_is_the_curve_mean_over_steps() -> None:
    # trapezoids over steps 0, 10, 20 with values 0, 1, 1: (10 * 0.5 + 10 * 1) / 20 = 0.75
    assert stats.normalized_auc([0, 10, 20], [0.0, 1.0, 1.0]) == pytest.approx(0.75)
    # an undefined first point is left out: (1 + 3) / 2 over steps 10..20
    assert stats.normalized_auc([0, 10, 20], [None, 1.0, 3.0]) == pytest.approx(2.0)
    assert stats.normalized_auc([0], [None]) is None
