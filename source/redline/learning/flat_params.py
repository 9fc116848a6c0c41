"""Parameters and gradients packed into flat fp32 buffers, so that one all-reduce moves every gradient of a step.

The parameters of the networks (PPO's actor and critic, SAC's actor, critic and temperature) become views into one
contiguous buffer, their ``.grad`` views into a second one (followed by room for the step's statistics, reduced in
the same call), and each segment's gradient norm is one reduction. PPO's :class:`~redline.learning.optim.FlatAdam`
adds one Adam over the whole buffer; SAC gives each segment its own optimizer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from torch import nn


class FlatParams:
    """``segments`` of parameters as views of :attr:`flat_param`, their gradients views of :attr:`flat_grad`.

    Args:
        segments: parameter groups, in order (already on their final device; ``module.to()`` afterwards would
            detach them). Their ``.grad`` must not be set to None (``module.zero_grad()``); use :meth:`zero_grad`.
        reduce_extra: floats of room after the gradient in :attr:`reduce_buffer` for statistics.
    """

    def __init__(self, segments: Sequence[Iterable[nn.Parameter]], reduce_extra: int = 0) -> None:
        self.params: list[nn.Parameter] = []
        self.segments: list[slice] = []
        for seg in segments:
            start = sum(p.numel() for p in self.params)
            self.params.extend(seg)
            self.segments.append(slice(start, sum(p.numel() for p in self.params)))
        device = self.params[0].device
        total = self.segments[-1].stop
        self.flat_param = torch.empty(total, device=device, dtype=torch.float32)
        self.reduce_buffer = torch.zeros(total + reduce_extra, device=device, dtype=torch.float32)
        """``[gradient | extra]``: what one data-parallel all-reduce sums."""
        self.flat_grad = self.reduce_buffer[:total]
        self.reduce_extra = self.reduce_buffer[total:]
        """``(reduce_extra,)`` room for statistics reduced together with the gradient."""
        self._slices: list[slice] = []
        """Each parameter's slice of the flat buffers."""
        offset = 0
        for p in self.params:
            if p.dtype != torch.float32:
                raise TypeError(f"{type(self).__name__} keeps fp32 master weights; got a {p.dtype} parameter")
            sl = slice(offset, offset + p.numel())
            self.flat_param[sl].copy_(p.detach().reshape(-1))
            p.data = self.flat_param[sl].view_as(p)
            self._slices.append(sl)
            offset = sl.stop
        self._grad_views = [self.flat_grad[sl].view_as(p) for sl, p in zip(self._slices, self.params, strict=True)]
        self.bind_grads()

    def bind_grads(self) -> None:
        """(Re)attach every parameter's ``.grad`` to its view of the flat gradient."""
        for p, g in zip(self.params, self._grad_views, strict=True):
            if p.grad is not g:
                p.grad = g

    def slices_of(self, params: Iterable[torch.Tensor]) -> list[slice]:
        """Each of ``params``' slice of the flat buffers (``params`` among :attr:`params`, by identity)."""
        where = {id(p): sl for p, sl in zip(self.params, self._slices, strict=True)}
        return [where[id(p)] for p in params]

    def zero_grad(self) -> None:
        """Zero the gradient and the statistics after it (one kernel); backward passes then accumulate into it."""
        self.reduce_buffer.zero_()

    def grad_norms(self) -> torch.Tensor:
        """L2 norm of each segment's gradient, ``(num_segments,)``."""
        return torch.stack([torch.linalg.vector_norm(self.flat_grad[s]) for s in self.segments])

    @torch.no_grad()
    def clip_(self, max_norm: float, norms: torch.Tensor, which: Sequence[int]) -> None:
        """Scale the gradient of each segment in ``which`` to norm at most ``max_norm`` (no host read)."""
        # g ← g · min(1, max_norm / (‖g‖ + 1e-6)), as clip_grad_norm_
        coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for i in which:
            self.flat_grad[self.segments[i]].mul_(coef[i])
