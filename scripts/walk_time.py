"""When did a velocity-tracking run walk? The Go1 walking criterion of docs/go1.md over ``redline train`` runs.

    python scripts/walk_time.py RUN_DIR [RUN_DIR ...]

A run walks at the end of the first aligned 10-iteration window (iterations 0-9, 10-19, ...) whose means over the
window's records have an episode-mean xy velocity error <= 0.35 m/s, a yaw-rate error <= 0.4 rad/s and >= 90 % of
the episodes that ended reaching the time-out (the window's exact ``episodes`` / ``time_outs`` counts where its
records have them, runs since 2026-12-06's session 23; else Isaac Lab's ``Episode_Termination`` figures, which
``extras["log"]`` repeats from the last resets until the next). Prints, per run, the episodes the window saw, the
training time (``wall_time_s``), the wall time since the command started (``since_launch_s``: start-up included;
runs before 2026-12-06's session 19 lack it) and env steps at that window's end, or the run's totals and its last
window's errors when it never walked (censored); then the IQM of both times with a 95 % percentile bootstrap CI (2,000
resamples, numpy seed 0; censored runs count at their totals, which makes the IQM a lower bound).

    python scripts/walk_time.py RUN [RUN ...] --vs OTHER [OTHER ...]

pairs the runs by position (the same seed each, e.g. one option on and off) and adds, per pair, the ratio RUN /
OTHER of the env steps and of the wall time from launch to walk, their mean over the pairs with a 95 % bootstrap CI
over the pairs (same estimator), and how many pairs walked sooner, at the same window, or later (a censored run counts
at its totals: its ratio is then a bound).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from redline.bench import stats

WINDOW = 10
"""Iterations per window."""
MAX_ERR_XY = 0.35
"""[m/s] episode-mean xy velocity error."""
MAX_ERR_YAW = 0.4
"""[rad/s] episode-mean yaw-rate error."""
MIN_TIMEOUTS = 0.9
"""Share of the ended episodes that reached the time-out."""

ERR_XY = "episode/Metrics/base_velocity/error_vel_xy"
ERR_YAW = "episode/Metrics/base_velocity/error_vel_yaw"
TERMINATION = "episode/Episode_Termination/"


def _mean(records: list[dict[str, Any]], key: str) -> float:
    """Mean of ``key`` over the records that carry it (nan when none does)."""
    values = [r[key] for r in records if r.get(key) is not None]
    return float(np.mean(values)) if values else float("nan")


def window_figures(records: list[dict[str, Any]]) -> dict[str, float]:
    """The criterion's three figures over one window's records, and ``episodes``: how many ended in it (nan for a
    run whose records lack the counts)."""
    if all(r.get("episodes") is not None and r.get("time_outs") is not None for r in records):
        ended = float(sum(r["episodes"] for r in records))
        timeouts, episodes = float(sum(r["time_outs"] for r in records)), ended
    else:  # Isaac Lab's termination figures, the same last resets' counted again on every step until the next
        ended = sum(_mean(records, k) for k in {k for r in records for k in r if k.startswith(TERMINATION)})
        timeouts, episodes = _mean(records, TERMINATION + "time_out"), float("nan")
    return {
        "err_xy": _mean(records, ERR_XY),
        "err_yaw": _mean(records, ERR_YAW),
        "timeouts": timeouts / ended if ended > 0 else float("nan"),
        "episodes": episodes,
    }


def walked(figures: dict[str, float]) -> bool:
    """Whether a window's figures meet the walking criterion (nan never does)."""
    return bool(
        figures["err_xy"] <= MAX_ERR_XY and figures["err_yaw"] <= MAX_ERR_YAW and figures["timeouts"] >= MIN_TIMEOUTS
    )


