"""Batch moments (count, mean, M2) and their exact parallel merge, for statistics that span several processes.

Running normalisers and advantage normalisation need the mean and variance of a batch that, in data-parallel
training, is split over ranks. Each rank reduces its share to ``(n, mean, M2)`` (M2 = sum of squared deviations from
the share's mean); merging the shares with Chan et al.'s formula gives the statistics of the union, equal to those
of one process holding the whole batch up to floating-point rounding. Every rank merges the same shares in rank
order, so all ranks get bitwise the same result.
"""

from __future__ import annotations

from typing import Any

import torch


def batch_moments(x: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """``(n, mean, M2)`` of ``x`` over ``dim`` (all elements when None), stacked along a new leading axis.

    Returns:
        fp32 tensor of shape ``(3, *rest)``: the count (broadcast), the mean and M2 = Σ (x − mean)².
    """
    x = x.float()
    if dim is None:
        x = x.reshape(-1)
        dim = 0
    n = x.shape[dim]
    var, mean = torch.var_mean(x, dim=dim, correction=0)
    return torch.stack((torch.full_like(mean, float(n)), mean, var * n))


def merge_moments(parts: torch.Tensor) -> torch.Tensor:
    """Merge stacked ``(n, mean, M2)`` moments of disjoint shares, in order, into those of their union.

    Args:
        parts: ``(P, 3, *rest)``, e.g. one :func:`batch_moments` per rank (``all_gather``).

    Returns:
        ``(3, *rest)``: the union's ``(n, mean, M2)``. Shares with n = 0 are skipped exactly.
    """
    n, mean, m2 = parts[0].unbind(0)
    for part in parts[1:]:
        n_b, mean_b, m2_b = part.unbind(0)
        total = n + n_b
        w = torch.where(total > 0, n_b / total.clamp(min=1.0), 0.0)  # weight of the new share, n_b / (n + n_b)
        delta = mean_b - mean
        # μ = μ_a + w δ ;  M2 = M2_a + M2_b + δ² n_a n_b / (n_a + n_b)
        mean = mean + w * delta
        m2 = m2 + m2_b + delta.square() * n * w
        n = total
    return torch.stack((n, mean, m2))


def variance(moments: torch.Tensor, correction: int = 0) -> torch.Tensor:
    """The variance M2 / (n − correction) of ``(n, mean, M2)`` moments (``correction=1``: unbiased, as torch.std)."""
    n, _, m2 = moments.unbind(0)
    return m2 / (n - correction).clamp(min=1.0)


def minibatch_stats(values: torch.Tensor, minibatches: list[torch.Tensor], comm: Any) -> torch.Tensor:
    """``(M, 2)``: the mean and unbiased std of ``values`` (flat ``(T * N,)``) over each global minibatch, this rank's
    indices ``minibatches[m]`` merged with every other rank's in one all-gather over ``comm``."""
    zero = torch.zeros(3, device=values.device)
    local = torch.stack([batch_moments(values[idx]) if idx.numel() else zero for idx in minibatches])  # (M, 3)
    merged = merge_moments(comm.all_gather(local.to(comm.device)).to(values.device).transpose(1, 2))  # (3, M)
    return torch.stack((merged[1], variance(merged, correction=1).sqrt()), dim=1)
