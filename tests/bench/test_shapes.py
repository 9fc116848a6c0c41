"""The test env has Isaac Lab's RslRlVecEnvWrapper interface and is deterministic per seed."""

from __future__ import annotations

import torch
from rsl_rl.env import VecEnv
from tensordict import TensorDict

from redline.bench.shapes import DummyVecEnv


def test_interface() -> None:
    env = DummyVecEnv(num_envs=6, num_obs=5, num_actions=2, critic_obs=True)
    assert isinstance(env, VecEnv)
    assert (env.num_envs, env.num_actions, env.device) == (6, 2, torch.device("cpu"))
    obs = env.get_observations()
    assert isinstance(obs, TensorDict) and obs.batch_size == torch.Size([6])
    assert obs["policy"].shape == (6, 5) and obs["critic"].shape == (6, 6)
    obs, rewards, dones, extras = env.step(torch.zeros(6, 2))
    assert rewards.shape == (6,) and rewards.dtype == torch.float32
    assert dones.shape == (6,) and dones.dtype == torch.long
    assert extras["time_outs"].dtype == torch.bool
    assert env.episode_length_buf.tolist() == [1] * 6


def test_time_outs_and_terminations_reset() -> None:
    env = DummyVecEnv(num_envs=4, max_episode_length=3, noise_std=0.0)
    for _ in range(2):
        _, _, dones, extras = env.step(torch.zeros(4, 2))
        assert not dones.any()
    _, _, dones, extras = env.step(torch.zeros(4, 2))
    assert dones.all() and extras["time_outs"].all() and (env.episode_length_buf == 0).all()
    _, _, dones, extras = env.step(torch.full((4, 2), 100.0))  # thrown far past the limit
    assert dones.all() and not extras["time_outs"].any()
    assert (env.state.abs() <= env.init_range).all()  # reset before the observation is taken


def test_a_controller_beats_doing_nothing() -> None:
    """The task needs steering: the ideal linear controller earns far more than zero actions."""

    def mean_reward(policy) -> float:
        env = DummyVecEnv(num_envs=64, seed=3)
        total = 0.0
        for _ in range(40):
            _, rewards, _, _ = env.step(policy(env))
            total += rewards.mean().item()
        return total / 40

    idle = mean_reward(lambda env: torch.zeros(env.num_envs, env.num_actions))
    ideal = mean_reward(lambda env: -torch.linalg.solve(env.B, env.state.T).T)
    assert idle < 0.6 and ideal > 0.95


def test_same_seed_same_trajectory() -> None:
    def trajectory(seed: int) -> torch.Tensor:
        env = DummyVecEnv(num_envs=3, seed=seed)
        return torch.stack([env.step(torch.ones(3, 2))[0]["policy"] for _ in range(5)])

    assert torch.equal(trajectory(0), trajectory(0)) and not torch.equal(trajectory(0), trajectory(1))
