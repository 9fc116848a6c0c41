"""Per-iteration metrics: one JSON object per line in ``metrics.jsonl``, TensorBoard scalars, a live display.

Both learners hand :meth:`MetricsLog.write` one flat record per iteration (plain Python numbers, already read from
the device once). The keys, the same for both learners where both have the quantity:

- ``iteration``: learning iteration (0-based); ``env_steps``: env steps (all envs, all ranks) so far, continued
  across a resume; ``wall_time_s`` [s] of training so far, continued across a resume; ``since_launch_s`` [s]: wall
  time since this attempt's ``redline train`` command started (start-up included; not continued across a resume;
  absent outside ``redline train``); ``sps``: env steps per second of this iteration;
- ``mean_reward`` / ``mean_episode_length``: over the last 100 finished episodes, rsl_rl's ``Train/mean_reward``
  (None before the first); ``mean_reward_window``: over the episodes that finished in this iteration (None if none);
- ``episodes`` / ``time_outs``: how many episodes finished in this iteration and how many of them by the time limit
  (exact counts, every rank's; the rsl_rl learner's: rank 0's), what to weigh ``episode/<key>`` by: Isaac Lab
  repeats its last resets' ``extras["log"]`` on every step until the next reset;
- ``collect_s`` / ``learn_s`` [s]: rollout and update time of this iteration;
- ``lr``, ``action_std`` (mean policy std), ``value_loss``, ``surrogate_loss``, ``entropy``;
- ``episode/<key>``: the mean of the env's ``extras["log"][key]`` over the iteration (Isaac Lab's
  ``Episode_Reward/<term>``, ``Episode_Termination/<term>``, ``Metrics/...``), the env's key kept whole;
- redline learner only: the time split ``env_s``, ``inference_s``, ``gae_s``, ``update_s``, ``allreduce_s``,
  ``logging_s`` [s]; ``learner_gflops``, ``mfu``, ``gpu_util`` [%], ``gpu_mem_gb`` [GB], ``bottleneck``,
  ``next_action``, ``precision``, ``world_size``, ``collectives``; ``kl``, ``skipped_steps``, ``clip_fraction``,
  ``explained_variance``, ``first_ratio_dev``; in a multi-process run ``ranks`` (each rank's ``env_s``,
  ``inference_s``, ``update_s``, ``wait_s`` inside collectives, ``cpu_s`` its process got, ``wall_s``) and
  ``straggler`` (the rank holding the others back and why, or None; :mod:`redline.telemetry.stragglers`);
- redline's SAC learner (``--algorithm sac``): its update's metrics under their own names (``critic_loss``,
  ``actor_loss``, ``alpha``, ...; ``learner/<key>`` where a key above has the name, e.g. ``learner/mean_reward``, the
  mean reward per env step); no ``lr``, ``surrogate_loss``, ``value_loss``, ``kl``; ``learner_gflops`` from SAC's
  FLOP model (:func:`redline.telemetry.flops.sac_iteration_flops`) and a ``next_action`` naming SAC's knobs;
- rsl_rl learner only: ``loss/<name>`` for its other losses.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import errno
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from redline.errors import OutputError, UserError, describe

TB_TAGS = {
    "mean_reward": "Train/mean_reward",
    "mean_episode_length": "Train/mean_episode_length",
    "sps": "Perf/total_fps",
    "collect_s": "Perf/collection_time",
    "learn_s": "Perf/learning_time",
    "lr": "Loss/learning_rate",
    "value_loss": "Loss/value",
    "surrogate_loss": "Loss/surrogate",
    "entropy": "Loss/entropy",
    "action_std": "Policy/mean_std",
    "gpu_util": "Perf/gpu_util",
    "gpu_mem_gb": "Perf/gpu_mem_gb",
}
"""TensorBoard tag per record key, named as rsl_rl names them so existing dashboards keep working."""


def tb_tag(key: str) -> str:
    """The TensorBoard tag of a record key: rsl_rl's name where it has one (:data:`TB_TAGS`); an env's episode key
    as rsl_rl writes it (``Episode_Reward/x`` as is, ``x`` as ``Episode/x``); else ``Group/name``."""
    if key in TB_TAGS:
        return TB_TAGS[key]
    group, _, name = key.partition("/")
    if group == "episode":
        return name if "/" in name else f"Episode/{name}"
    return f"{group.capitalize()}/{name}" if name else f"Train/{key}"


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl``.

    A last line without its newline is a write that a kill cut short: it is skipped with a warning on stderr.

    Raises:
        UserError: any other line is not a JSON iteration record (naming the file and line).
    """
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines[-1].strip():
        print(f"[redline] warning: '{path}' ends in an unterminated line (a cut-short write); skipped", file=sys.stderr)
    records = []
    for number, line in enumerate(lines[:-1], start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"RUN_DIR: '{path}' line {number} is not JSON ({exc.msg})") from None
        if not isinstance(record, dict) or "iteration" not in record:
            raise UserError(f"RUN_DIR: '{path}' line {number} is not an iteration record (no 'iteration' key)")
        records.append(record)
    return records


