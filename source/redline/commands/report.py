"""``redline report``: plots and a text summary of one run's ``metrics.jsonl``, or a comparison of two.

Reads the records :class:`~redline.outputs.metrics.MetricsLog` writes (one JSON object per iteration) and renders
PNGs with matplotlib's Agg backend (no display needed):

- ``reward.png``: mean reward vs env steps and vs wall time;
- ``episode_length.png``: mean episode length vs env steps and vs wall time;
- ``sps.png``: env steps per second per iteration;
- ``time_split.png``: seconds per iteration by phase as a stacked area, one panel per run (the redline learner's
  ``env_s``/``inference_s``/``gae_s``/``update_s``/``allreduce_s``/``logging_s``; rsl_rl's ``collect_s``/``learn_s``);
- ``report.png``: all of the above in one figure.

With two runs every curve panel overlays both.
"""

from __future__ import annotations

import collections
import dataclasses
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redline.errors import UserError
from redline.outputs.folders import check_writable
from redline.outputs.metrics import read_records
from redline.telemetry.verdict import PHASES

FIGURES = ("reward.png", "episode_length.png", "sps.png", "time_split.png", "report.png")
"""The files :func:`render` writes."""

_COLORS = ("tab:blue", "tab:orange")


@dataclasses.dataclass(frozen=True)
class Run:
    """One run's records, in iteration order."""

    label: str
    """Name shown in legends and the summary (the run folder's name)."""
    path: Path
    """The ``metrics.jsonl`` read."""
    records: tuple[dict[str, Any], ...]
    """One dict per iteration (keys as in :mod:`redline.outputs.metrics`)."""

    def series(self, key: str, x: str = "env_steps") -> tuple[list[float], list[float]]:
        """``(xs, ys)`` over the records where both ``x`` and ``key`` hold a number (early rewards are None)."""
        pairs = [(r[x], r[key]) for r in self.records if _number(r.get(x)) and _number(r.get(key))]
        return [p[0] for p in pairs], [p[1] for p in pairs]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def load_run(path: Path) -> Run:
    """Read a run folder's ``metrics.jsonl`` (or the file itself).

    Raises:
        UserError: the file is missing, empty or not one JSON object per line.
    """
    file = path if path.suffix == ".jsonl" else path / "metrics.jsonl"
    if not file.is_file():
        raise UserError(f"RUN_DIR: no metrics.jsonl at '{file}' (a run folder written by `redline train`)")
    records = read_records(file)
    if not records:
        raise UserError(f"RUN_DIR: '{file}' is empty (no iteration finished yet)")
    label = file.parent.name if file.name == "metrics.jsonl" else file.stem
    return Run(label, file, tuple(records))


@dataclasses.dataclass(frozen=True)
class Summary:
    """The numbers ``redline report`` prints for one run."""

    iterations: int
    """Iteration records read."""
    env_steps: int
    """Env steps at the last record (all envs, all ranks)."""
    wall_time_s: float
    """Training time at the last record [s]."""
    final_reward: float | None
    """Mean reward of the last record that has one (None: no episode finished)."""
    best_reward: float | None
    """Highest mean reward of any record."""
    best_iteration: int | None
    """Iteration of :attr:`best_reward`."""
    final_episode_length: float | None
    """Mean episode length of the last record that has one [steps]."""
    sps_median: float
    """Median env steps per second over the iterations."""
    bottleneck: str | None
    """The most frequent per-iteration verdict (None: the learner writes none, e.g. rsl_rl)."""
    bottleneck_share: float
    """Fraction of iterations with that verdict."""
    next_action: str | None
    """The verdict's advice at the last record that carries it."""
    split_share: dict[str, float]
    """Fraction of the summed per-iteration time in each phase (:func:`time_split_keys`)."""


def time_split_keys(run: Run) -> tuple[str, ...]:
    """The phase keys present in ``run``: redline's :data:`~redline.telemetry.verdict.PHASES`, else rsl_rl's
    ``collect_s``/``learn_s``."""
    phases = tuple(k for k in PHASES if any(_number(r.get(k)) for r in run.records))
    return phases or tuple(k for k in ("collect_s", "learn_s") if any(_number(r.get(k)) for r in run.records))


