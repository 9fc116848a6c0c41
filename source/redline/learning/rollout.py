"""One training iteration of the redline learner on an rsl_rl-style vec env: rollout, returns, update."""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDict

from redline.learning.ppo import PPO


def collect_rollout(alg: PPO, env: Any, obs: TensorDict) -> TensorDict:
    """Run ``num_steps_per_env`` env steps under ``torch.inference_mode``, then compute returns.

    Args:
        alg: the learner; its storage must be empty.
        env: ``step(actions) -> (obs, rewards, dones, extras)``, as Isaac Lab's ``RslRlVecEnvWrapper``.
        obs: the current observation, batch ``[N]``.

    Returns:
        The observation after the rollout (the next rollout's first).
    """
    with torch.inference_mode():
        for _ in range(alg.cfg.num_steps_per_env):
            actions = alg.act(obs)
            obs, rewards, dones, extras = env.step(actions.to(env.device))
            alg.process_env_step(rewards, dones, extras)
        alg.compute_returns(obs)
    return obs


def train_iteration(alg: PPO, env: Any, obs: TensorDict) -> tuple[TensorDict, dict[str, torch.Tensor]]:
    """:func:`collect_rollout` then :meth:`PPO.update`; returns the next observation and the 0-dim metrics."""
    obs = collect_rollout(alg, env, obs)
    return obs, alg.update()
