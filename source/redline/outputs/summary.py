"""What a finished run says last: its reward in rounded numbers, when it first reached the task's target, where its
checkpoint is and the command that plays it (read back from ``metrics.jsonl``, the same for both learners)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REWARD_TARGETS = {"Redline-Cartpole": 4.9}
"""Mean return per task that counts as solved (Cartpole's maximum is 5.0 per 5-s episode); tasks without one are
reported without a target."""


def summary_lines(
    task: str,
    run_dir: Path,
    records: Sequence[dict[str, Any]],
    elapsed_s: float,
    target: float | None = None,
    first_iteration: int = 0,
) -> list[str]:
    """The run's closing lines (without a prefix).

    Args:
        task: the task id (its ``-Play`` twin plays the checkpoint).
        run_dir: the run folder; its newest ``model_<it>.pt`` is the checkpoint named.
        records: the run's ``metrics.jsonl`` records, in order.
        elapsed_s: this attempt's training time [s].
        target: the mean return that counts as solved; None: :data:`REWARD_TARGETS`' entry for ``task``, if any.
        first_iteration: the first iteration this attempt ran (after a resume, the checkpoint's + 1): the line pairs
            its seconds with its iterations, and says the whole run's apart.
    """
    target = REWARD_TARGETS.get(task) if target is None else target
    last = records[-1] if records else {}
    rewarded = [r for r in records if r.get("mean_reward") is not None]
    iterations = last.get("iteration", -1) + 1
    steps = f"{_count(last.get('env_steps'))} env steps"
    head = f"done in {elapsed_s:.1f} s: {iterations - first_iteration} iterations"
    if first_iteration > 0:  # a continued run: this attempt's iterations, then the whole run's
        run_s = last.get("wall_time_s")
        clock = "" if run_s is None else f", {float(run_s):.1f} s"
        head += f" ({first_iteration} to {iterations - 1}); the run: {iterations} iterations, {steps}{clock}"
    else:
        head += f", {steps}"
    if rewarded:
        best = max(rewarded, key=lambda r: r["mean_reward"])
        head += (
            f"; mean reward {rewarded[-1]['mean_reward']:.3g} (best {best['mean_reward']:.3g} at iteration "
            f"{best['iteration']}), episodes {_round(last.get('mean_episode_length'))} steps"
        )
    else:
        head += "; no episode finished yet"
    lines = [head]
    if target is not None:
        first = next((r for r in rewarded if r["mean_reward"] >= target), None)
        lines.append(
            f"target {target:g}: first reached at iteration {first['iteration']} ({_count(first.get('env_steps'))} env "
            f"steps, {first.get('wall_time_s', 0.0):.0f} s)"
            if first is not None
            else f"target {target:g}: not reached"
        )
    checkpoint = latest_checkpoint(run_dir)
    if checkpoint is not None:
        lines.append(f"checkpoint {checkpoint}; play it: redline play --task {task} --checkpoint {run_dir}")
    return lines


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The run folder's ``model_<it>.pt`` of the highest iteration, or None."""
    found = [
        (int(m.group(1)), p) for p in run_dir.glob("model_*.pt") if (m := re.fullmatch(r"model_(\d+)\.pt", p.name))
    ]
    return max(found)[1] if found else None


def _count(n: Any) -> str:
    """An env-step count in rounded words: 950, 12.3 k, 4.5 M."""
    if n is None:
        return "?"
    n = float(n)
    for scale, unit in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:.0f}"


def _round(x: Any) -> str:
    return "?" if x is None else f"{float(x):.3g}"
