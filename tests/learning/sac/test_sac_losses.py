"""The SAC losses against plain reference implementations on a fixed batch (values and gradients)."""

from __future__ import annotations

import math

import pytest
import torch

from redline.learning.sac.networks import squashed_sample
from redline.learning.sac.sac_losses import (
    actor_loss,
    categorical_projection,
    clipped_double_q_target,
    critic_loss,
    deterministic_actions,
    deterministic_actor_loss,
    smoothed_target_actions,
    temperature_loss,
)

V_MIN, V_MAX, K = -2.0, 2.0, 5


def reference_projection(atoms: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
    """C51's projection written as a double loop over transitions and atoms."""
    delta = (V_MAX - V_MIN) / (K - 1)
    out = torch.zeros_like(probs)
    for i in range(atoms.shape[0]):
        for j in range(K):
            b = (min(max(float(atoms[i, j]), V_MIN), V_MAX) - V_MIN) / delta
            low, up = math.floor(b), math.ceil(b)
            if low == up:
                out[i, low] += probs[i, j]
            else:
                out[i, low] += probs[i, j] * (up - b)
                out[i, up] += probs[i, j] * (b - low)
    return out


def test_projection_matches_the_reference_conserves_mass_and_clips() -> None:
    gen = torch.Generator().manual_seed(0)
    probs = torch.rand(6, K, generator=gen).softmax(-1)
    atoms = torch.randn(6, K, generator=gen) * 2.5  # many outside [-2, 2]
    atoms[0] = torch.linspace(V_MIN, V_MAX, K)  # exactly on the support: unchanged
    out = categorical_projection(atoms, probs, V_MIN, V_MAX)
    torch.testing.assert_close(out, reference_projection(atoms, probs))
    torch.testing.assert_close(out.sum(-1), torch.ones(6))
    torch.testing.assert_close(out[0], probs[0])
    # all mass beyond the ends lands on the end atoms
    far = categorical_projection(torch.tensor([[-9.0, 9.0, 9.0, -9.0, 0.0]]), probs[:1], V_MIN, V_MAX)
    assert far[0, 0] == pytest.approx(float(probs[0, 0] + probs[0, 3]))
    assert far[0, -1] == pytest.approx(float(probs[0, 1] + probs[0, 2]))
    assert far[0, 2] == pytest.approx(float(probs[0, 4]))


def test_a_nan_position_gives_nan_mass_not_an_index_error() -> None:
    probs = torch.full((1, K), 1.0 / K)
    out = categorical_projection(torch.tensor([[0.0, float("nan"), 1.0, 2.0, 9.0]]), probs, V_MIN, V_MAX)
    assert bool(out.isnan().any())


def test_target_keeps_the_critic_with_the_smaller_mean_and_shifts_its_atoms() -> None:
    support = torch.linspace(V_MIN, V_MAX, K)
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(2, 4, K, generator=gen)
    rewards, discounts = torch.tensor([1.0, 0.0, -1.0, 0.5]), torch.tensor([0.9, 0.0, 0.81, 0.9])
    entropy = torch.tensor([0.1, 0.2, -0.3, 0.0])
    atoms, probs = clipped_double_q_target(logits, support, rewards, discounts, entropy)
    for i in range(4):
        p = [logits[c, i].softmax(-1) for c in range(2)]
        means = [float((q * support).sum()) for q in p]
        torch.testing.assert_close(probs[i], p[0] if means[0] <= means[1] else p[1])
        torch.testing.assert_close(atoms[i], rewards[i] + discounts[i] * (support - entropy[i]))


def test_critic_loss_is_the_summed_cross_entropy_with_its_gradient() -> None:
    gen = torch.Generator().manual_seed(2)
    logits = torch.randn(2, 3, K, generator=gen, requires_grad=True)
    target = torch.rand(3, K, generator=gen).softmax(-1)
    loss, metrics = critic_loss(logits, target)
    ref_logits = logits.detach().clone().requires_grad_(True)
    ref = sum(
        -sum(float(target[i, k]) * torch.log(torch.softmax(ref_logits[c, i], -1)[k]) for k in range(K)) / 3
        for c in range(2)
        for i in range(3)
    )
    assert isinstance(ref, torch.Tensor)
    torch.testing.assert_close(loss, ref)
    assert metrics["critic_loss"] == loss.detach()
    loss.backward()
    ref.backward()
    torch.testing.assert_close(logits.grad, ref_logits.grad)


def test_actor_and_temperature_losses_with_their_gradients() -> None:
    log_prob = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    q = torch.tensor([[1.0, 2.0, 3.0], [0.5, 2.5, 2.0]], requires_grad=True)
    alpha = torch.tensor(0.2)
    loss, metrics = actor_loss(alpha, log_prob, q)
    # mean of 0.2 * logp - min(q1, q2): (-0.2 - 0.5) + (0.1 - 2.0) + (0.4 - 2.0) = -4.2, / 3
    assert float(loss.detach()) == pytest.approx(-1.4)
    assert float(metrics["entropy"]) == pytest.approx(-0.5)
    loss.backward()
    torch.testing.assert_close(log_prob.grad, torch.full((3,), 0.2 / 3))
    torch.testing.assert_close(q.grad, -torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]]) / 3)
    log_alpha = torch.tensor(math.log(0.2), requires_grad=True)
    t_loss, _ = temperature_loss(log_alpha, log_prob.detach(), target_entropy=-1.0)
    # −log α · mean(logp + H) = −log 0.2 · ((−1 − 1) + (0.5 − 1) + (2 − 1)) / 3 = log 0.2 · 0.5
    assert float(t_loss.detach()) == pytest.approx(math.log(0.2) * 0.5)
    t_loss.backward()
    assert float(log_alpha.grad) == pytest.approx(0.5)  # type: ignore[arg-type]


