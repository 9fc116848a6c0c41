"""Diagonal Gaussian policy maths as pure fp32 functions (closed forms; no ``torch.distributions`` objects).

rsl_rl's ``GaussianDistribution`` builds a ``torch.distributions.Normal`` per forward pass; the closed forms below give
the same numbers with fewer kernels. The std is state-independent (one learned vector, shape ``(A,)``), exactly as
rsl_rl's ``GaussianDistribution`` stores it, so its parameter keeps rsl_rl's name and checkpoint key.
"""

from __future__ import annotations

import math

import torch
from rsl_rl.modules import GaussianDistribution

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def std_of(dist: GaussianDistribution) -> torch.Tensor:
    """The clamped std of an rsl_rl ``GaussianDistribution`` (scalar or log parameterisation), shape ``(A,)``."""
    if dist.std_type == "scalar":
        return dist.std_param.clamp(dist.std_range[0], dist.std_range[1])
    return dist.log_std_param.clamp(dist.log_std_range[0], dist.log_std_range[1]).exp()


def sample(
    mean: torch.Tensor,
    std: torch.Tensor,
    generator: torch.Generator | None = None,
    noise: torch.Tensor | None = None,
) -> torch.Tensor:
    """a = mu + sigma * eps, eps ~ N(0, I); ``mean`` ``(B, A)``, ``std`` ``(A,)`` or ``(B, A)``.

    ``noise`` (``(B, A)`` standard normals, e.g. from per-env streams) replaces the draw from ``generator``.
    """
    if noise is None:
        noise = torch.randn(mean.shape, generator=generator, device=mean.device, dtype=mean.dtype)
    return torch.addcmul(mean, std, noise.to(mean.dtype))


def log_prob(actions: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """log N(a; mu, sigma) summed over the action dimension, shape ``(B,)``."""
    # log p = sum_i [ -(a_i - mu_i)^2 / (2 sigma_i^2) - log sigma_i - log(2 pi) / 2 ]
    z = (actions - mean) / std
    return (-0.5 * z.square() - std.log()).sum(-1) - _HALF_LOG_2PI * actions.shape[-1]


def entropy(std: torch.Tensor) -> torch.Tensor:
    """Entropy of N(mu, sigma) summed over the action dimension, shape ``std.shape[:-1]``."""
    # H = sum_i [ 1/2 + log(2 pi)/2 + log sigma_i ]
    return std.log().sum(-1) + (0.5 + _HALF_LOG_2PI) * std.shape[-1]


def kl(old_mean: torch.Tensor, old_std: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """KL(old || new) between diagonal Gaussians, summed over the action dimension, shape ``(B,)``."""
    # KL = sum_i [ log(sigma_i / sigma_old_i) + (sigma_old_i^2 + (mu_old_i - mu_i)^2) / (2 sigma_i^2) - 1/2 ]
    var = std.square()
    return (torch.log(std / old_std) + (old_std.square() + (old_mean - mean).square()) / (2.0 * var) - 0.5).sum(-1)
