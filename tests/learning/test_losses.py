"""Each PPO loss piece on tiny tensors, against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from redline.learning.losses import entropy_bonus, explained_variance, surrogate_loss, value_loss


def test_surrogate_loss_by_hand() -> None:
    ratio = torch.tensor([1.5, 0.5, 1.0])
    log_prob = ratio.log().requires_grad_()
    old = torch.zeros(3)
    adv = torch.tensor([1.0, 1.0, -2.0])
    loss, m = surrogate_loss(log_prob, old, adv, clip=0.2)
    # sample 0: max(−1·1.5, −1·1.2) = −1.2 (clipped) ; sample 1: max(−0.5, −0.8) = −0.5 ; sample 2: max(2, 2) = 2
    # loss = (−1.2 − 0.5 + 2) / 3 = 0.1
    assert loss.item() == pytest.approx(0.1, abs=1e-6)
    # |ρ − 1| > 0.2 for samples 0 and 1
    assert m["clip_fraction"].item() == pytest.approx(2 / 3)
    # mean[(ρ − 1) − log ρ] = [(0.5 − ln 1.5) + (−0.5 − ln 0.5) + 0] / 3
    assert m["approx_kl"].item() == pytest.approx((0.5 - math.log(1.5) - 0.5 - math.log(0.5)) / 3, abs=1e-6)
    assert m["clip_fraction"].dim() == 0 and not m["clip_fraction"].requires_grad
    loss.backward()
    # ∂L/∂log π = −A ρ / 3 where unclipped, 0 where the clipped branch is taken
    assert torch.allclose(log_prob.grad, torch.tensor([0.0, -0.5 / 3, 2.0 / 3]), atol=1e-6)


def test_value_loss_clipped_and_unclipped() -> None:
    values, old, returns = torch.tensor([1.0, 2.0]), torch.tensor([0.5, 2.0]), torch.tensor([2.0, 1.0])
    loss, _ = value_loss(values, old, returns, clip=0.2)
    # sample 0: (1 − 2)² = 1 vs clipped V = 0.5 + clamp(0.5, ±0.2) = 0.7 → (0.7 − 2)² = 1.69 ; max = 1.69
    # sample 1: (2 − 1)² = 1 vs clipped V = 2 → 1 ; max = 1.  mean = 1.345
    assert loss.item() == pytest.approx(1.345, abs=1e-6)
    plain, _ = value_loss(values, old, returns, clip=None)
    assert plain.item() == pytest.approx(1.0)  # ((1 − 2)² + (2 − 1)²) / 2


def test_entropy_bonus() -> None:
    loss, m = entropy_bonus(torch.tensor([1.0, 3.0]))
    assert loss.item() == pytest.approx(-2.0)
    assert m["entropy"].item() == pytest.approx(2.0)


def test_explained_variance() -> None:
    returns = torch.tensor([1.0, 2.0, 3.0])
    # R − V = [0, 0, −1]: unbiased var 1/3 ; Var[R] = 1 → 1 − 1/3
    assert explained_variance(torch.tensor([1.0, 2.0, 4.0]), returns).item() == pytest.approx(2 / 3)
    assert explained_variance(returns, returns).item() == pytest.approx(1.0)
    assert explained_variance(torch.full((3,), 2.0), returns).item() == pytest.approx(0.0)
