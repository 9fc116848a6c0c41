"""Adam over one flat fp32 buffer, with a tensor learning rate, grad-norm clipping and a device-side skip flag.

The parameters of the actor and the critic become views into one contiguous fp32 buffer (and their ``.grad`` views
into a second), so the whole optimizer step is one fused Adam pass per segment (torch's ``_fused_adam_``, the kernel
behind ``torch.optim.Adam(fused=True)``) instead of a dozen kernels per parameter, and a later all-reduce is one call.
The learning rate is a 0-dim device tensor and the step is taken or skipped by a device flag (the kernel's
``found_inf``): nothing is read back to the host, so a step can be captured in a CUDA graph.

The maths is torch.optim.Adam's (no weight decay, no amsgrad) and :meth:`FlatAdam.state_dict` writes its format, so
rsl_rl's ``optimizer.load_state_dict(checkpoint["optimizer_state_dict"])`` accepts a redline checkpoint.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn


class FlatAdam:
    """Adam with fp32 master weights packed flat; parameters are grouped into segments clipped separately."""

    def __init__(
        self,
        segments: Sequence[Iterable[nn.Parameter]],
        lr: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        reduce_extra: int = 0,
    ) -> None:
        """Args:
        segments: parameter groups whose gradient norms are clipped separately (e.g. actor, critic); together
            they form one optimizer parameter group, in this order (rsl_rl's ``chain(actor, critic)`` order).
        lr: initial learning rate.
        betas, eps: Adam's.
        reduce_extra: floats of room after the gradient in :attr:`reduce_buffer`, for statistics that travel in
            the same all-reduce as the gradient.

        The parameters must already sit on their final device; afterwards ``module.to()`` would detach them from
        the flat buffer. Their ``.grad`` must not be set to ``None`` (``module.zero_grad()``); use :meth:`zero_grad`.
        """
        self.params: list[nn.Parameter] = []
        self.segments: list[slice] = []
        for seg in segments:
            start = sum(p.numel() for p in self.params)
            self.params.extend(seg)
            self.segments.append(slice(start, sum(p.numel() for p in self.params)))
        first = self.params[0]
        total = self.segments[-1].stop
        kw: dict[str, Any] = {"device": first.device, "dtype": torch.float32}
        self.flat_param = torch.empty(total, **kw)
        self.reduce_buffer = torch.zeros(total + reduce_extra, **kw)
        """``[gradient | extra]``: what one data-parallel all-reduce sums (the gradient part is :attr:`flat_grad`)."""
        self.flat_grad = self.reduce_buffer[:total]
        self.reduce_extra = self.reduce_buffer[total:]
        """``(reduce_extra,)`` room for statistics reduced together with the gradient."""
        self.exp_avg = torch.zeros(total, **kw)
        self.exp_avg_sq = torch.zeros(total, **kw)
        self.steps = torch.zeros((), **kw)
        """Optimizer steps taken (skipped steps do not count), as Adam's per-parameter ``step``."""
        self._snapshot = tuple(
            torch.empty_like(x) for x in (self.flat_param, self.exp_avg, self.exp_avg_sq, self.steps)
        )
        """Parameters, moments and step count at the last :meth:`snapshot`."""
        self.lr = torch.tensor(float(lr), **kw)
        """The learning rate, a 0-dim device tensor; change it in place (``lr.copy_``)."""
        self.betas, self.eps = (float(betas[0]), float(betas[1])), float(eps)
        self._slices: list[slice] = []
        offset = 0
        for p in self.params:
            if p.dtype != torch.float32:
                raise TypeError(f"FlatAdam keeps fp32 master weights; got a {p.dtype} parameter")
            sl = slice(offset, offset + p.numel())
            self.flat_param[sl].copy_(p.detach().reshape(-1))
            p.data = self.flat_param[sl].view_as(p)
            self._slices.append(sl)
            offset = sl.stop
        self._grad_views = [self.flat_grad[sl].view_as(p) for sl, p in zip(self._slices, self.params, strict=True)]
        self.bind_grads()

    def bind_grads(self) -> None:
        """(Re)attach every parameter's ``.grad`` to its view of the flat gradient buffer."""
        for p, g in zip(self.params, self._grad_views, strict=True):
            if p.grad is not g:
                p.grad = g

    def zero_grad(self) -> None:
        """Zero the flat gradient (one kernel); backward passes then accumulate into it."""
        self.flat_grad.zero_()

    def grad_norms(self) -> torch.Tensor:
        """L2 norm of each segment's gradient, shape ``(num_segments,)``."""
        return torch.stack([torch.linalg.vector_norm(self.flat_grad[s]) for s in self.segments])

    @torch.no_grad()
    def step(self, ok: torch.Tensor, max_norm: float | None, norms: torch.Tensor | None = None) -> torch.Tensor:
        """Clip each segment's gradient to ``max_norm``, then take one Adam step where ``ok`` (a device bool).

        Where ``ok`` is False nothing changes: parameters, moments and the step count stay as they were (the
        gradient, which may hold NaN/Inf, is replaced by zeros before it touches any state).

        Args:
            ok: 0-dim bool tensor; False skips the step.
            max_norm: clip threshold per segment (``None``: no clipping).
            norms: the segments' gradient norms if already computed (:meth:`grad_norms`).

        Returns:
            0-dim bool: the parameters after the step are finite (one reduction over them). A finite gradient can
            still overflow them (a finite but huge learning rate, weights near float32's limit); the caller then
            rolls back to a :meth:`snapshot` (:meth:`restore_unless`).
        """
        skip = (~ok).float()  # found_inf: 1.0 makes the kernel return before it touches anything
        scale = None
        if max_norm is not None:
            norms = self.grad_norms() if norms is None else norms
            # clip_grad_norm_'s coefficient min(1, max_norm / (‖g‖ + 1e-6)), as the divisor the kernel applies:
            # max(1, (‖g‖ + 1e-6) / max_norm); 1 on a skipped step (its norm may not be finite)
            scale = torch.where(ok, ((norms + 1e-6) / max_norm).clamp(min=1.0), 1.0)
        self.steps += ok.float()  # Adam's step count, read by the kernel for the bias corrections
        self._adam(ok, skip, scale)
        # one reduction instead of an elementwise isfinite (~5x fewer passes): a NaN or Inf anywhere makes the sum
        # non-finite; a finite sum past float32's range would need weights near 1e33, overflowing anyway
        return torch.isfinite(self.flat_param.sum())

    def snapshot(self) -> None:
        """Keep the parameters, moments and step count (three flat copies; once per update, not per step)."""
        for kept, live in zip(self._snapshot, self._state(), strict=True):
            kept.copy_(live)

    def restore_unless(self, ok: torch.Tensor) -> None:
        """Return to the last :meth:`snapshot` where the device flag ``ok`` is False (no host read)."""
        for kept, live in zip(self._snapshot, self._state(), strict=True):
            live.copy_(torch.where(ok, live, kept))

    def _state(self) -> tuple[torch.Tensor, ...]:
        return self.flat_param, self.exp_avg, self.exp_avg_sq, self.steps

    def _adam(self, ok: torch.Tensor, skip: torch.Tensor, scale: torch.Tensor | None) -> None:
        """The Adam update itself, in place (see :meth:`step`)."""
        beta1, beta2 = self.betas
        grad = self.flat_grad
        if torch.compiler.is_compiling():  # the fused kernel's tensor-lr overload cannot be traced (no fake impl)
            self._traceable_step(ok, scale)
            return
        for i, s in enumerate(self.segments):
            # one fused pass per segment (torch.optim.Adam(fused=True)'s kernel, CPU and CUDA):
            # g ← g / scale;  m ← β1 m + (1 − β1) g;  v ← β2 v + (1 − β2) g²;
            # θ ← θ − lr / (1 − β1^t) · m / (sqrt(v / (1 − β2^t)) + eps)
            torch._fused_adam_(
                [self.flat_param[s]],
                [grad[s]],
                [self.exp_avg[s]],
                [self.exp_avg_sq[s]],
                [],
                [self.steps],
                lr=self.lr,
                beta1=beta1,
                beta2=beta2,
                weight_decay=0.0,
                eps=self.eps,
                amsgrad=False,
                maximize=False,
                grad_scale=None if scale is None else scale[i],
                found_inf=skip,
            )

    def _traceable_step(self, ok: torch.Tensor, scale: torch.Tensor | None) -> None:
        """The fused step's maths in plain tensor ops, for ``torch.compile`` (equal to it within rounding).

        Args:
            ok: 0-dim bool; False keeps parameters and moments as they were.
            scale: the per-segment gradient divisors ``(num_segments,)``, or None.
        """
        beta1, beta2 = self.betas
        bias1 = 1.0 - torch.pow(beta1, self.steps)  # 1 − β1^t
        bias2 = 1.0 - torch.pow(beta2, self.steps)  # 1 − β2^t
        for i, s in enumerate(self.segments):
            g = self.flat_grad[s] if scale is None else self.flat_grad[s] / scale[i]  # g ← g / scale
            m = torch.lerp(self.exp_avg[s], g, 1.0 - beta1)  # m ← β1 m + (1 − β1) g
            v = self.exp_avg_sq[s] * beta2 + (1.0 - beta2) * g * g  # v ← β2 v + (1 − β2) g²
            # θ ← θ − lr / (1 − β1^t) · m / (sqrt(v) / sqrt(1 − β2^t) + eps)
            param = self.flat_param[s] - (self.lr / bias1) * m / (v.sqrt() / bias2.sqrt() + self.eps)
            self.flat_param[s].copy_(torch.where(ok, param, self.flat_param[s]))
            self.exp_avg[s].copy_(torch.where(ok, m, self.exp_avg[s]))
            self.exp_avg_sq[s].copy_(torch.where(ok, v, self.exp_avg_sq[s]))

    def state_dict(self) -> dict:
        """torch.optim.Adam's state-dict format (one parameter group), on the parameters' device."""
        state = {}
        for i, (sl, p) in enumerate(zip(self._slices, self.params, strict=True)):
            state[i] = {
                "step": self.steps.detach().cpu().clone(),
                "exp_avg": self.exp_avg[sl].view_as(p).clone(),
                "exp_avg_sq": self.exp_avg_sq[sl].view_as(p).clone(),
            }
        group = {
            "lr": float(self.lr),
            "betas": self.betas,
            "eps": self.eps,
            "weight_decay": 0,
            "amsgrad": False,
            "maximize": False,
            "foreach": None,
            "capturable": False,
            "differentiable": False,
            "fused": None,
            "decoupled_weight_decay": False,
            "params": list(range(len(self.params))),
        }
        return {"state": state, "param_groups": [group]}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load torch.optim.Adam's format (from redline or rsl_rl), one group over the same parameters."""
        groups = state_dict["param_groups"]
        if len(groups) != 1 or len(groups[0]["params"]) != len(self.params):
            sizes = [len(g["params"]) for g in groups]
            raise ValueError(f"optimizer state has parameter groups of sizes {sizes}; expected [{len(self.params)}]")
        group = groups[0]
        if group.get("weight_decay", 0) or group.get("amsgrad", False):
            raise ValueError("optimizer state uses weight decay or amsgrad, which FlatAdam does not implement")
        self.lr.fill_(float(group["lr"]))
        self.betas, self.eps = (float(group["betas"][0]), float(group["betas"][1])), float(group["eps"])
        steps = None
        for i, sl in enumerate(self._slices):
            pid = group["params"][i]
            entry = state_dict["state"].get(pid)
            if entry is None:
                self.exp_avg[sl].zero_()
                self.exp_avg_sq[sl].zero_()
                continue
            self.exp_avg[sl].copy_(entry["exp_avg"].reshape(-1))
            self.exp_avg_sq[sl].copy_(entry["exp_avg_sq"].reshape(-1))
            steps = entry["step"] if steps is None else steps
        self.steps.fill_(float(steps) if steps is not None else 0.0)


def adaptive_lr(
    lr: torch.Tensor, kl: torch.Tensor, desired_kl: float, min_lr: float, max_lr: float, factor: float = 1.5
) -> torch.Tensor:
    """rsl_rl's KL-adaptive learning rate, decided on the device (no host sync).

    lr / factor (floored at ``min_lr``) when KL > 2 · desired; lr · factor (capped at ``max_lr``) when
    0 < KL < desired / 2; unchanged otherwise, including when the KL is NaN.
    """
    lower = torch.where(kl > 2.0 * desired_kl, (lr / factor).clamp(min=min_lr), lr)
    return torch.where((kl < desired_kl / 2.0) & (kl > 0.0), (lr * factor).clamp(max=max_lr), lower)
