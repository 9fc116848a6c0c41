"""Reading run folders in the end-to-end tests: records, the one run of a log root, checkpoints compared bitwise;
finding and killing a run's processes by a marker in their command line."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path

import torch


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def only_run(log_root: Path, experiment: str) -> Path:
    runs = list((log_root / experiment).iterdir())
    assert len(runs) == 1, runs
    return runs[0]


TIMING_KEYS = {
    *("sps", "learner_gflops", "mfu", "gpu_util", "gpu_mem_gb", "bottleneck", "next_action", "straggler", "ranks")
}
"""Record keys measured from the clock (with every ``*_s`` key), or derived from such a measurement (``ranks``:
each rank's phase times)."""


def untimed(run: Path) -> list[dict]:
    """A run's ``metrics.jsonl`` records without the clock's fields."""
    return [{k: v for k, v in r.items() if not k.endswith("_s") and k not in TIMING_KEYS} for r in records(run)]


def same_state(a: object, b: object, where: str = "") -> list[str]:
    """Where two checkpoints' contents differ (tensors bit for bit), ignoring their ``wall_time_s``."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = (set(a) | set(b)) - {"wall_time_s"}
        return [d for k in sorted(keys, key=str) for d in same_state(a.get(k), b.get(k), f"{where}.{k}")]
    if isinstance(a, list | tuple) and isinstance(b, list | tuple) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in same_state(x, y, f"{where}[{i}]")]
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return [] if a.dtype == b.dtype and torch.equal(a, b) else [where]
    return [] if a == b else [where]


def alive(marker: str) -> list[int]:
    """Live processes other than this one whose command line holds ``marker`` (a zombie's is empty)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker.encode() in cmdline.read_bytes() and int(cmdline.parent.name) != os.getpid():
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


def kill_all(marker: str) -> int:
    """SIGKILL every process :func:`alive` finds for ``marker`` (a pre-empted machine: launcher, torchrun's agent and
    its workers at once); returns how many."""
    pids = alive(marker)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return len(pids)
