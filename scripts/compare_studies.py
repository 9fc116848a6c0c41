"""Hold one learner's runs of a ``redline bench train`` study against another's (the same study or two studies).

    python scripts/compare_studies.py TASK STUDY_A LEARNER_A STUDY_B LEARNER_B

Prints each run set's IQM [95 % CI] per metric, P(A better than B) [95 % CI] per metric (``bench train``'s own
statistics), and the IQM ratio A / B of the wall time and env steps to the target with a 95 % percentile bootstrap
CI (2,000 resamples of each run set, numpy seed 0). Censored runs count at their totals, as in ``bench train``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from redline.bench import stats
from redline.bench.study_stats import compare, metric_values, summarize_learner

REPS = 2000
"""Bootstrap resamples."""


def load_runs(study: str, task: str, learner: str) -> list[dict[str, Any]]:
    """The finished runs of ``learner`` on ``task`` in a study folder (``runs/<task>/<learner>/seed<k>.json``)."""
    return [json.loads(p.read_text()) for p in sorted(Path(study, "runs", task, learner).glob("seed*.json"))]


def iqm_ratio(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> tuple[float, float, float]:
    """IQM(a) / IQM(b) and its 95 % percentile bootstrap CI (each set resampled on its own)."""
    ratios = [stats.iqm(rng.choice(a, a.size)) / stats.iqm(rng.choice(b, b.size)) for _ in range(REPS)]
    low, high = np.percentile(ratios, [2.5, 97.5])
    return stats.iqm(a) / stats.iqm(b), float(low), float(high)


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    task, study_a, learner_a, study_b, learner_b = argv
    a, b = load_runs(study_a, task, learner_a), load_runs(study_b, task, learner_b)
    for name, runs in ((f"A {study_a}:{learner_a}", a), (f"B {study_b}:{learner_b}", b)):
        summary = summarize_learner(runs, REPS)
        print(name, json.dumps(summary, default=float))
    for metric, p in compare(a, b, REPS).items():
        if p is not None:
            print(f"P(A better) {metric}: {p['p']:.2f} [{p['ci95'][0]:.2f}, {p['ci95'][1]:.2f}]")
    rng = np.random.default_rng(0)
    for metric in ("wall_s_to_target", "env_steps_to_target"):
        ratio, low, high = iqm_ratio(metric_values(a, metric), metric_values(b, metric), rng)
        print(f"IQM ratio A/B {metric}: {ratio:.3f} [{low:.3f}, {high:.3f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
