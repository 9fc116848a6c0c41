"""Where an iteration's time goes, how hard the learner works the hardware, and what limits the run.

Pure functions of per-iteration timings (seconds, measured with host timers around each phase and read once per
iteration) and of the network shapes, so the verdict is testable on synthetic numbers.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

PHASES = ("env_s", "inference_s", "gae_s", "update_s", "allreduce_s", "logging_s")
"""Time-split keys of a ``metrics.jsonl`` record [s per iteration]: env stepping, policy inference and storage
writes, returns/advantages, the PPO update, gradient all-reduce (multi-process), metrics/checkpoint writing."""

PEAK_TFLOPS = {
    # dense peaks from the vendors' data sheets [TFLOP/s]: (bf16 tensor core, tf32 tensor core, fp32 non-tensor)
    "NVIDIA H200": (989.0, 494.0, 67.0),
    "NVIDIA H100 80GB HBM3": (989.0, 494.0, 67.0),
    "NVIDIA H100 PCIe": (756.0, 378.0, 51.0),
    "NVIDIA A100-SXM4-80GB": (312.0, 156.0, 19.5),
    "NVIDIA A100-SXM4-40GB": (312.0, 156.0, 19.5),
    "NVIDIA A100 80GB PCIe": (312.0, 156.0, 19.5),
    "NVIDIA A100-PCIE-40GB": (312.0, 156.0, 19.5),
    "NVIDIA L40S": (362.0, 183.0, 91.6),
    "NVIDIA GeForce RTX 4090": (165.0, 82.6, 82.6),
    "NVIDIA A10": (125.0, 62.5, 31.2),
}
"""Peak throughput by the exact name ``torch.cuda.get_device_name`` reports, for the MFU estimate. A GPU not listed
(an A10G is not an A10, an H100 PCIe not an SXM) has no MFU rather than a wrong one."""


def mlp_flops(sizes: Sequence[int]) -> int:
    """FLOPs of one sample through an MLP with layer widths ``sizes`` (input, hidden..., output): 2 per MAC."""
    return sum(2 * a * b for a, b in itertools.pairwise(sizes))


def iteration_flops(actor: Sequence[int], critic: Sequence[int], samples: int, epochs: int) -> int:
    """Learner FLOPs of one PPO iteration: a forward of both networks per collected sample, then ``epochs``
    passes of forward + backward (backward ~ 2x forward) over every sample."""
    forward = mlp_flops(actor) + mlp_flops(critic)
    return samples * forward * (1 + 3 * epochs)


GPU_IDLE_PCT = 50.0
"""Below this mean GPU utilisation [%] an iteration leaves the GPU idle more than busy: its time goes to launching
kernels and Python, not arithmetic."""


def peak_tflops(device_name: str, bf16: bool, tf32: bool = False) -> float | None:
    """The peak of the precision the matmuls actually run in on GPU ``device_name`` (exact name), or None when the
    GPU is not in :data:`PEAK_TFLOPS` (or for a CPU).

    Args:
        device_name: ``torch.cuda.get_device_name()``.
        bf16: the matmuls run in bf16.
        tf32: fp32 matmuls run on TF32 tensor cores (``torch.backends.cuda.matmul.allow_tf32``); else the
            non-tensor fp32 peak applies.
    """
    peaks = PEAK_TFLOPS.get(device_name)
    if peaks is None:
        return None
    bf16_peak, tf32_peak, fp32_peak = peaks
    return bf16_peak if bf16 else tf32_peak if tf32 else fp32_peak


def verdict(
    split: Mapping[str, float],
    *,
    device_type: str,
    precision: str,
    gflops: float | None = None,
    peak: float | None = None,
    gpu_util: float | None = None,
) -> tuple[str, str]:
    """Name the bottleneck of an iteration and the next thing to try.

    Args:
        split: seconds per phase (keys of :data:`PHASES`; missing ones count as 0).
        device_type: ``"cuda"`` or ``"cpu"``.
        precision: the learner's precision, ``"bf16"`` or ``"fp32"``.
        gflops: achieved learner GFLOP/s, if known.
        peak: the device's peak TFLOP/s for that precision, if known.
        gpu_util: the GPU's mean utilisation over the iteration [%] (NVML), if known.

    Returns:
        ``(bottleneck, action)``: bottleneck is ``env-bound``, ``learner-bound``, ``host-overhead-bound`` or
        ``communication-bound``.
    """
    total = sum(split.get(k, 0.0) for k in PHASES) or 1e-12
    share = {k: split.get(k, 0.0) / total for k in PHASES}
    learner = share["inference_s"] + share["gae_s"] + share["update_s"]
    if share["allreduce_s"] >= 0.25:
        return "communication-bound", "fewer minibatches per epoch (one all-reduce each), or fewer, larger ranks"
    gpu_idle = device_type == "cuda" and gpu_util is not None and gpu_util < GPU_IDLE_PCT
    if share["env_s"] >= 0.5:
        if gpu_idle:  # the env's kernels leave the GPU idle: launch-bound, not arithmetic-bound
            return "env-bound", f"more envs per process: the GPU is only {gpu_util:.0f} % busy"
        return "env-bound", "more envs per process (each env step amortises better), or a cheaper physics preset"
    if learner >= 0.5:
        mfu = None if gflops is None or peak is None else gflops / (peak * 1e3)
        if gpu_idle or (device_type == "cuda" and mfu is not None and mfu < 0.05):
            return "host-overhead-bound", "--capture on (CUDA graphs of the update), or more envs per process"
        if device_type == "cuda" and precision == "fp32":
            return "learner-bound", "--precision bf16"
        return "learner-bound", "fewer learning epochs or minibatches, or a smaller network"
    return "host-overhead-bound", "logging or Python overhead dominates: log less often, or more envs per process"


def layer_sizes(mlp: object) -> list[int]:
    """Widths (input, hidden..., output) of the ``Linear`` layers of a ``torch.nn.Sequential`` MLP."""
    from torch import nn

    linears = [m for m in mlp.modules() if isinstance(m, nn.Linear)]  # type: ignore[attr-defined]
    return [linears[0].in_features, *(m.out_features for m in linears)]
