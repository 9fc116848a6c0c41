"""Value normalisation: the critic learns returns scaled by running statistics, so its targets stay O(1).

The critic's raw output is a normalised value; the learner denormalises it (V = mu + sigma * v) wherever a value in
reward units is needed (GAE), and normalises the targets (and the rollout values used for value clipping) with the
statistics of the current iteration. The statistics are the running mean and variance of all value targets seen so
far (Chan et al.'s parallel merge), updated once per iteration before the update epochs. Unlike PopArt the critic's
last layer is not rescaled when the statistics move; the per-iteration change is small once a few batches are in.
"""

from __future__ import annotations

import torch
from torch import nn


class ValueNormalizer(nn.Module):
    """Running mean/std of value targets; an identity when ``enabled`` is False (its buffers still checkpoint)."""

    mean: torch.Tensor  # 0-dim running mean of the targets [reward units]
    var: torch.Tensor  # 0-dim running variance of the targets [reward units^2]
    count: torch.Tensor  # 0-dim float64 number of targets merged so far

    def __init__(self, enabled: bool, min_std: float = 1e-2) -> None:
        """Args:
        enabled: normalise (True) or pass values through unchanged (False).
        min_std: floor of the std used to scale [reward units], so near-constant returns do not blow up targets.
        """
        super().__init__()
        self.enabled = enabled
        self.min_std = min_std
        self.register_buffer("mean", torch.zeros(()))
        self.register_buffer("var", torch.ones(()))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @property
    def std(self) -> torch.Tensor:
        """The scale sigma = max(sqrt(var), min_std), 0-dim."""
        return self.var.sqrt().clamp_min(self.min_std)

    def normalize(self, values: torch.Tensor) -> torch.Tensor:
        """v = (V − mu) / sigma."""
        return (values - self.mean) / self.std if self.enabled else values

    def denormalize(self, values: torch.Tensor) -> torch.Tensor:
        """V = mu + sigma * v."""
        return torch.addcmul(self.mean, values, self.std) if self.enabled else values

    @torch.no_grad()
    def update(self, moments: torch.Tensor, ok: torch.Tensor) -> torch.Tensor:
        """Merge a batch of value targets, given as its ``(n, mean, M2)`` moments (:mod:`redline.learning.moments`,
        0-dim each), into the running statistics, only where the device flag ``ok``.

        A non-finite batch must not poison the statistics for good, so the merge is a ``torch.where`` on ``ok``
        (no host sync); a finite batch whose merge overflows (targets of ~1e20 square past float32) is refused the
        same way.

        Returns:
            0-dim bool: the merged statistics were finite (True when disabled or when ``ok`` is False).
        """
        if not self.enabled:
            return torch.ones((), dtype=torch.bool, device=self.mean.device)
        n_b, mean_b, m2_b = moments.unbind(0)
        var_b = m2_b / n_b.clamp(min=1.0)
        total = self.count + n_b.double()
        w = (n_b.double() / total).float()  # weight of the new batch, n_b / (n + n_b)
        delta = mean_b - self.mean
        # mu' = mu + w δ ;  var' = (1 − w) var + w var_b + w (1 − w) δ²
        mean = self.mean + w * delta
        var = (1.0 - w) * self.var + w * var_b + w * (1.0 - w) * delta.square()
        finite = torch.isfinite(mean) & torch.isfinite(var)
        commit = ok & finite
        self.mean.copy_(torch.where(commit, mean, self.mean))
        self.var.copy_(torch.where(commit, var, self.var))
        self.count.copy_(torch.where(commit, total, self.count))
        return finite | ~ok
