"""GAE against numbers worked out by hand, and against rsl_rl's time-out bootstrapping."""

from __future__ import annotations

import pytest
import torch

from redline.learning.advantages import gae, next_values, normalize

T_, F_ = True, False


def test_next_values_shift_and_bootstrap() -> None:
    values = torch.tensor([[0.5, 2.0], [1.0, 4.0], [1.5, 8.0]])
    last = torch.tensor([2.0, 16.0])
    truncated = torch.tensor([[F_, F_], [F_, T_], [F_, F_]])
    bootstrap = torch.full((3, 2), 10.0)
    # t < T-1: V(s_{t+1}) = values[t+1]; t = T-1: last; env 1 step 1 timed out: bootstrap (10) replaces values[2]
    expected = torch.tensor([[1.0, 4.0], [1.5, 10.0], [2.0, 16.0]])
    assert torch.equal(next_values(values, last, truncated, bootstrap), expected)


def test_gae_by_hand() -> None:
    gamma, lam = 0.5, 0.5  # γλ = 0.25
    # env 0: no episode end.  env 1: terminated at t=0, timed out at t=1 (bootstraps from 10), running at t=2.
    rewards = torch.tensor([[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])
    values = torch.tensor([[0.5, 2.0], [1.0, 4.0], [1.5, 8.0]])
    nxt = torch.tensor([[1.0, 4.0], [1.5, 10.0], [2.0, 16.0]])
    terminated = torch.tensor([[F_, T_], [F_, F_], [F_, F_]])
    truncated = torch.tensor([[F_, F_], [F_, T_], [F_, F_]])
    adv, ret = gae(rewards, values, nxt, terminated, truncated, gamma, lam)
    # env 0: δ0 = 1 + .5·1.0 − .5 = 1.0 ; δ1 = 2 + .5·1.5 − 1 = 1.75 ; δ2 = 3 + .5·2 − 1.5 = 2.5
    #        A2 = 2.5 ; A1 = 1.75 + .25·2.5 = 2.375 ; A0 = 1 + .25·2.375 = 1.59375
    # env 1: δ0 = 1 + .5·4·(1−1) − 2 = −1 (terminated: no future)
    #        δ1 = 1 + .5·10 − 4 = 2 (time-out: bootstraps from 10) ; δ2 = 1 + .5·16 − 8 = 1
    #        A2 = 1 ; A1 = 2 + .25·(1−done1=0)·1 = 2 ; A0 = −1 + .25·0·2 = −1
    expected_adv = torch.tensor([[1.59375, -1.0], [2.375, 2.0], [2.5, 1.0]])
    assert torch.allclose(adv, expected_adv, atol=1e-6)
    # R = A + V
    assert torch.allclose(ret, torch.tensor([[2.09375, 1.0], [3.375, 6.0], [4.0, 9.0]]), atol=1e-6)
    assert adv.dtype == ret.dtype == torch.float32


def test_terminated_wins_over_truncated() -> None:
    """A step flagged both terminated and truncated has no future value (nothing to bootstrap)."""
    adv, _ = gae(
        torch.tensor([[1.0]]),
        torch.tensor([[0.0]]),
        torch.tensor([[5.0]]),
        torch.tensor([[T_]]),
        torch.tensor([[T_]]),
        gamma=0.9,
        lam=0.9,
    )
    assert adv.item() == pytest.approx(1.0)  # δ = 1 + 0.9·5·0 − 0


def _rsl_rl_returns(rewards, values, last_values, dones, time_outs, gamma, lam):
    """rsl_rl 5.5.1's scheme, transcribed: r_t += γ V(s_t) on time-outs, then GAE with done = terminated | time-out."""
    rewards = rewards + gamma * values * time_outs
    advantage = torch.zeros_like(last_values)
    returns = torch.empty_like(values)
    for step in reversed(range(values.shape[0])):
        nv = last_values if step == values.shape[0] - 1 else values[step + 1]
        not_terminal = 1.0 - dones[step].float()
        delta = rewards[step] + not_terminal * gamma * nv - values[step]
        advantage = delta + not_terminal * gamma * lam * advantage
        returns[step] = advantage + values[step]
    return returns - values, returns


def test_gae_matches_rsl_rl_bootstrap_with_value_of_current_state() -> None:
    """With bootstrap_values = V(s_t), time-outs give rsl_rl's numbers exactly (its documented approximation)."""
    g = torch.Generator().manual_seed(0)
    T, N = 12, 64
    rewards, values = torch.randn(T, N, generator=g), torch.randn(T, N, generator=g)
    last = torch.randn(N, generator=g)
    dones = torch.rand(T, N, generator=g) < 0.15
    time_outs = dones & (torch.rand(T, N, generator=g) < 0.5)
    terminated = dones & ~time_outs
    adv, ret = gae(rewards, values, next_values(values, last, time_outs, values), terminated, time_outs, 0.99, 0.95)
    ref_adv, ref_ret = _rsl_rl_returns(rewards, values, last, dones, time_outs.float(), 0.99, 0.95)
    assert torch.allclose(adv, ref_adv, atol=1e-5)
    assert torch.allclose(ret, ref_ret, atol=1e-5)


def test_normalize() -> None:
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    # mean 2.5; unbiased std = sqrt((2.25 + .25 + .25 + 2.25) / 3) = sqrt(5/3) = 1.2909944
    expected = (x - 2.5) / 1.2909944
    assert torch.allclose(normalize(x), expected, atol=1e-6)
