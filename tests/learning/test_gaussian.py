"""Closed-form Gaussian maths by hand and against torch.distributions; std as rsl_rl's GaussianDistribution has it."""

from __future__ import annotations

import math

import pytest
import torch
from rsl_rl.modules import GaussianDistribution
from torch.distributions import Normal, kl_divergence

from redline.learning import gaussian

LOG_2PI = math.log(2 * math.pi)


def test_by_hand() -> None:
    mean, std = torch.zeros(1, 2), torch.tensor([1.0, 2.0])
    # log p([1, 0]) = (−½·1 − 0 − ½ ln 2π) + (−0 − ln 2 − ½ ln 2π) = −½ − ln 2 − ln 2π
    assert gaussian.log_prob(torch.tensor([[1.0, 0.0]]), mean, std).item() == pytest.approx(
        -0.5 - math.log(2) - LOG_2PI, abs=1e-6
    )
    # H = Σ (½ + ½ ln 2π + ln σ) = 1 + ln 2π + ln 2
    assert gaussian.entropy(std).item() == pytest.approx(1 + LOG_2PI + math.log(2), abs=1e-6)
    # KL(N(0, 1) || N(1, 2)) = ln 2 + (1 + 1) / 8 − ½
    kl = gaussian.kl(torch.zeros(1, 1), torch.ones(1, 1), torch.ones(1, 1), torch.full((1, 1), 2.0))
    assert kl.item() == pytest.approx(math.log(2) + 0.25 - 0.5, abs=1e-6)


def test_against_torch_distributions() -> None:
    g = torch.Generator().manual_seed(0)
    mean, old_mean = torch.randn(5, 3, generator=g), torch.randn(5, 3, generator=g)
    std, old_std = torch.rand(3, generator=g) + 0.2, torch.rand(5, 3, generator=g) + 0.2
    a = torch.randn(5, 3, generator=g)
    assert torch.allclose(gaussian.log_prob(a, mean, std), Normal(mean, std).log_prob(a).sum(-1), atol=1e-5)
    assert torch.allclose(gaussian.entropy(std), Normal(mean, std).entropy().sum(-1), atol=1e-5)
    ref = kl_divergence(Normal(old_mean, old_std), Normal(mean, std)).sum(-1)
    assert torch.allclose(gaussian.kl(old_mean, old_std, mean, std), ref, atol=1e-5)


def test_sample_uses_the_generator() -> None:
    mean, std = torch.zeros(4, 2), torch.tensor([1.0, 3.0])
    a = gaussian.sample(mean, std, torch.Generator().manual_seed(7))
    b = gaussian.sample(mean, std, torch.Generator().manual_seed(7))
    assert torch.equal(a, b)
    assert torch.equal(a, torch.randn(4, 2, generator=torch.Generator().manual_seed(7)) * std)


@pytest.mark.parametrize("std_type", ["scalar", "log"])
def test_std_of_matches_rsl_rl(std_type: str) -> None:
    dist = GaussianDistribution(3, init_std=0.7, std_type=std_type, std_range=(0.1, 5.0))
    with torch.no_grad():
        param = dist.std_param if std_type == "scalar" else dist.log_std_param
        param.copy_(torch.tensor([0.01, 0.5, 9.0]) if std_type == "scalar" else torch.tensor([-5.0, -0.5, 3.0]))
    dist.update(torch.zeros(2, 3))
    assert torch.allclose(gaussian.std_of(dist), dist.std[0])
