"""The training loop end to end: it learns, and its hot path reads nothing back from the device."""

from __future__ import annotations

import pytest
import torch

from redline.bench.shapes import DummyVecEnv
from redline.learning import PPO, ModelConfig, PPOConfig, train_iteration
from redline.learning.guard import NanGuard
from redline.learning.rollout import collect_rollout


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_learns_the_dummy_task(precision: str) -> None:
    """Random actions earn ~0.3 per step, doing nothing ~0.5, the ideal controller ~1.0."""
    env = DummyVecEnv(num_envs=64, seed=0)
    torch.manual_seed(0)
    net = ModelConfig(hidden_dims=(32, 32))
    alg = PPO.from_env(env, PPOConfig(num_steps_per_env=16, precision=precision, actor=net, critic=net), seed=0)
    obs, rewards = env.get_observations(), []
    for _ in range(12):
        obs, metrics = train_iteration(alg, env, obs)
        rewards.append(metrics["mean_reward"].item())
    assert rewards[0] < 0.45
    assert sum(rewards[-3:]) / 3 > 0.75, rewards


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_no_cuda_syncs_except_the_guard_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """On CUDA the rollout and update run under sync-debug "error"; only NanGuard.end_iteration may sync."""
    real_end = NanGuard.end_iteration
    ends = []

    def end_allowed(self: NanGuard) -> int:
        torch.cuda.set_sync_debug_mode("default")
        try:
            ends.append(1)
            return real_end(self)
        finally:
            torch.cuda.set_sync_debug_mode("error")

    monkeypatch.setattr(NanGuard, "end_iteration", end_allowed)
    env = DummyVecEnv(num_envs=64, device="cuda:0")
    net = ModelConfig(hidden_dims=(32, 32), obs_normalization=True)
    alg = PPO.from_env(env, PPOConfig(num_steps_per_env=8, micro_batches=2, actor=net, critic=net), device="cuda:0")
    obs = collect_rollout(alg, env, env.get_observations())
    alg.update()  # warm-up (lazy CUDA initialisation syncs)
    torch.cuda.set_sync_debug_mode("error")
    try:
        obs = collect_rollout(alg, env, obs)
        metrics = alg.update()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert ends == [1, 1]
    assert torch.isfinite(metrics["loss"]).item()
