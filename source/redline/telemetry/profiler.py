"""``redline train --profile``: a torch.profiler Chrome trace of one training iteration.

The trace (open it in ``chrome://tracing`` or https://ui.perfetto.dev) covers one whole iteration — the rollout's
env steps and policy calls, GAE and the PPO update — with CPU ops, and CUDA kernels on a GPU. The first iteration
of a run pays for allocations and kernel compilation, so the second one is traced when there is one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
        self._prof: Any = None

    @classmethod
    def for_run(cls, run_dir: Path, first: int, num_iterations: int, device: str) -> IterationProfiler:
        """Trace the run's second iteration (its first when it has only one) into ``run_dir/profile/trace.json``."""
        return cls(run_dir / TRACE, first + 1 if num_iterations > 1 else first, device)

    def start(self, iteration: int) -> None:
        """Call at the start of every iteration; starts profiling on the chosen one."""
        if iteration != self.iteration:
            return
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU]
        if self._device.startswith("cuda"):
            activities.append(ProfilerActivity.CUDA)
        self._prof = profile(activities=activities, record_shapes=True)
        self._prof.start()

    def stop(self, iteration: int) -> None:
        """Call after every iteration's update; stops profiling and writes the trace on the chosen one."""
        if iteration != self.iteration or self._prof is None:
            return
        self._prof.stop()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._prof.export_chrome_trace(str(self.path))
        self._prof = None
        print(f"[redline] profiler trace of iteration {iteration}: {self.path}", flush=True)