def summarize(run: Run) -> Summary:
    """The :class:`Summary` of ``run``."""
    last = run.records[-1]
    its, rewards = run.series("mean_reward", x="iteration")
    _, lengths = run.series("mean_episode_length", x="iteration")
    best = max(range(len(rewards)), key=rewards.__getitem__) if rewards else None
    sps = [r["sps"] for r in run.records if _number(r.get("sps"))]
    verdicts = collections.Counter(r["bottleneck"] for r in run.records if r.get("bottleneck"))
    bottleneck, count = verdicts.most_common(1)[0] if verdicts else (None, 0)
    actions = [r["next_action"] for r in run.records if r.get("next_action")]
    keys = time_split_keys(run)
    totals = {k: sum(r[k] for r in run.records if _number(r.get(k))) for k in keys}
    whole = sum(totals.values()) or 1.0
    return Summary(
        iterations=len(run.records),
        env_steps=int(last.get("env_steps") or 0),
        wall_time_s=float(last.get("wall_time_s") or 0.0),
        final_reward=rewards[-1] if rewards else None,
        best_reward=rewards[best] if best is not None else None,
        best_iteration=int(its[best]) if best is not None else None,
        final_episode_length=lengths[-1] if lengths else None,
        sps_median=statistics.median(sps) if sps else 0.0,
        bottleneck=bottleneck,
        bottleneck_share=count / len(run.records),
        next_action=actions[-1] if actions else None,
        split_share={k: v / whole for k, v in totals.items()},
    )


