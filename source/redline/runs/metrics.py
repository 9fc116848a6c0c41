"""Per-iteration metrics: one JSON object per line in ``metrics.jsonl``, TensorBoard scalars, a live display.

Every learner hands :meth:`MetricsLog.write` one flat record per iteration (plain Python numbers, already
read from the device once). Keys and units:

- ``iteration``: learning iteration (0-based); ``env_steps``: env steps (all envs, all ranks) so far;
- ``wall_time_s`` [s] since training started; ``sps``: env steps per second of this iteration;
- ``collect_s`` / ``learn_s`` [s]: rollout and update time of this iteration;
- ``mean_reward`` / ``mean_episode_length``: over the last 100 finished episodes (None before the first);
- ``gpu_util`` [%] / ``gpu_mem_gb`` [GB]: the GPU's mean NVML utilisation and memory used over the iteration
  (redline learner; None without a GPU);
- anything else the learner adds (losses, learning rate, ``episode/<term>`` extras).
"""

from __future__ import annotations

import collections
import datetime
import json
import math
import sys
from pathlib import Path
from typing import Any

TB_TAGS = {
    "mean_reward": "Train/mean_reward",
    "mean_episode_length": "Train/mean_episode_length",
    "sps": "Perf/total_fps",
    "collect_s": "Perf/collection_time",
    "learn_s": "Perf/learning_time",
    "lr": "Loss/learning_rate",
    "action_std": "Policy/mean_std",
    "gpu_util": "Perf/gpu_util",
    "gpu_mem_gb": "Perf/gpu_mem_gb",
}
"""TensorBoard tag per record key, named as rsl_rl names them so existing dashboards keep working."""


def _tb_tag(key: str) -> str:
    if key in TB_TAGS:
        return TB_TAGS[key]
    group, _, name = key.partition("/")
    return f"{group.capitalize()}/{name}" if name else f"Train/{key}"


class MetricsLog:
    """Writes each iteration's record to ``<run_dir>/metrics.jsonl``, TensorBoard and the terminal.

    Args:
        run_dir: the run folder (created if missing).
        total_iterations: iterations this run will do (for the progress bar and ETA).
        writer: a TensorBoard ``SummaryWriter`` (or anything with ``add_scalar``), or None.
        live: draw a live progress bar (default: only when stdout is a terminal); otherwise one line
            per iteration.
    """

    def __init__(self, run_dir: Path, total_iterations: int, writer: Any = None, live: bool | None = None) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        self.path = run_dir / "metrics.jsonl"
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115  (closed in close())
        self._writer = writer
        self._total = total_iterations
        self._done = 0
        self._recent_s: collections.deque[float] = collections.deque(maxlen=10)  # last iteration times [s]
        self._live = sys.stdout.isatty() if live is None else live
        self._progress: Any = None
        self._bar: Any = None
        self.last: dict[str, Any] = {}

    def write(self, record: dict[str, Any]) -> None:
        """Append one iteration's record (see the module docstring for keys)."""
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
        self._file.write(json.dumps(clean) + "\n")
        self._file.flush()
        if self._writer is not None:
            it = int(record["iteration"])
            for key, value in clean.items():
                if key != "iteration" and isinstance(value, int | float) and not isinstance(value, bool):
                    self._writer.add_scalar(_tb_tag(key), value, it)
        self._done += 1
        self.last = clean
        self._show(clean)

    def _show(self, r: dict[str, Any]) -> None:
        self._recent_s.append(r["collect_s"] + r["learn_s"])
        eta_s = sum(self._recent_s) / len(self._recent_s) * max(self._total - self._done, 0)
        reward = "-" if r.get("mean_reward") is None else f"{r['mean_reward']:.3f}"
        length = "-" if r.get("mean_episode_length") is None else f"{r['mean_episode_length']:.1f}"
        text = (
            f"it {r['iteration']:>5} | {r['sps']:>9,.0f} steps/s | reward {reward:>8} | ep len {length:>6} | "
            f"ETA {datetime.timedelta(seconds=round(eta_s))}"
        )
        if not self._live:
            print(f"[redline] {text}", flush=True)
            return
        if self._progress is None:
            from rich.progress import BarColumn, Progress, TextColumn

            self._progress = Progress(TextColumn("[bold]train"), BarColumn(), TextColumn("{task.description}"))
            self._progress.start()
            self._bar = self._progress.add_task(text, total=self._total)
        self._progress.update(self._bar, completed=self._done, description=text)

    def close(self) -> None:
        """Flush and close the file, the writer and the display."""
        if self._progress is not None:
            self._progress.stop()
        if self._writer is not None:
            self._writer.flush()
        self._file.close()
