"""``redline bench train``'s figure: learning curves of both learners, IQM over seeds with a bootstrap CI band."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

COLORS = {"redline": "#c0392b", "rsl_rl": "#2c3e50"}
"""Line colour per learner."""


def curve_matrix(runs: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """Align the runs' learning curves by iteration.

    Returns:
        ``(env_steps (T,), reward (R, T))`` over the iterations every run has; a run's points before its first
        finished episode (reward None) take its first defined value; runs with no defined point are left out.
    """
    length = min(len(r["curve"]["reward"]) for r in runs)
    rows = []
    for r in runs:
        values = np.array([np.nan if v is None else v for v in r["curve"]["reward"][:length]], dtype=float)
        defined = np.flatnonzero(np.isfinite(values))
        if defined.size == 0:
            continue
        values[: defined[0]] = values[defined[0]]
        rows.append(values)
    steps = np.asarray(runs[0]["curve"]["env_steps"][:length], dtype=float)
    return steps, np.array(rows).reshape(len(rows), length)


def iqm_band(
    rewards: np.ndarray, reps: int = 500, confidence: float = 0.95, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-iteration IQM over runs and its percentile bootstrap band, all ``(T,)``, from ``rewards`` ``(R, T)``."""
    rng = np.random.default_rng(seed)
    centre = stats.trim_mean(rewards, 0.25, axis=0)
    # resample whole runs (rows), keeping each run's curve together
    idx = rng.integers(0, rewards.shape[0], (reps, rewards.shape[0]))
    boot = stats.trim_mean(rewards[idx], 0.25, axis=1)  # (reps, T)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(boot, [tail, 100.0 - tail], axis=0)
    return centre, low, high


def plot_study(opts: Any, runs: dict[str, dict[str, list[dict[str, Any]]]], path: Path) -> None:
    """Write one panel per task: reward vs env steps per learner (IQM line, 95 % band), the target dashed.

    Args:
        opts: the :class:`~redline.bench.study.StudyOptions` (tasks, targets, learners).
        runs: ``runs[task][learner]`` = run records with a ``curve``.
        path: the PNG to write.
    """
    # optional and heavy: matplotlib, only to draw a figure
    import matplotlib

    matplotlib.use("Agg")
    # optional and heavy: matplotlib, only to draw a figure
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(opts.tasks), figsize=(5.5 * len(opts.tasks), 3.6), squeeze=False)
    for ax, task in zip(axes[0], opts.tasks, strict=True):
        for learner in opts.learners:
            recs = runs[task][learner]
            if not recs:
                continue
            steps, rewards = curve_matrix(recs)
            if rewards.shape[0] == 0:
                continue
            centre, low, high = iqm_band(rewards)
            color = COLORS.get(learner)
            ax.plot(steps / 1e3, centre, color=color, lw=1.5, label=f"{learner} (IQM, n={rewards.shape[0]})")
            ax.fill_between(steps / 1e3, low, high, color=color, alpha=0.25, lw=0)
        ax.axhline(opts.targets[task], color="grey", ls="--", lw=1, label=f"target {opts.targets[task]}")
        ax.set_title(task, fontsize=10)
        ax.set_xlabel("env steps [thousands]")
        ax.set_ylabel("mean return, last 100 episodes")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