def walk_time(run: Path) -> dict[str, Any]:
    """``run``'s walking time: the first walking window's end, or its totals (``censored``)."""
    metrics = run / "metrics.jsonl"
    if not metrics.is_file():
        raise SystemExit(f"walk_time.py: error: RUN_DIR: {run} holds no metrics.jsonl (a `redline train` run folder)")
    records = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    if not records:
        raise SystemExit(f"walk_time.py: error: {metrics} holds no record")
    windows: dict[int, list[dict[str, Any]]] = {}
    for r in records:
        windows.setdefault(r["iteration"] // WINDOW, []).append(r)
    figures: dict[str, float] = {}
    end, censored = records[-1], True
    for index in sorted(windows):
        window = windows[index]
        figures = window_figures(window)
        if len(window) == WINDOW and walked(figures):
            end, censored = window[-1], False
            break
    return {
        "run": str(run),
        "censored": censored,
        "iteration": end["iteration"],
        **figures,
        "minutes": end["wall_time_s"] / 60.0,
        "launch_minutes": end["since_launch_s"] / 60.0 if end.get("since_launch_s") is not None else None,
        "env_steps": end["env_steps"],
    }


def paired(rows: list[dict[str, Any]], others: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per metric (``env_steps``, ``launch_minutes``): the per-pair ratios ``rows[i] / others[i]``, their mean and
    its 95 % bootstrap CI over the pairs, the pairs where ``rows`` walked sooner / the same / later, and the pairs
    with a censored run (whose ratio is a bound)."""
    out: dict[str, dict[str, Any]] = {}
    for key in ("env_steps", "launch_minutes"):
        if any(r[key] is None for r in rows + others):
            continue  # runs from before since_launch_s
        ratios = np.array([r[key] / o[key] for r, o in zip(rows, others, strict=True)])
        low, high = stats.stratified_bootstrap_ci([ratios], statistic=lambda x: x.mean(axis=-1))
        out[key] = {
            "ratios": ratios.tolist(),
            "mean": float(ratios.mean()),
            "ci95": (low, high),
            "sooner": int((ratios < 1.0).sum()),
            "same": int((ratios == 1.0).sum()),
            "later": int((ratios > 1.0).sum()),
            "censored_pairs": sum(r["censored"] or o["censored"] for r, o in zip(rows, others, strict=True)),
        }
    return out


def main(argv: list[str]) -> int:
    if not argv or argv[0] == "--vs":
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    vs = argv.index("--vs") if "--vs" in argv else len(argv)
    mine, theirs = argv[:vs], argv[vs + 1 :]
    if vs < len(argv) and len(theirs) != len(mine):
        print(f"walk_time.py: error: --vs: {len(theirs)} runs after it, {len(mine)} before (pairs)", file=sys.stderr)
        return 2
    rows = [walk_time(Path(a)) for a in mine]
    others = [walk_time(Path(a)) for a in theirs]
    for r in rows:
        state = "never walked (totals)" if r["censored"] else "walked"
        launch = "" if r["launch_minutes"] is None else f" ({r['launch_minutes']:.2f} min from launch)"
        print(
            f"{r['run']}: {state} at iteration {r['iteration']}, {r['minutes']:.2f} min{launch},"
            f" {r['env_steps'] / 1e6:.2f} M env steps (window: err xy {r['err_xy']:.3f} m/s,"
            f" yaw {r['err_yaw']:.3f} rad/s, time-outs {100 * r['timeouts']:.0f} %"
            + ("" if math.isnan(r["episodes"]) else f" of {r['episodes']:.0f} episodes")
            + ")"
        )
    censored = sum(r["censored"] for r in rows)
    note = f" ({censored} never walked: counted at their totals, a lower bound)" if censored else ""
    for key, what in (("minutes", "training time"), ("launch_minutes", "wall time from launch")):
        minutes = [r[key] for r in rows]
        if None not in minutes:
            low, high = stats.stratified_bootstrap_ci([minutes])
            print(
                f"IQM {what} to walk: {stats.iqm(minutes):.2f} min [{low:.2f}, {high:.2f}] over {len(rows)} runs{note}"
            )
    for key, result in (paired(rows, others) if others else {}).items():
        either = result["censored_pairs"]
        bound = f" ({either} pairs with a censored run: its ratio a bound)" if either else ""
        low, high = result["ci95"]
        print(
            f"paired {key}, RUN / OTHER: mean {result['mean']:.3f} [{low:.3f}, {high:.3f}] over {len(rows)} pairs;"
            f" sooner {result['sooner']}, same {result['same']}, later {result['later']}{bound}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