def _fmt(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def summary_text(run: Run, summary: Summary) -> str:
    """A few lines describing one run."""
    split = ", ".join(f"{k.removesuffix('_s')} {v:.0%}" for k, v in summary.split_share.items())
    lines = [
        f"{run.label} ({run.path})",
        f"  iterations {summary.iterations}, env steps {summary.env_steps:,}, wall time {summary.wall_time_s:.1f} s, "
        f"median SPS {summary.sps_median:,.0f}",
        f"  reward: final {_fmt(summary.final_reward)}, best {_fmt(summary.best_reward)}"
        + (f" (iteration {summary.best_iteration})" if summary.best_iteration is not None else "")
        + f"; final episode length {_fmt(summary.final_episode_length, '.1f')}",
    ]
    if split:
        lines.append(f"  time split: {split}")
    if summary.bottleneck is not None:
        lines.append(
            f"  bottleneck: {summary.bottleneck} in {summary.bottleneck_share:.0%} of iterations; "
            f"next: {summary.next_action}"
        )
    return "\n".join(lines)


def time_to_reward(run: Run, threshold: float) -> tuple[int, float] | None:
    """``(env_steps, wall_time_s)`` of the first record whose mean reward reaches ``threshold``, or None."""
    for r in run.records:
        if _number(r.get("mean_reward")) and r["mean_reward"] >= threshold:
            return int(r["env_steps"]), float(r["wall_time_s"])
    return None


def comparison_text(a: Run, sa: Summary, b: Run, sb: Summary) -> str:
    """Lines comparing run ``b`` with run ``a``: SPS ratio, reward difference, time to a common reward."""
    lines = [f"comparison: {b.label} relative to {a.label} (second vs first)"]
    if sa.sps_median > 0:
        lines.append(
            f"  median SPS: {sb.sps_median:,.0f} vs {sa.sps_median:,.0f} ({sb.sps_median / sa.sps_median:.2f}x)"
        )
    if sa.final_reward is not None and sb.final_reward is not None:
        lines.append(
            f"  final reward: {sb.final_reward:.3f} vs {sa.final_reward:.3f} ({sb.final_reward - sa.final_reward:+.3f})"
        )
    if sa.best_reward is not None and sb.best_reward is not None:
        # a level both runs reach: 95 % of the lower best (for negative rewards, 5 % below it)
        low = min(sa.best_reward, sb.best_reward)
        threshold = low - 0.05 * abs(low)
        ta, tb = time_to_reward(a, threshold), time_to_reward(b, threshold)
        if ta is not None and tb is not None:
            lines.append(
                f"  to reward >= {threshold:.3f}: {tb[0]:,} vs {ta[0]:,} env steps, {tb[1]:.1f} vs {ta[1]:.1f} s"
            )
    if sa.bottleneck != sb.bottleneck:
        lines.append(f"  bottleneck: {sb.bottleneck} vs {sa.bottleneck}")
    return "\n".join(lines)


def _curves(ax: Any, runs: Sequence[Run], key: str, x: str, xlabel: str, ylabel: str) -> None:
    for run, color in zip(runs, _COLORS, strict=False):
        xs, ys = run.series(key, x=x)
        ax.plot(xs, ys, color=color, label=run.label, linewidth=1.5)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if len(runs) > 1:
        ax.legend(fontsize="small")


def _reward(axes: Sequence[Any], runs: Sequence[Run], key: str, ylabel: str) -> None:
    _curves(axes[0], runs, key, "env_steps", "env steps", ylabel)
    _curves(axes[1], runs, key, "wall_time_s", "wall time [s]", ylabel)


def _sps(ax: Any, runs: Sequence[Run]) -> None:
    _curves(ax, runs, "sps", "iteration", "iteration", "env steps / s")
    ax.set_ylim(bottom=0)


def _split(ax: Any, run: Run) -> None:
    keys = time_split_keys(run)
    its = [r["iteration"] for r in run.records]
    stacks = [[r.get(k) if _number(r.get(k)) else 0.0 for r in run.records] for k in keys]
    if keys:
        ax.stackplot(its, stacks, labels=[k.removesuffix("_s") for k in keys], alpha=0.85)
        ax.legend(fontsize="small", loc="upper right")
    ax.set_xlabel("iteration")
    ax.set_ylabel("s per iteration")
    ax.set_title(f"time split: {run.label}", fontsize="medium")
    ax.grid(alpha=0.3)


def render(runs: Sequence[Run], out_dir: Path) -> list[Path]:
    """Write :data:`FIGURES` for one run (or two, overlaid) into ``out_dir``; returns their paths."""
    # optional and heavy: matplotlib, only to draw a figure
    import matplotlib

    matplotlib.use("Agg")  # files only: no display, no GUI toolkit
    # optional and heavy: matplotlib, only to draw a figure
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        fig.savefig(out_dir / name, dpi=100)
        plt.close(fig)
        paths.append(out_dir / name)

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    _reward(axes, runs, "mean_reward", "mean reward")
    save(fig, "reward.png")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    _reward(axes, runs, "mean_episode_length", "mean episode length [steps]")
    save(fig, "episode_length.png")
    fig, ax = plt.subplots(figsize=(6, 4))
    _sps(ax, runs)
    save(fig, "sps.png")
    fig, axes = plt.subplots(1, len(runs), figsize=(6 * len(runs), 4), squeeze=False)
    for ax, run in zip(axes[0], runs, strict=True):
        _split(ax, run)
    save(fig, "time_split.png")

    fig = plt.figure(figsize=(14, 10))
    grid = fig.add_gridspec(3, 2 * len(runs))
    half = len(runs)  # columns per half of the figure
    _reward([fig.add_subplot(grid[0, :half]), fig.add_subplot(grid[0, half:])], runs, "mean_reward", "mean reward")
    _reward(
        [fig.add_subplot(grid[1, :half]), fig.add_subplot(grid[1, half:])],
        runs,
        "mean_episode_length",
        "mean episode length [steps]",
    )
    _sps(fig.add_subplot(grid[2, :half]), runs)
    for i, run in enumerate(runs):
        _split(fig.add_subplot(grid[2, half + i]), run)
    fig.suptitle(" vs ".join(run.label for run in runs))
    save(fig, "report.png")
    return paths


def default_out_dir(runs: Sequence[Run]) -> Path:
    """``<first run>/report`` for one run, ``<first run>/report_vs_<second run>`` for two."""
    base = runs[0].path.parent
    return base / "report" if len(runs) == 1 else base / f"report_vs_{runs[1].label}"


def report(run_dirs: Sequence[Path], out_dir: Path | None = None) -> tuple[str, list[Path]]:
    """Summarise and plot one or two runs; returns ``(text, PNG paths)``.

    Raises:
        UserError: more than two runs, or a run without a readable ``metrics.jsonl``.
    """
    if not 1 <= len(run_dirs) <= 2:
        raise UserError(f"RUN_DIR: one or two run folders, got {len(run_dirs)}")
    runs = [load_run(Path(d)) for d in run_dirs]
    summaries = [summarize(run) for run in runs]
    text = "\n".join(summary_text(run, s) for run, s in zip(runs, summaries, strict=True))
    if len(runs) == 2:
        text += "\n" + comparison_text(runs[0], summaries[0], runs[1], summaries[1])
    out = out_dir or default_out_dir(runs)
    check_writable(out, "--out")
    return text, render(runs, out)
