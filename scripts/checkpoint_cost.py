"""What a checkpoint costs: its size by part and the time to gather the run state and to save it (docs/reliability.md).

Trains ``ITERATIONS`` iterations of a task in this process with a checkpoint after every one (one process,
``physics=mujoco_cpu`` on the CPU), timing :meth:`RedlineRunner.save` (gather + ``torch.save`` + fsync + rename) and
the run state's gathering inside it, then sizes the last checkpoint's parts. One line of JSON.

    python scripts/checkpoint_cost.py Redline-Velocity-Flat-Go1 4096
"""

from __future__ import annotations

import io
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

ITERATIONS = 3
"""Iterations (and so checkpoints) timed."""


def _size(obj: Any) -> int:
    """Bytes of ``obj`` as ``torch.save`` writes it."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.tell()


def _timed(fn: Callable[..., Any], seconds: list[float]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - start)

    return wrapper


def measure(task: str, num_envs: int, log_root: Path) -> dict[str, Any]:
    """Train ``task`` with ``num_envs`` envs under ``log_root``, a checkpoint per iteration; sizes [bytes] and times
    [s] of the checkpoints."""
    from redline.cli import main
    from redline.run_state.parts import RUN_STATE_KEY
    from redline.runners import redline_runner as runner_module

    saves: list[float] = []
    gathers: list[float] = []
    runner_module.RedlineRunner.save = _timed(runner_module.RedlineRunner.save, saves)  # type: ignore[method-assign]
    runner_module.gather_run_state = _timed(runner_module.gather_run_state, gathers)
    argv = ["train", "--task", task, "--device", "cpu", "--num_envs", str(num_envs), "--nproc", "1"]
    argv += ["--max_iterations", str(ITERATIONS), "--log_root", str(log_root), "agent.save_interval=1"]
    argv += ["--no_memory_check"]
    if main(argv) != 0:
        raise SystemExit(f"checkpoint_cost: training {task} failed")
    path = sorted(log_root.glob(f"*/*/model_{ITERATIONS - 1}.pt"))[-1]
    checkpoint = torch.load(path, weights_only=True)
    (part,) = checkpoint[RUN_STATE_KEY]["parts"]
    return {
        "task": task,
        "num_envs": num_envs,
        "checkpoint_bytes": path.stat().st_size,
        "run_state_bytes": _size(checkpoint[RUN_STATE_KEY]),
        "parts_bytes": {k: _size(v) for k, v in part["env"].items()} | {"episodes": _size(part["episodes"])},
        "save_s_median": statistics.median(saves),
        "save_s": saves,
        "gather_s_median": statistics.median(gathers),
    }


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit() or int(argv[1]) < 1:
        print("checkpoint_cost: usage: checkpoint_cost.py TASK NUM_ENVS (a positive integer)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(measure(argv[0], int(argv[1]), Path(tmp))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
