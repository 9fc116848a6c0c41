"""Adam over one flat fp32 buffer: ``torch.optim.Adam`` (fused where the device has the kernel) behind our interface.

The parameters of the actor and the critic become views into one contiguous fp32 buffer (and their ``.grad`` views
into a second), so a data-parallel all-reduce is one call and each network's gradient norm one reduction. The Adam
moments and step counts are views into flat buffers too, handed to ``torch.optim.Adam`` as its state: the update
itself is the library's (``Adam(fused=True)``, one kernel over all parameters), and so is the checkpoint format.

What stays ours, around the library step: per-network gradient clipping (rsl_rl clips the actor and the critic
separately), the learning rate as a 0-dim device tensor (Adam accepts a tensor ``lr`` when fused), a step skipped by a
device flag (Adam's ``found_inf``, the protocol ``GradScaler`` uses) and a one-copy-per-update rollback of weights
that a finite step overflowed. Nothing is read back to the host, so a step can be captured in a CUDA graph
(``capturable=True`` on CUDA).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn
from torch.optim.optimizer import _get_fused_kernels_supported_devices

from redline.learning.flat_params import FlatParams

EXECUTION_FLAGS: dict[str, Any] = {"fused": None, "capturable": False, "foreach": None, "differentiable": False}
"""Adam's per-device execution switches as a saved checkpoint carries them: torch's defaults, so a checkpoint written
with the fused kernel on a GPU loads into rsl_rl's plain Adam on any device (a saved ``capturable=True`` would refuse
to step on the CPU). They choose kernels, not maths."""


def adam_update(
    param: torch.Tensor,
    grad: torch.Tensor,
    exp_avg: torch.Tensor,
    exp_avg_sq: torch.Tensor,
    step: torch.Tensor,
    lr: float | torch.Tensor,
    beta1: float,
    beta2: float,
    eps: float,
    ok: torch.Tensor,
) -> None:
    """One Adam step in place, in plain tensor ops (traceable by ``torch.compile``, where ``torch.optim``'s step
    breaks the graph): ``torch.optim.Adam``'s maths, skipped where the 0-dim bool ``ok`` is False.

    Args:
        param, grad, exp_avg, exp_avg_sq: same-shaped fp32 tensors; ``param`` and the moments change in place.
        step: the step count t *after* this step (the caller advances it where ``ok``), 0-dim.
        lr, beta1, beta2, eps: Adam's.
    """
    bias1 = 1.0 - torch.pow(beta1, step)  # 1 − β1^t
    bias2 = 1.0 - torch.pow(beta2, step)  # 1 − β2^t
    m = torch.lerp(exp_avg, grad, 1.0 - beta1)  # m ← β1 m + (1 − β1) g
    v = exp_avg_sq * beta2 + (1.0 - beta2) * grad * grad  # v ← β2 v + (1 − β2) g²
    # θ ← θ − lr / (1 − β1^t) · m / (sqrt(v) / sqrt(1 − β2^t) + eps)
    new = param - (lr / bias1) * m / (v.sqrt() / bias2.sqrt() + eps)
    param.copy_(torch.where(ok, new, param))
    exp_avg.copy_(torch.where(ok, m, exp_avg))
    exp_avg_sq.copy_(torch.where(ok, v, exp_avg_sq))


def adam_step(optimizer: torch.optim.Adam, found_inf: torch.Tensor, flat: FlatParams, slices: Sequence[slice]) -> None:
    """``optimizer.step()`` skipped where the 0-dim ``found_inf`` is 1.0 (Adam's ``found_inf`` protocol): the
    library's step, or, while ``torch.compile`` traces, :func:`adam_update` per parameter over the same state (made
    by :func:`init_adam_state` beforehand: the library creates it lazily, in its first step).

    Args:
        optimizer: one parameter group, its parameters views of ``flat`` at ``slices`` (:meth:`FlatParams.slices_of`,
            in the group's order); a traced step writes the flat buffer's slices, not the parameters (views that
            the graph did not create, which ``torch.compile`` cannot mutate).
    """
    if not torch.compiler.is_compiling():
        optimizer.found_inf = found_inf  # type: ignore[attr-defined]  # read by Adam.step, as GradScaler's is
        optimizer.step()
        return
    ok = found_inf == 0
    (group,) = optimizer.param_groups
    beta1, beta2 = group["betas"]
    for p, sl in zip(group["params"], slices, strict=True):
        state = optimizer.state[p]
        state["step"] += ok.to(state["step"].dtype)
        param, grad = flat.flat_param[sl], flat.flat_grad[sl]
        exp_avg, exp_avg_sq = state["exp_avg"].view(-1), state["exp_avg_sq"].view(-1)
        adam_update(param, grad, exp_avg, exp_avg_sq, state["step"], group["lr"], beta1, beta2, group["eps"], ok)


def init_adam_state(optimizer: torch.optim.Adam) -> None:
    """Create the state ``torch.optim.Adam`` makes in its first step (zero moments, a zero step count: on the
    parameter's device for the fused or capturable kernels, else on the CPU), for the parameters that have none."""
    for group in optimizer.param_groups:
        on_device = bool(group.get("fused")) or bool(group.get("capturable"))
        for p in group["params"]:
            if optimizer.state.get(p):
                continue
            step = torch.zeros((), dtype=torch.float32, device=p.device if on_device else "cpu")
            optimizer.state[p] = {
                "step": step,
                "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format),
            }


def set_execution_flags(optimizer: torch.optim.Optimizer, flags: dict[str, Any]) -> None:
    """Set each parameter group's kernel switches (``fused``, ``capturable``, ...) back to ``flags``, after a
    ``load_state_dict`` took the saved ones (a checkpoint written on another device)."""
    for group in optimizer.param_groups:
        group.update(flags)


class FlatAdam(FlatParams):
    """``torch.optim.Adam`` over parameters packed into flat fp32 buffers (:class:`FlatParams`), clipped per segment,
    skippable on device."""

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
        super().__init__(segments, reduce_extra)
        kw: dict[str, Any] = {"device": self.flat_param.device, "dtype": torch.float32}
        total = self.flat_param.numel()
        self.exp_avg = torch.zeros(total, **kw)
        self.exp_avg_sq = torch.zeros(total, **kw)
        self.steps = torch.zeros(len(self.params), **kw)
        """``(num_params,)`` Adam's per-parameter step counts (all equal; skipped steps do not count)."""
        self._snapshot = tuple(torch.empty_like(x) for x in self._state())
        """Parameters, moments and step counts at the last :meth:`snapshot`."""
        self.lr = torch.tensor(float(lr), **kw)
        """The learning rate, a 0-dim device tensor; change it in place (``lr.copy_``)."""
        self._found_inf = torch.zeros((), **kw)
        """Adam's skip flag (1.0: the fused kernel returns before touching anything); written in place per step."""
        device = self.flat_param.device
        self.fused = device.type in _get_fused_kernels_supported_devices()
        """The fused kernel runs the step (else torch's single-tensor loop, same maths)."""
        self._flags: dict[str, Any] = {
            **EXECUTION_FLAGS,
            "fused": self.fused or None,
            "capturable": device.type == "cuda",
        }
        self.adam = torch.optim.Adam(
            self.params,
            lr=self.lr,
            betas=betas,
            eps=eps,
            fused=self._flags["fused"],
            capturable=self._flags["capturable"],
        )
        """The library optimizer; its state tensors are views of :attr:`exp_avg`, :attr:`exp_avg_sq`, :attr:`steps`."""
        self.adam.found_inf = self._found_inf  # type: ignore[attr-defined]  # read by Adam.step, as GradScaler's is
        self._bind_state()

    @property
    def betas(self) -> tuple[float, float]:
        """Adam's (β1, β2)."""
        beta1, beta2 = self.adam.param_groups[0]["betas"]
        return float(beta1), float(beta2)

    @property
    def eps(self) -> float:
        """Adam's ε."""
        return float(self.adam.param_groups[0]["eps"])

    @property
    def step_count(self) -> torch.Tensor:
        """Optimizer steps taken, 0-dim (skipped steps do not count)."""
        return self.steps[0]

    def _bind_state(self) -> None:
        """Make Adam's per-parameter state the views of the flat moment and step buffers."""
        for i, (sl, p) in enumerate(zip(self._slices, self.params, strict=True)):
            self.adam.state[p] = {
                "step": self.steps[i],
                "exp_avg": self.exp_avg[sl].view_as(p),
                "exp_avg_sq": self.exp_avg_sq[sl].view_as(p),
            }

    @torch.no_grad()
    def step(self, ok: torch.Tensor, max_norm: float | None, norms: torch.Tensor | None = None) -> torch.Tensor:
        """Clip each segment's gradient to ``max_norm``, then take one Adam step where ``ok`` (a device bool).

        Where ``ok`` is False nothing changes: parameters, moments and step counts stay as they were (the kernel
        returns on Adam's ``found_inf`` before reading the gradient, which may hold NaN/Inf).

        Args:
            ok: 0-dim bool tensor; False skips the step.
            max_norm: clip threshold per segment (``None``: no clipping).
            norms: the segments' gradient norms if already computed (:meth:`grad_norms`).

        Returns:
            0-dim bool: the parameters after the step are finite (one reduction over them). A finite gradient can
            still overflow them (a finite but huge learning rate, weights near float32's limit); the caller then
            rolls back to a :meth:`snapshot` (:meth:`restore_unless`).
        """
        if max_norm is not None:
            norms = self.grad_norms() if norms is None else norms
            # clip_grad_norm_'s coefficient: g ← g · min(1, max_norm / (‖g‖ + 1e-6)); 1 on a skipped step
            coef = torch.where(ok, (max_norm / (norms + 1e-6)).clamp(max=1.0), 1.0)
            for i, s in enumerate(self.segments):
                self.flat_grad[s].mul_(coef[i])
        if torch.compiler.is_compiling():  # the fused kernel's tensor-lr overload cannot be traced (no fake impl)
            self._traceable_step(ok)
        else:
            self._found_inf.copy_(~ok)
            self.adam.step()
        # one reduction instead of an elementwise isfinite (~5x fewer passes): a NaN or Inf anywhere makes the sum
        # non-finite; a finite sum past float32's range would need weights near 1e33, overflowing anyway
        return torch.isfinite(self.flat_param.sum())

    def snapshot(self) -> None:
        """Keep the parameters, moments and step counts (flat copies; once per update, not per step)."""
        for kept, live in zip(self._snapshot, self._state(), strict=True):
            kept.copy_(live)

    def restore_unless(self, ok: torch.Tensor) -> None:
        """Return to the last :meth:`snapshot` where the device flag ``ok`` is False (no host read)."""
        for kept, live in zip(self._snapshot, self._state(), strict=True):
            live.copy_(torch.where(ok, live, kept))

    def _state(self) -> tuple[torch.Tensor, ...]:
        return self.flat_param, self.exp_avg, self.exp_avg_sq, self.steps

    def _traceable_step(self, ok: torch.Tensor) -> None:
        """Adam's step in plain tensor ops, for ``torch.compile`` (tested against ``torch.optim.Adam``).

        Args:
            ok: 0-dim bool; False keeps parameters, moments and step counts as they were.
        """
        self.steps += ok.float()
        beta1, beta2 = self.betas
        adam_update(self.flat_param, self.flat_grad, self.exp_avg, self.exp_avg_sq, self.steps[0], self.lr,
                    beta1, beta2, self.eps, ok)  # fmt: skip

    def state_dict(self) -> dict:
        """``torch.optim.Adam``'s state dict (copies), with a float ``lr`` and torch's default execution flags."""
        sd = self.adam.state_dict()
        state = {k: {name: t.detach().clone() for name, t in entry.items()} for k, entry in sd["state"].items()}
        groups = [{**g, **EXECUTION_FLAGS, "lr": float(self.lr)} for g in sd["param_groups"]]
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load ``torch.optim.Adam``'s format (from redline or rsl_rl) over the same parameters, in order.

        Raises:
            ValueError: other parameter groups (torch's check), or weight decay / amsgrad, which redline's update
                does not take.
        """
        groups = state_dict.get("param_groups", [])
        if any(g.get("weight_decay", 0) or g.get("amsgrad", False) for g in groups):  # before anything is replaced
            raise ValueError("optimizer state uses weight decay or amsgrad, which redline's update does not take")
        self.adam.load_state_dict(state_dict)  # validates the groups, casts the state to the parameters' device
        group = self.adam.param_groups[0]
        self.lr.fill_(float(group["lr"]))
        group.update(self._flags, lr=self.lr)
        for i, (sl, p) in enumerate(zip(self._slices, self.params, strict=True)):
            entry = self.adam.state.get(p, {})
            for flat, name in ((self.exp_avg, "exp_avg"), (self.exp_avg_sq, "exp_avg_sq")):
                if name in entry:
                    flat[sl].copy_(entry[name].reshape(-1))
                else:
                    flat[sl].zero_()
            self.steps[i].fill_(float(entry["step"]) if "step" in entry else 0.0)
        self._bind_state()


def adaptive_lr(
    lr: torch.Tensor, kl: torch.Tensor, desired_kl: float, min_lr: float, max_lr: float, factor: float = 1.5
) -> torch.Tensor:
    """rsl_rl's KL-adaptive learning rate, decided on the device (no host sync).

    lr / factor (floored at ``min_lr``) when KL > 2 · desired; lr · factor (capped at ``max_lr``) when
    0 < KL < desired / 2; unchanged otherwise, including when the KL is NaN.
    """
    lower = torch.where(kl > 2.0 * desired_kl, (lr / factor).clamp(min=min_lr), lr)
    return torch.where((kl < desired_kl / 2.0) & (kl > 0.0), (lr * factor).clamp(max=max_lr), lower)