LAUNCHED_AT_ENV = "REDLINE_LAUNCHED_AT"
"""When this attempt's ``redline train`` command started [s since the epoch], set by it for itself and the ranks it
starts; the records' ``since_launch_s`` count from it."""


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
        # one os.write per record on an O_APPEND descriptor: a line lands whole or not at all (the kernel appends it
        # in one piece; a kill between records leaves no half line)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._writer = writer
        try:
            self._launched_at: float | None = float(os.environ.get(LAUNCHED_AT_ENV, ""))
        except ValueError:  # unset (a runner used from Python) or not a time
            self._launched_at = None
        self._total = total_iterations
        self._done = 0
        self._recent_s: collections.deque[float] = collections.deque(maxlen=10)  # last iteration times [s]
        self._live = sys.stdout.isatty() if live is None else live
        self._display = True  # False once stdout failed
        self._progress: Any = None
        self._bar: Any = None

    def write(self, record: dict[str, Any]) -> None:
        """Append one iteration's record (see the module docstring for keys).

        Raises:
            OutputError: the line could not be appended (a full disk, ...): the file is cut back to its last whole
                line, so it stays a valid ``metrics.jsonl``. The TensorBoard writer and the terminal are not
                essential: a failure there is said once on stderr and that output stops.
        """
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
        if self._launched_at is not None:
            clean["since_launch_s"] = round(time.time() - self._launched_at, 3)
        self._append((json.dumps(clean) + "\n").encode())
        if self._writer is not None:
            it = int(record["iteration"])
            try:
                for key, value in clean.items():
                    if key != "iteration" and isinstance(value, int | float) and not isinstance(value, bool):
                        self._writer.add_scalar(tb_tag(key), value, it)
            except OSError as exc:
                self._writer = None
                warn_once("TensorBoard events", self.path.parent, exc)
        self._done += 1
        try:
            self._show(clean)
        except OSError as exc:  # stdout closed (`redline train | head`): training goes on without the display
            self._live, self._display = False, False
            warn_once("the progress display", "stdout", exc)

    def _append(self, line: bytes) -> None:
        """One ``os.write`` of a whole line; on a failed or short write the file is cut back to its old length."""
        size = os.fstat(self._fd).st_size
        try:
            written = os.write(self._fd, line)
            if written != len(line):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # a short write: the disk filled up
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, size)
            raise OutputError.writing("metrics", self.path, exc, "the lines written before it are kept") from None

    def _show(self, r: dict[str, Any]) -> None:
        self._recent_s.append(r["collect_s"] + r["learn_s"])
        eta_s = sum(self._recent_s) / len(self._recent_s) * max(self._total - self._done, 0)
        reward = "-" if r.get("mean_reward") is None else f"{r['mean_reward']:.3f}"
        length = "-" if r.get("mean_episode_length") is None else f"{r['mean_episode_length']:.1f}"
        text = (
            f"it {r['iteration']:>5} | {r['sps']:>9,.0f} steps/s | reward {reward:>8} | ep len {length:>6} | "
            f"ETA {datetime.timedelta(seconds=round(eta_s))}"
        )
        if not self._display:
            return
        if not self._live:
            print(f"[redline] {text}", flush=True)
            return
        if self._progress is None:
            # optional: rich, only to draw a progress bar
            from rich.progress import BarColumn, Progress, TextColumn

            self._progress = Progress(TextColumn("[bold]train"), BarColumn(), TextColumn("{task.description}"))
            self._progress.start()
            self._bar = self._progress.add_task(text, total=self._total)
        self._progress.update(self._bar, completed=self._done, description=text)

    def close(self) -> None:
        """Flush and close the file, the writer and the display (a failing writer or display is said once)."""
        if self._progress is not None:
            with contextlib.suppress(OSError):
                self._progress.stop()
        if self._writer is not None:
            try:
                self._writer.flush()
            except OSError as exc:
                warn_once("TensorBoard events", self.path.parent, exc)
        os.close(self._fd)


_warned: set[str] = set()
"""The non-essential outputs already said to have failed in this process."""


def warn_once(what: str, where: Any, exc: OSError) -> None:
    """Say on stderr, once per ``what`` and process, that a non-essential output failed and is dropped."""
    if what in _warned:
        return
    _warned.add(what)
    print(
        f"[redline] warning: {what}: could not write '{where}' ({describe(exc)}); continuing without it",
        file=sys.stderr,
        flush=True,
    )
