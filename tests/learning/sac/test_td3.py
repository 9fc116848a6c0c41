"""The learner's TD3 variant (``SACConfig.variant="td3"``, FastTD3) on the fake env: acting, the update, settings
(its learning: ``test_sac.py``, beside SAC's)."""

from __future__ import annotations

import pytest
import torch

from redline.errors import UserError
from redline.learning.sac import SAC, SACActorConfig
from redline.learning.sac.sac import exploration_scales, exploration_stds
from tests.learning.sac.sac_support import ReachEnv, run_iteration, tiny_cfg


def test_each_envs_noise_std_is_a_pure_function_of_seed_and_global_env() -> None:
    """Uniform in [low, high] (FastTD3's std_min, std_max), each global env's own whatever the partition, not the
    factors of ``exploration_scale`` (another Philox lane), another seed other stds."""
    ids = torch.arange(16)
    whole = exploration_stds(5, ids, 0.2, 0.8)
    assert whole.shape == (16, 1) and float(whole.min()) >= 0.2 and float(whole.max()) <= 0.8
    assert torch.equal(torch.cat([exploration_stds(5, part, 0.2, 0.8) for part in (ids[:5], ids[5:])]), whole)
    assert not torch.equal(exploration_stds(6, ids, 0.2, 0.8), whole)
    u_scales = torch.log(exploration_scales(5, ids, 1.0, 2.0)) / torch.log(torch.tensor(2.0))
    assert not torch.allclose(u_scales, (whole - 0.2) / 0.6)


def test_actions_are_the_deterministic_policy_plus_each_envs_noise_within_the_bound() -> None:
    """``a = scale · clip(tanh μ + σ_env ε, −1, 1)``: with ε = 3 most envs hit the bound, with ε = 0 none moves off
    the deterministic policy, which is also what inference and the export give."""
    env = ReachEnv(8)
    actor = SACActorConfig(hidden_dims=(32, 32), action_scale=2.0)
    alg = SAC.from_env(env, tiny_cfg(variant="td3", exploration_std=(0.1, 0.6), actor=actor), seed=3)
    obs = env.get_observations()
    mean, _ = alg._dist.split(alg._actor_net(obs))
    stds = exploration_stds(3, torch.arange(8), 0.1, 0.6)
    for eps in (0.0, 3.0):
        alg.action_noise = lambda eps=eps: torch.full((8, 1), eps)
        expected = 2.0 * (torch.tanh(mean) + stds * eps).clamp(-1.0, 1.0)
        torch.testing.assert_close(alg.act(obs), expected, rtol=0, atol=0)
        alg._pending = None
    torch.testing.assert_close(alg.act_inference(obs), 2.0 * torch.tanh(mean), rtol=0, atol=0)
    torch.testing.assert_close(alg.get_policy()(obs), 2.0 * torch.tanh(mean))


def test_the_update_trains_actor_and_critic_but_no_temperature() -> None:
    """Every weight of the actor's mean and of the critic moves; the temperature, its optimizer and the log-std
    outputs (unused by TD3) do not; the entropy metrics stay 0 and the reported std is the envs' mean std."""
    env = ReachEnv(8)
    alg = SAC.from_env(env, tiny_cfg(variant="td3", exploration_std=(0.2, 0.4)), seed=1)
    head = alg.actor.mlp[-1]
    before = [t.detach().clone() for t in (head.weight, head.bias, alg.log_alpha, *alg.critic.qs.parameters())]
    obs = env.get_observations()
    for _ in range(3):
        obs, metrics = run_iteration(alg, env, obs)
    assert float(metrics["gradient_steps"]) == 4.0 and float(metrics["actor_loss"]) != 0.0
    assert float(metrics["alpha_loss"]) == 0.0 and float(metrics["entropy"]) == 0.0
    assert float(metrics["action_std"]) == pytest.approx(0.3)
    weight, bias, log_alpha, *critic = before
    assert not torch.equal(head.weight[:1], weight[:1]) and not torch.equal(head.bias[:1], bias[:1])  # the mean
    assert torch.equal(head.weight[1:], weight[1:]) and torch.equal(head.bias[1:], bias[1:])  # the raw log std
    assert torch.equal(alg.log_alpha.detach(), log_alpha)
    assert all(not torch.equal(p, q) for p, q in zip(alg.critic.qs.parameters(), critic, strict=True))
    assert all(int(s["step"]) == 0 for s in alg.alpha_optimizer.state.values())


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"variant": "ddpg"}, r"^variant: .*'ddpg'.*sac.*td3"),
        ({"exploration_std": (0.5, 0.1)}, r"^exploration_std: expected \(low, high\) with 0 <= low <= high, got"),
        ({"exploration_std": (-0.1, 0.1)}, r"^exploration_std: expected"),
        ({"policy_noise": -1.0}, r"^policy_noise: "),
        ({"noise_clip": float("nan")}, r"^noise_clip: "),
    ],
)
def test_bad_td3_settings_are_one_line(overrides: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        tiny_cfg(**overrides)
