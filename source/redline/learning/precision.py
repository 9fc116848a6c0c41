"""The precision policy, in one place: what runs in bf16 and what stays in fp32.

bf16 (``torch.autocast``) covers the hidden layers of the actor and critic MLPs, where almost all the arithmetic is.
Everything that a rounding error would bias stays fp32: observation normalisation, the output heads (the action mean
and the value are computed by an fp32 last ``Linear`` on the fp32-cast hidden activation), log-probabilities, the
ratio, GAE, advantage normalisation, value targets, the master weights and the optimizer state. bf16 has fp32's
exponent range, so no GradScaler is needed (only fp16 needs one).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

from redline.validation import PRECISION_MODES, check_choice, check_precision


def bf16_supported(device: torch.device | str) -> bool:
    """True on CUDA devices with native bf16 tensor cores (compute capability 8.0+, Ampere and later)."""
    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return False
    return torch.cuda.get_device_capability(device)[0] >= 8


CPU_BF16_MIN_WIDTH = 128
"""[units] On a CPU with bf16 units, bf16 pays for networks whose widest hidden layer is at least this wide (measured
on an AVX512-BF16 EPYC, docs/performance.md, 2026-12-06: the PPO update 1.6x faster at Go1's [128, 128, 128],
1.3x at Ant's [400, 200, 100], 1.67x at [512, 256, 128]; 1.3x *slower* at Cartpole's [32, 32], where autocast's casts
cost more than the arithmetic they save)."""


def cpu_bf16_units() -> str | None:
    """The bf16 matrix units of this process's CPU, as torch's oneDNN sees them: ``"amx_bf16"`` (Intel AMX tiles),
    ``"avx512_bf16"`` (AVX512-BF16 dot products) or None (bf16 is emulated: ~20x slower than fp32 on the EPYCs
    without it)."""
    if torch.cpu._is_amx_tile_supported():
        return "amx_bf16"
    if torch.cpu._is_avx512_bf16_supported():
        return "avx512_bf16"
    return None


def cpu_bf16_pays(widest_hidden: int) -> str | None:
    """This CPU's bf16 units (:func:`cpu_bf16_units`) when bf16 speeds up networks whose widest hidden layer is
    ``widest_hidden`` units (at least :data:`CPU_BF16_MIN_WIDTH`), else None."""
    return cpu_bf16_units() if widest_hidden >= CPU_BF16_MIN_WIDTH else None


def requested_precision[T: (str, None)](explicit: str | None, use_mixed_precision: bool, otherwise: T) -> str | T:
    """The precision an rsl_rl agent config asks for, read in one place: ``explicit`` wins; else rsl_rl's
    ``algorithm.use_mixed_precision`` True is ``"bf16"``; else ``otherwise``, the one difference between the two
    readings — ``"fp32"`` for the drop-in (:meth:`Precision.for_rsl_rl`: rsl_rl's semantics, fp32 on every device),
    None for ``redline train``'s learner (:meth:`redline.learning.config.PPOConfig.from_rsl_rl`: the config keeps its
    own, ``auto`` by default; docs/cli.md)."""
    if explicit is not None:
        return explicit
    return "bf16" if use_mixed_precision else otherwise


@dataclass(frozen=True)
class Precision:
    """Which arithmetic the network bodies use: ``"bf16"`` (autocast) or ``"fp32"``."""

    mode: Literal["bf16", "fp32"] = "fp32"
    """``"bf16"``: hidden layers under bf16 autocast, everything else fp32. ``"fp32"``: all fp32."""

    def __post_init__(self) -> None:
        check_choice("precision", self.mode, PRECISION_MODES, "mode")

    @classmethod
    def resolve(cls, requested: str, device: torch.device | str, cpu_widest_hidden: int | None = None) -> Precision:
        """Turn ``"auto" | "bf16" | "fp32"`` into a concrete policy for ``device``.

        ``"auto"`` is bf16 on CUDA devices that support it; on a CPU, bf16 where ``cpu_widest_hidden`` (the widest
        hidden layer of the learner's networks [units]) is given and bf16 pays there (:func:`cpu_bf16_pays`: the
        CPU has bf16 units and the layers are wide enough; the PPO and SAC learners pass it, after their learning
        studies: docs/learning_parity.md's study 8, docs/offpolicy.md's SAC precision study), else fp32 — CPUs
        without bf16 units run bf16 ~20x slower.
        """
        check_precision(requested)
        if requested == "auto":
            on_cpu = torch.device(device).type == "cpu"
            cpu_bf16 = on_cpu and cpu_widest_hidden is not None and cpu_bf16_pays(cpu_widest_hidden) is not None
            return cls("bf16" if bf16_supported(device) or cpu_bf16 else "fp32")
        return cls(requested)  # type: ignore[arg-type]

    @classmethod
    def for_learner(cls, cfg: Any, device: torch.device | str) -> Precision:
        """:meth:`resolve` for a learner config with ``precision`` and ``actor``/``critic`` ``hidden_dims`` (PPO's
        and SAC's): on a CPU, ``auto`` weighs the widest hidden layer of both networks."""
        widest = max((*cfg.actor.hidden_dims, *cfg.critic.hidden_dims), default=0)
        return cls.resolve(cfg.precision, device, cpu_widest_hidden=widest)

    @classmethod
    def for_rsl_rl(cls, use_mixed_precision: bool, requested: str | None, device: torch.device | str) -> Precision:
        """The drop-in's precision (:mod:`redline.learning.rsl_rl`), read as rsl_rl 5.5.1 reads its algorithm config:
        ``use_mixed_precision`` True is bf16 (rsl_rl autocasts to bf16 on any device), False — rsl_rl's and Isaac
        Lab's default — fp32 on every device, a bf16-capable GPU included; ``requested`` (redline's own
        ``algorithm.precision``: auto, bf16 or fp32; None: not set) wins where a config sets it."""
        return cls.resolve(requested_precision(requested, use_mixed_precision, "fp32"), device)

    @property
    def is_bf16(self) -> bool:
        """True when the network bodies run under bf16 autocast."""
        return self.mode == "bf16"

    def body_autocast(self, device: torch.device | str) -> contextlib.AbstractContextManager:
        """The context to run a network body in: bf16 autocast, or nothing under fp32."""
        if not self.is_bf16:
            return contextlib.nullcontext()
        return torch.autocast(device_type=torch.device(device).type, dtype=torch.bfloat16)

    def mlp_forward(self, body: Sequence[nn.Module], head: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        """Run ``body`` (hidden layers) under the body precision, then ``head`` in fp32 outside autocast.

        Args:
            body: The hidden ``Linear``/activation layers, in order.
            head: The last ``Linear`` layer (the action-mean or value head); its weights are fp32.
            x: fp32 input, shape ``(B, in_dim)``.

        Returns:
            The head output in fp32, shape ``(B, out_dim)``.
        """
        with self.body_autocast(x.device):
            for layer in body:
                x = layer(x)
        # fp32 head: cast the (possibly bf16) hidden activation up and run the last Linear outside any autocast
        x = x if x.dtype == torch.float32 else x.float()
        if torch.is_autocast_enabled(x.device.type):  # a caller wrapped us in autocast: the head still stays fp32
            with torch.autocast(device_type=x.device.type, enabled=False):
                return head(x)
        return head(x)
