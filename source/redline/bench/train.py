"""``redline bench train``: the redline learner vs rsl_rl 5.5.1 on a real task, same envs and seeds, side by side.

For each seed both learners train the task in their own process (``redline train --learner ...``), one after the
other, so machine load drifts hit both alike. From each run's ``metrics.jsonl`` it takes the first iteration whose
mean return over the episodes that finished in it reaches the threshold (the same statistic for both learners:
``mean_reward`` for redline, ``mean_reward_window`` for rsl_rl), and reports the wall time and env steps to get
there, the final reward, and the medians over seeds with their ratio.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from redline.errors import UserError


@dataclasses.dataclass(frozen=True)
class TrainBenchOptions:
    """What ``redline bench train`` runs."""

    task: str = "Redline-Cartpole"
    """Registered task id."""
    vs: str = "rsl_rl"
    """The other learner (only ``rsl_rl``)."""
    seeds: int = 3
    """Seeds ``seed, seed + 1, ...``; each runs both learners."""
    seed: int = 42
    """First seed."""
    threshold: float = 4.9
    """Mean episode return that counts as solved (4.9 of 5.0 for Cartpole)."""
    max_iterations: int = 80
    """Iterations per run (a run that never reaches the threshold counts as not solved)."""
    num_envs: int | None = None
    """Envs per run (None: the task's default for the device)."""
    device: str | None = None
    """``cpu`` / ``cuda`` (None: cuda:0 when present)."""
    precision: str = "auto"
    """The redline learner's precision."""


def _train(opts: TrainBenchOptions, learner: str, seed: int, log_root: Path) -> Path:
    argv = ["train", "--task", opts.task, "--learner", learner, "--seed", str(seed)]
    argv += ["--max_iterations", str(opts.max_iterations), "--log_root", str(log_root), "--run_name", learner]
    argv += ["agent.save_interval=100000"]
    if learner == "redline":
        argv += ["--precision", opts.precision]
    if opts.num_envs is not None:
        argv += ["--num_envs", str(opts.num_envs)]
    if opts.device is not None:
        argv += ["--device", opts.device]
    proc = subprocess.run([sys.executable, "-m", "redline.cli", *argv], capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise UserError(f"bench train: {learner} seed {seed} failed: {last}")
    (run,) = [d for d in log_root.glob(f"*/*_{learner}") if d.is_dir()]
    return run


def summarize_run(metrics: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """Time and env steps to the first iteration whose episode-window mean return reaches ``threshold``.

    Args:
        metrics: the run's ``metrics.jsonl`` records.
        threshold: the return that counts as solved.

    Returns:
        ``solved``, ``wall_s`` / ``env_steps`` / ``iteration`` at the crossing (None when never reached),
        ``final_reward`` (the last record's), ``total_wall_s``.
    """

    def reward(r: dict[str, Any]) -> float | None:
        return r.get("mean_reward_window", r.get("mean_reward"))

    hit = next((r for r in metrics if (reward(r) or float("-inf")) >= threshold), None)
    return {
        "solved": hit is not None,
        "iteration": None if hit is None else hit["iteration"],
        "wall_s": None if hit is None else hit["wall_time_s"],
        "env_steps": None if hit is None else hit["env_steps"],
        "final_reward": reward(metrics[-1]) if metrics else None,
        "total_wall_s": metrics[-1]["wall_time_s"] if metrics else None,
    }


def bench_train(opts: TrainBenchOptions) -> dict[str, Any]:
    """Train both learners on ``opts.seeds`` seeds; returns per-run summaries, medians and ratios."""
    if opts.vs != "rsl_rl":
        raise UserError(f"--vs: unknown learner '{opts.vs}' (valid: rsl_rl)")
    learners = ("redline", opts.vs)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in learners}
    with tempfile.TemporaryDirectory(prefix="redline-bench-train-") as tmp:
        for i in range(opts.seeds):
            seed = opts.seed + i
            for name in learners:
                run = _train(opts, name, seed, Path(tmp) / f"seed{seed}")
                records = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
                runs[name].append({"seed": seed, **summarize_run(records, opts.threshold)})
                print(f"[bench train] {name} seed {seed}: {runs[name][-1]}", file=sys.stderr, flush=True)

    def median(name: str, key: str) -> float | None:
        values = [r[key] for r in runs[name] if r[key] is not None]
        return statistics.median(values) if len(values) == len(runs[name]) else None  # None unless every seed solved

    medians = {name: {k: median(name, k) for k in ("wall_s", "env_steps", "final_reward")} for name in learners}
    ours, theirs = medians["redline"], medians[opts.vs]
    wall_ratio = None if ours["wall_s"] is None or theirs["wall_s"] is None else ours["wall_s"] / theirs["wall_s"]
    return {"task": opts.task, "threshold": opts.threshold, "runs": runs, "medians": medians, "wall_ratio": wall_ratio}


def print_train_bench(result: dict[str, Any]) -> None:
    """Human-readable table of :func:`bench_train`'s result."""
    print(f"redline bench train: {result['task']}, threshold {result['threshold']}")
    for name, runs in result["runs"].items():
        for r in runs:
            to = f"{r['wall_s']:.1f} s / {r['env_steps']} env steps (it {r['iteration']})" if r["solved"] else "never"
            print(f"  {name:8s} seed {r['seed']}: threshold at {to}; final reward {r['final_reward']:.3f}")
    for name, m in result["medians"].items():
        wall = "n/a (not every seed solved)" if m["wall_s"] is None else f"{m['wall_s']:.1f} s"
        print(f"  median {name:8s}: {wall} to threshold, env steps {m['env_steps']}, final {m['final_reward']}")
    if result["wall_ratio"] is not None:
        print(f"  redline / rsl_rl wall time to threshold: {result['wall_ratio']:.2f} (target <= 0.6)")
