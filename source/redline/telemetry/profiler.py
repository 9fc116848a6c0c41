"""``redline train --profile``: a torch.profiler Chrome trace of one training iteration.

The trace (open it in ``chrome://tracing`` or https://ui.perfetto.dev) covers one whole iteration — the rollout's
env steps and policy calls, GAE and the PPO update — with CPU ops, and CUDA kernels on a GPU. The first iteration
of a run pays for allocations and kernel compilation, so the second one is traced when there is one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

TRACE = Path("profile") / "trace.json"
"""Where the trace goes, relative to the run folder."""


class IterationProfiler:
    """Profiles iteration ``iteration`` and writes its trace to ``path``.

    Args:
        path: the Chrome trace file to write (its folder is created).
        iteration: the iteration to trace.
        device: the device trained on (``cuda*`` adds CUDA kernel activity).
    """

    def __init__(self, path: Path, iteration: int, device: str) -> None:
        self.path = path
        self.iteration = iteration
        self._device = device

    @classmethod
    def for_run(cls, run_dir: Path, first: int, num_iterations: int, device: str) -> IterationProfiler:
        """Trace the run's second iteration (its first when it has only one) into ``run_dir/profile/trace.json``."""
        return cls(run_dir / TRACE, first + 1 if num_iterations > 1 else first, device)

    @contextlib.contextmanager
    def trace(self, iteration: int) -> Iterator[None]:
        """Wrap every iteration in this; profiles the chosen one and writes its trace when it ends."""
        if iteration != self.iteration:
            yield
            return
        # heavy: torch, not before the CLI has parsed
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU]
        if self._device.startswith("cuda"):
            activities.append(ProfilerActivity.CUDA)
        with profile(activities=activities, record_shapes=True) as prof:
            yield
        self.path.parent.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(self.path))
        print(f"[redline] profiler trace of iteration {iteration}: {self.path}", flush=True)
