"""The NVML sampler: a no-op without a GPU or NVML, per-iteration means with a fake sampling function."""

from __future__ import annotations

import builtins
import threading
import time

import pytest

from redline.telemetry.gpu_monitor import GpuMonitor, nvml_sampler


def test_cpu_is_a_no_op() -> None:
    assert nvml_sampler("cpu") is None
    with GpuMonitor("cpu") as monitor:
        assert not monitor.active
        assert monitor.read() == {"gpu_util": None, "gpu_mem_gb": None}


def test_missing_nvml_does_not_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_pynvml(name: str, *args: object, **kwargs: object) -> object:
        if name == "pynvml":
            raise ImportError("No module named 'pynvml'")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_pynvml)
    assert nvml_sampler("cuda:0") is None
    monitor = GpuMonitor("cuda:0")
    assert not monitor.active and monitor.read()["gpu_util"] is None
    monitor.close()


def test_nvml_init_failure_does_not_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    pynvml = pytest.importorskip("pynvml")
    import torch

    def fail() -> None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(pynvml, "nvmlInit", fail)
    assert nvml_sampler("cuda:0") is None


def test_means_since_last_read_with_a_fake_sampler() -> None:
    values = iter([(10.0, 1.0), (30.0, 3.0), (50.0, 5.0)])
    done = threading.Event()

    def sample() -> tuple[float, float]:
        try:
            return next(values)
        except StopIteration:
            done.set()
            raise RuntimeError("GPU lost") from None  # a sampling error ends the thread, not training

    monitor = GpuMonitor("cuda:0", interval_s=0.001, sample=sample)
    assert monitor.active
    assert done.wait(5.0)
    time.sleep(0.01)
    assert monitor.read() == pytest.approx({"gpu_util": 30.0, "gpu_mem_gb": 3.0})
    assert monitor.read() == {"gpu_util": None, "gpu_mem_gb": None}  # nothing new since
    monitor.close()
    assert not monitor.active


def test_samples_every_interval() -> None:
    calls: list[float] = []

    def sample() -> tuple[float, float]:
        calls.append(time.perf_counter())
        return 80.0, 2.5

    with GpuMonitor("cuda:0", interval_s=0.02, sample=sample) as monitor:
        time.sleep(0.2)
        reading = monitor.read()
    assert 4 <= len(calls) <= 12  # ~10 at 20 ms over 200 ms, with scheduling slack
    assert reading == {"gpu_util": 80.0, "gpu_mem_gb": 2.5}