def test_squashed_log_prob_matches_torch_distributions() -> None:
    gen = torch.Generator().manual_seed(3)
    mean, log_std = torch.randn(8, 3, generator=gen), torch.rand(8, 3, generator=gen) - 1.5
    noise = torch.randn(8, 3, generator=gen)
    actions, log_prob = squashed_sample(mean, log_std, noise, scale=2.0)
    base = torch.distributions.Normal(mean, log_std.exp())
    squashed = torch.distributions.TransformedDistribution(
        base,
        [torch.distributions.TanhTransform(), torch.distributions.AffineTransform(0.0, 2.0)],
    )
    torch.testing.assert_close(actions, 2.0 * torch.tanh(mean + log_std.exp() * noise))
    torch.testing.assert_close(log_prob, squashed.log_prob(actions).sum(-1), rtol=1e-4, atol=1e-4)


def test_td3_target_actions_are_fasttd3s_smoothed_and_clipped() -> None:
    """FastTD3's target action ``clamp(actor(s') + clamp(σ ε, −c, c), −1, 1)`` on the bound 1, scaled by the bound."""
    gen = torch.Generator().manual_seed(4)
    mean, noise = 3.0 * torch.randn(16, 3, generator=gen), torch.randn(16, 3, generator=gen)
    for scale in (1.0, 2.5):
        out = smoothed_target_actions(mean, noise, scale, policy_noise=0.3, noise_clip=0.2)
        clipped = (noise * 0.3).clamp(-0.2, 0.2)
        reference = (torch.tanh(mean) + clipped).clamp(-1.0, 1.0) * scale
        torch.testing.assert_close(out, reference)
    assert bool((out.abs() <= 2.5).all()) and bool((out.abs() == 2.5).any())  # some land on the bound
    torch.testing.assert_close(deterministic_actions(mean, torch.zeros_like(mean), 2.0), 2.0 * torch.tanh(mean))


def test_td3_actor_loss_is_minus_the_smaller_q_with_its_gradient() -> None:
    q = torch.tensor([[1.0, 2.0, 3.0], [0.5, 2.5, 2.0]], requires_grad=True)
    loss, metrics = deterministic_actor_loss(q)
    # −mean min(q1, q2) = −(0.5 + 2.0 + 2.0) / 3
    assert float(loss.detach()) == pytest.approx(-1.5) and float(metrics["actor_loss"]) == pytest.approx(-1.5)
    loss.backward()
    torch.testing.assert_close(q.grad, -torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]]) / 3)
