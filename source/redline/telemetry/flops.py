"""How hard the learner works the hardware: FLOPs of the networks, of a PPO and of a SAC iteration, and the GPUs'
peaks.

Pure functions of the network shapes (MFU = achieved FLOP/s over the peak of the precision the matmuls run in), so
the model is testable by hand.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

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


def sac_iteration_flops(
    actor: Sequence[int], q: Sequence[int], acted: int, batch: int, gradient_steps: int, policy_steps: int
) -> int:
    """Learner FLOPs of one SAC iteration (matmuls only; backward ~ 2x forward, ~ 1x where only the input's
    gradient is wanted).

    Args:
        actor: the actor MLP's widths (observation ... 2 A).
        q: one Q network's widths (observation + A ... atoms); the critic has two, the target critic two more.
        acted: samples the actor acted on (env steps x envs of this rank).
        batch: samples per gradient step on this rank.
        gradient_steps: critic steps this iteration.
        policy_steps: of those, the steps that also updated the actor (every ``policy_frequency``-th).
    """
    a, q1 = mlp_flops(actor), mlp_flops(q)
    # critic step: the target's next action (actor) and both target Qs, then both Qs forward + backward
    critic_step = a + 2 * q1 + 2 * 3 * q1
    # policy step: the actor forward + backward, both Qs forward + backward to their input (no weight gradients)
    policy_step = 3 * a + 2 * 2 * q1
    return acted * a + batch * (gradient_steps * critic_step + policy_steps * policy_step)


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


def layer_sizes(mlp: object) -> list[int]:
    """Widths (input, hidden..., output) of the ``Linear`` layers of a ``torch.nn.Sequential`` MLP."""
    # heavy: torch, not before the CLI has parsed
    from torch import nn

    linears = [m for m in mlp.modules() if isinstance(m, nn.Linear)]  # type: ignore[attr-defined]
    return [linears[0].in_features, *(m.out_features for m in linears)]
