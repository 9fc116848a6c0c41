"""GAE against numbers worked out by hand, and against rsl_rl 5.5.1's own returns code (time-out bootstrap included)."""

from __future__ import annotations

import pytest
import torch
from rsl_rl.algorithms import PPO as RslPPO
from rsl_rl.models import MLPModel
from rsl_rl.modules import GaussianDistribution
from rsl_rl.storage import RolloutStorage as RslStorage
from tensordict import TensorDict
from torch import nn

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


class _FixedCritic(nn.Module):
    """Stands in for rsl_rl's critic in ``compute_returns``: V(s_T) is given, not computed."""

    def __init__(self, last_values: torch.Tensor) -> None:
        super().__init__()
        self.last_values = last_values

    def forward(self, obs: TensorDict) -> torch.Tensor:
        return self.last_values.unsqueeze(-1)  # (N, 1), as rsl_rl's critic returns it

    def get_hidden_state(self) -> None:
        return None

    def reset(self, dones: torch.Tensor | None = None, hidden_state: object = None) -> None:
        pass


def _rsl_rl_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    last_values: torch.Tensor,
    dones: torch.Tensor,
    time_outs: torch.Tensor,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """rsl_rl 5.5.1's own ``PPO.process_env_step`` (time-out bootstrap r_t += γ V(s_t)) and ``PPO.compute_returns``
    (GAE with done = terminated | time-out) on a real ``RolloutStorage``: ``(advantages, returns)``, ``(T, N)``.

    Args are ``(T, N)`` except ``last_values`` ``(N,)``; the advantages are left unnormalised
    (``normalize_advantage_per_mini_batch=True`` defers rsl_rl's normalisation to the minibatch).
    """
    steps, envs = values.shape
    obs = TensorDict({"policy": torch.zeros(envs, 1)}, batch_size=[envs])
    groups = {"actor": ["policy"], "critic": ["policy"]}
    dist = {"class_name": GaussianDistribution}
    actor = MLPModel(obs, groups, "actor", 1, [4], distribution_cfg=dist)
    storage = RslStorage("rl", envs, steps, obs, [1], "cpu")
    rsl = RslPPO(actor, MLPModel(obs, groups, "critic", 1, [4]), storage, gamma=gamma, lam=lam)
    rsl.normalize_advantage_per_mini_batch = True
    rsl.critic = _FixedCritic(last_values)
    for t in range(steps):
        tr = rsl.transition
        tr.observations, tr.values = obs, values[t].unsqueeze(-1)
        tr.actions, tr.actions_log_prob = torch.zeros(envs, 1), torch.zeros(envs)
        tr.distribution_params = (torch.zeros(envs, 1), torch.ones(envs, 1))
        rsl.process_env_step(obs, rewards[t], dones[t], {"time_outs": time_outs[t]})
    rsl.compute_returns(obs)
    return storage.advantages.squeeze(-1), storage.returns.squeeze(-1)


@pytest.mark.parametrize("seed", [0, 1])
def test_gae_matches_rsl_rl_bootstrap_with_value_of_current_state(seed: int) -> None:
    """With bootstrap_values = V(s_t), time-outs give rsl_rl's numbers (its documented approximation), rsl_rl's own
    code being the oracle; a step that both terminated and timed out counts as a time-out, as Isaac Lab reports it."""
    g = torch.Generator().manual_seed(seed)
    T, N = 12, 64
    rewards, values = torch.randn(T, N, generator=g), torch.randn(T, N, generator=g)
    last = torch.randn(N, generator=g)
    dones = torch.rand(T, N, generator=g) < 0.15
    time_outs = dones & (torch.rand(T, N, generator=g) < 0.5)
    time_outs[T - 1, :4] = dones[T - 1, :4] = True  # time-outs on the last step bootstrap too
    terminated = dones & ~time_outs
    assert terminated.any() and time_outs.any()
    adv, ret = gae(rewards, values, next_values(values, last, time_outs, values), terminated, time_outs, 0.99, 0.95)
    ref_adv, ref_ret = _rsl_rl_gae(rewards, values, last, dones, time_outs, 0.99, 0.95)
    # one fp32 rounding per step of a 12-step recursion over O(1) values: agreement to ~1e-6
    assert torch.allclose(adv, ref_adv, atol=1e-5)
    assert torch.allclose(ret, ref_ret, atol=1e-5)


def test_normalize() -> None:
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    # mean 2.5; unbiased std = sqrt((2.25 + .25 + .25 + 2.25) / 3) = sqrt(5/3) = 1.2909944
    expected = (x - 2.5) / 1.2909944
    assert torch.allclose(normalize(x), expected, atol=1e-6)
