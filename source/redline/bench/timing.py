"""Timing shared by the benches: one device synchronisation, one timed call, medians.

Host timers around device work measure launch time on CUDA unless the device is synchronised before and after;
every bench times through :func:`timed` (or a :class:`~redline.learning.rollout.PhaseTimes` given
:func:`device_sync`), so each does it the same way. Micro-benchmarks of a single op use
``torch.utils.benchmark`` (:func:`median_op_s`), which also warms up and synchronises.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def device_sync(device: str) -> Callable[[], None]:
    """A function that waits for ``device``'s queued work (a no-op off CUDA)."""
    # heavy: torch, not before the CLI has parsed
    import torch

    if torch.device(device).type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def timed(fn: Callable[[], object], sync: Callable[[], None], repeats: int = 1) -> float:
    """Seconds for ``repeats`` calls of ``fn``, the device synchronised before and after [s]."""
    sync()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    sync()
    return time.perf_counter() - start


def median_op_s(fn: Callable[[], object], min_run_time_s: float = 0.2) -> float:
    """Median seconds per call of ``fn`` by ``torch.utils.benchmark`` (warm-up, CUDA synchronisation, enough runs to
    fill ``min_run_time_s``) [s]."""
    # heavy: torch, not before the CLI has parsed
    from torch.utils import benchmark

    return benchmark.Timer(stmt="fn()", globals={"fn": fn}).blocked_autorange(min_run_time=min_run_time_s).median
