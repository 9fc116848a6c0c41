"""FlashSAC-style reward normalisation: rewards scaled by a running measure of the discounted return's size.

Each env keeps its discounted return G ← γ G + r (zeroed after an episode ends). The running variance of G over every
env step and the running maximum of |G| give the scale: rewards are divided by ``max(std(G), max|G| / G_max)``, so
that returns in normalised units have unit spread and stay within ±G_max, and the critic's fixed support fits any
task. The replay keeps raw rewards; the scale is applied when sampling, so it always reflects the current statistics.
Statistics are merged over data-parallel ranks once per iteration, in rank order (every rank then holds the same).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from redline.learning.distributed import Communicator
from redline.learning.moments import batch_moments, merge_moments, variance


class RewardNormalizer:
    """Running discounted-return statistics of ``num_envs`` envs and the reward scale they give.

    Args:
        num_envs: this rank's envs.
        gamma: the discount.
        max_return: G_max, the bound of normalised returns.
        device: where the statistics live.
    """

    def __init__(self, num_envs: int, gamma: float, max_return: float, device: torch.device) -> None:
        self.gamma, self.max_return = gamma, max_return
        self.returns = torch.zeros(num_envs, device=device)
        """Each env's running discounted return G."""
        self.moments = torch.zeros(3, device=device)
        """``(n, mean, M2)`` of G over every step of every rank so far (merged at :meth:`update`)."""
        self.batch = torch.zeros(3, device=device)
        """``(n, mean, M2)`` of this rank's G since the last :meth:`update`."""
        self.max_abs = torch.zeros((), device=device)
        """max |G| seen (over all ranks after :meth:`update`)."""
        self.scale = torch.ones((), device=device)
        """The factor rewards are multiplied by, 0-dim (1 until the first update)."""

    @torch.no_grad()
    def observe(self, rewards: torch.Tensor, dones: torch.Tensor) -> None:
        """One env step: ``rewards`` ``(N,)``, ``dones`` ``(N,)`` bool (the episode ended with this step)."""
        # G ← γ G + r
        self.returns.mul_(self.gamma).add_(rewards)
        self.batch.copy_(merge_moments(torch.stack((self.batch, batch_moments(self.returns)))))
        self.max_abs.copy_(torch.maximum(self.max_abs, self.returns.abs().max()))
        self.returns.masked_fill_(dones, 0.0)

    @torch.no_grad()
    def update(self, comm: Communicator) -> None:
        """Merge every rank's batch statistics (one all-gather, rank order) and recompute :attr:`scale`."""
        local = torch.cat((self.batch, self.max_abs.reshape(1)))
        shares = comm.all_gather(local.to(comm.device)).to(self.batch.device)  # (ranks, 4)
        self.moments.copy_(merge_moments(torch.cat((self.moments.unsqueeze(0), shares[:, :3]))))
        self.max_abs.copy_(shares[:, 3].max())
        self.batch.zero_()
        std = variance(self.moments).add(1e-8).sqrt()
        # scale = 1 / max(std(G), max|G| / G_max); 1 before any statistics
        size = torch.maximum(std, self.max_abs / self.max_return)
        self.scale.copy_(torch.where(self.moments[0] > 0, 1.0 / size.clamp(min=1e-4), 1.0))

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {k: getattr(self, k).clone() for k in ("returns", "moments", "batch", "max_abs", "scale")}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        for k, v in state.items():
            getattr(self, k).copy_(v)
