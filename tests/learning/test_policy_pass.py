"""The eager rollout's lean policy pass writes bitwise what the plain pass (``PPO._policy`` + the storage copy) does."""

from __future__ import annotations

import pytest
import torch

from redline.bench.shapes import DummyVecEnv
from redline.learning import PPO
from redline.learning.config import ModelConfig
from tests.learning.learning_support import small_cfg


def _run(lean: bool, value_normalization: bool) -> tuple[PPO, list[torch.Tensor]]:
    """Two iterations (rollout, returns, update) on the CPU; the second rollout starts from updated weights, moved
    normalisers and value statistics."""
    torch.manual_seed(0)
    env = DummyVecEnv(num_envs=16, num_obs=6, num_actions=3, max_episode_length=5, seed=1, critic_obs=True)
    model = ModelConfig(hidden_dims=(16, 16), obs_normalization=True)
    critic = ModelConfig(hidden_dims=(16,), obs_normalization=True, obs_groups=("policy", "critic"))
    cfg = small_cfg(actor=model, critic=critic, value_normalization=value_normalization)
    alg = PPO.from_env(env, cfg, "cpu", seed=3)
    assert alg._eager_pass is not None  # it applies to fp32 eager learners
    if not lean:
        alg._eager_pass = None
    obs, actions = env.get_observations(), []
    with torch.inference_mode():
        for _ in range(2):
            for _ in range(cfg.num_steps_per_env):
                a = alg.act(obs)
                actions.append(a.clone())
                obs, rewards, dones, extras = env.step(a)
                alg.process_env_step(rewards, dones, extras)
            alg.compute_returns(obs)
            with torch.inference_mode(False):
                alg.update()
    return alg, actions


@pytest.mark.parametrize("value_normalization", [False, True])
def test_lean_pass_equals_the_plain_pass_bitwise(value_normalization: bool) -> None:
    lean, lean_actions = _run(True, value_normalization)
    plain, plain_actions = _run(False, value_normalization)
    for a, b in zip(lean_actions, plain_actions, strict=True):
        assert torch.equal(a, b)
    for key, value in plain.storage.data.items(include_nested=True, leaves_only=True):
        assert torch.equal(lean.storage.data[key], value), key
    assert torch.equal(lean.optimizer.flat_param, plain.optimizer.flat_param)


def test_lean_pass_returns_actions_the_env_may_change() -> None:
    """The actions handed to the env are not a view of the storage: an env that clips them in place does not
    change what was stored."""
    torch.manual_seed(0)
    env = DummyVecEnv(num_envs=4, seed=1)
    alg = PPO.from_env(env, small_cfg(), "cpu", seed=0)
    with torch.inference_mode():
        actions = alg.act(env.get_observations())
        stored = alg.storage.slot()["actions"].clone()
        actions.zero_()
    assert torch.equal(alg.storage.slot()["actions"], stored) and stored.abs().sum() > 0
