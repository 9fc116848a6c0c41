"""The FLOP / MFU model against numbers worked out by hand."""

from __future__ import annotations

from redline.telemetry.flops import iteration_flops, mlp_flops, peak_tflops


def test_flops_by_hand() -> None:
    assert mlp_flops([4, 32, 32, 1]) == 2 * (4 * 32 + 32 * 32 + 32 * 1)  # 2 FLOPs per multiply-add
    # 10 samples, 2 epochs: one forward each while collecting, then 2 x (forward + 2 x forward for backward)
    assert iteration_flops([4, 8, 1], [4, 8, 1], samples=10, epochs=2) == 10 * (2 * 2 * (32 + 8)) * 7
    assert peak_tflops("NVIDIA H200", bf16=True) == 989.0 and peak_tflops("cpu", bf16=False) is None
    assert peak_tflops("NVIDIA H200", bf16=False) == 67.0  # plain fp32 matmuls: no tensor cores
    assert peak_tflops("NVIDIA H200", bf16=False, tf32=True) == 494.0
    assert peak_tflops("NVIDIA H100 PCIe", bf16=True) == 756.0  # not the SXM part's peak
    assert peak_tflops("NVIDIA A10G", bf16=True) is None  # unknown rather than the A10's
