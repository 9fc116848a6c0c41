"""GPU utilisation and memory sampled by NVML in a background thread, averaged per training iteration.

The sampler never touches the training loop's CUDA stream: NVML reads the driver's counters, so sampling costs the
hot path nothing. Without a CUDA device, without ``pynvml`` (nvidia-ml-py) or when NVML fails to initialise,
it is a no-op whose readings are None.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

Sample = Callable[[], tuple[float, float]]
"""Returns ``(utilisation [%], memory used [GB])`` of one GPU now."""


def nvml_sampler(device: str) -> tuple[Sample, Callable[[], None]] | None:
    """An NVML sampling function for torch device ``device`` and the function that shuts NVML down, or None
    when there is no CUDA device or NVML is unavailable."""
    if not device.startswith("cuda"):
        return None
    try:
        # optional: NVML, only on an NVIDIA host
        import pynvml
        import torch

        if not torch.cuda.is_available():
            return None
        pynvml.nvmlInit()
    except Exception:  # no nvidia-ml-py, no driver, or no NVML library
        return None
    try:
        # the device's UUID, so CUDA_VISIBLE_DEVICES remapping cannot make us watch another GPU
        uuid = str(torch.cuda.get_device_properties(torch.device(device)).uuid)
        handle = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
    except Exception:
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(torch.device(device).index or 0)
        except Exception:
            pynvml.nvmlShutdown()
            return None

    def sample() -> tuple[float, float]:
        return (
            float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu),
            pynvml.nvmlDeviceGetMemoryInfo(handle).used / 1e9,
        )

    return sample, pynvml.nvmlShutdown


class GpuMonitor:
    """Samples a GPU every ``interval_s`` in a daemon thread; :meth:`read` returns the means since the last read.

    Args:
        device: the torch device trained on (``cpu`` makes this a no-op).
        interval_s: sampling period [s].
        sample: a sampling function to use instead of NVML (tests); None: NVML for ``device``.
    """

    def __init__(self, device: str, interval_s: float = 0.1, sample: Sample | None = None) -> None:
        self._shutdown: Callable[[], None] = lambda: None
        if sample is None:
            found = nvml_sampler(device)
            if found is not None:
                sample, self._shutdown = found
        self._sample = sample
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._sums = [0.0, 0.0]
        self._count = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if sample is not None:
            self._thread = threading.Thread(target=self._run, name="redline-gpu-monitor", daemon=True)
            self._thread.start()

    @property
    def active(self) -> bool:
        """Whether a sampling thread runs."""
        return self._thread is not None

    def _run(self) -> None:
        assert self._sample is not None
        while not self._stop.is_set():
            try:
                util, mem_gb = self._sample()
            except Exception:  # NVML errors mid-run (GPU lost, driver reset): stop sampling, keep training
                return
            with self._lock:
                self._sums[0] += util
                self._sums[1] += mem_gb
                self._count += 1
            self._stop.wait(self._interval_s)

    def read(self) -> dict[str, float | None]:
        """``{"gpu_util": mean utilisation [%], "gpu_mem_gb": mean memory used [GB]}`` since the last read
        (None when nothing was sampled)."""
        with self._lock:
            sums, count = self._sums, self._count
            self._sums, self._count = [0.0, 0.0], 0
        if count == 0:
            return {"gpu_util": None, "gpu_mem_gb": None}
        return {"gpu_util": sums[0] / count, "gpu_mem_gb": sums[1] / count}

    def close(self) -> None:
        """Stop the thread and shut NVML down."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5 * self._interval_s + 1.0)
            self._thread = None
            with contextlib.suppress(Exception):  # NVML already gone: nothing left to release
                self._shutdown()

    def __enter__(self) -> GpuMonitor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
