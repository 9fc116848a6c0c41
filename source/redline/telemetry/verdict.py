"""Where an iteration's time goes and what limits the run: the time split's phases and the bottleneck verdict.

Pure functions of per-iteration timings (seconds, measured with host timers around each phase and read once per
iteration), so the verdict is testable on synthetic numbers; the FLOP / MFU model it may take is
:mod:`redline.telemetry.flops`.
"""

from __future__ import annotations

from collections.abc import Mapping

PHASES = ("env_s", "inference_s", "gae_s", "update_s", "allreduce_s", "logging_s")
"""Time-split keys of a ``metrics.jsonl`` record [s per iteration]: env stepping, policy inference and storage
writes, returns/advantages, the learner's update, gradient all-reduce (multi-process), metrics/checkpoint writing."""

ADVICE: dict[str, dict[str, str]] = {
    "ppo": {
        "communication": "fewer minibatches per epoch (one all-reduce each), or fewer, larger ranks",
        "host": "--capture on (CUDA graphs of the update), or more envs per process",
        "learner": "fewer learning epochs or minibatches, or a smaller network",
        "cpu_bf16": "--precision bf16 (this CPU has {units} units: the update ran 1.67x faster)",
    },
    "sac": {
        "communication": "fewer gradient steps (agent.algorithm.updates_per_step: one all-reduce each), or fewer, "
        "larger ranks",
        "host": "--capture on (CUDA graphs of each gradient step), a larger agent.algorithm.batch_size with a lower "
        "agent.algorithm.updates_per_step (fewer, larger gradient steps), or more envs per process",
        "learner": "fewer gradient steps per env step (agent.algorithm.updates_per_step), a smaller "
        "agent.algorithm.batch_size, or a smaller critic (agent.critic.hidden_dims, agent.critic.num_atoms)",
        "cpu_bf16": "--precision bf16 (this CPU has {units} units: SAC's update at its CPU defaults ran 1.35x faster)",
    },
}
"""The learner's own knobs per algorithm, for the verdicts whose fix is the learner's: SAC has no epochs or
minibatches, and one all-reduce per gradient step."""

GPU_IDLE_PCT = 50.0
"""Below this mean GPU utilisation [%] an iteration leaves the GPU idle more than busy: its time goes to launching
kernels and Python, not arithmetic."""


def verdict(
    split: Mapping[str, float],
    *,
    device_type: str,
    precision: str,
    gflops: float | None = None,
    peak: float | None = None,
    gpu_util: float | None = None,
    cpu_bf16: str | None = None,
    algorithm: str = "ppo",
) -> tuple[str, str]:
    """Name the bottleneck of an iteration and the next thing to try.

    Args:
        split: seconds per phase (keys of :data:`PHASES`; missing ones count as 0).
        device_type: ``"cuda"`` or ``"cpu"``.
        precision: the learner's precision, ``"bf16"`` or ``"fp32"``.
        gflops: achieved learner GFLOP/s, if known.
        peak: the device's peak TFLOP/s for that precision, if known.
        gpu_util: the GPU's mean utilisation over the iteration [%] (NVML), if known.
        cpu_bf16: the CPU's bf16 units where bf16 pays at the run's network widths
            (:func:`redline.learning.precision.cpu_bf16_pays`; None: no units, or layers too narrow).
        algorithm: the learner, a key of :data:`ADVICE` (``"ppo"`` or ``"sac"``): whose knobs the advice names.

    Returns:
        ``(bottleneck, action)``: bottleneck is ``env-bound``, ``learner-bound``, ``host-overhead-bound`` or
        ``communication-bound``.
    """
    advice = ADVICE[algorithm]
    total = sum(split.get(k, 0.0) for k in PHASES) or 1e-12
    share = {k: split.get(k, 0.0) / total for k in PHASES}
    learner = share["inference_s"] + share["gae_s"] + share["update_s"]
    if share["allreduce_s"] >= 0.25:
        return "communication-bound", advice["communication"]
    gpu_idle = device_type == "cuda" and gpu_util is not None and gpu_util < GPU_IDLE_PCT
    if share["env_s"] >= 0.5:
        if gpu_idle:  # the env's kernels leave the GPU idle: launch-bound, not arithmetic-bound
            return "env-bound", f"more envs per process: the GPU is only {gpu_util:.0f} % busy"
        return "env-bound", "more envs per process (each env step amortises better), or a cheaper physics preset"
    if learner >= 0.5:
        mfu = None if gflops is None or peak is None else gflops / (peak * 1e3)
        if gpu_idle or (device_type == "cuda" and mfu is not None and mfu < 0.05):
            return "host-overhead-bound", advice["host"]
        if device_type == "cuda" and precision == "fp32":
            return "learner-bound", "--precision bf16"
        if device_type == "cpu" and precision == "fp32" and cpu_bf16 is not None:
            return "learner-bound", advice["cpu_bf16"].format(units=cpu_bf16)
        return "learner-bound", advice["learner"]
    return "host-overhead-bound", "logging less often or more envs per process (logging or Python overhead dominates)"
