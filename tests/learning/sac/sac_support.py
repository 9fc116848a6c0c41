"""A tiny simulator-free continuous env and small configs for the off-policy learner's tests."""

from __future__ import annotations

import dataclasses

import torch
from tensordict import TensorDict

from redline.learning.sac import SACActorConfig, SACConfig, SACCriticConfig
from redline.seeding.philox import philox4x32, to_unit_float


class ReachEnv:
    """1-D reach: a point at x moves by ``0.2 a`` per step (a in [-1, 1]); reward ``1 - |x - target|``; observation
    ``(x - target, x)``; episodes time out after ``horizon`` steps, and terminate when |x| > 2 (reward −5).

    Rsl_rl's vec-env surface: ``num_envs``, ``num_actions``, ``device``, ``get_observations()``, ``step(actions)``
    returning ``(obs, rewards, dones, extras)`` with ``extras["time_outs"]`` and ``extras["final_observation"]``.
    """

    def __init__(self, num_envs: int, seed: int = 0, horizon: int = 20, env_id_offset: int = 0, target: float = 0.5):
        self.num_envs, self.num_actions, self.device = num_envs, 1, torch.device("cpu")
        self.cfg: dict = {}  # rsl_rl's logger reads env.cfg
        self.horizon, self.target = horizon, target
        self.ids = torch.arange(env_id_offset, env_id_offset + num_envs)
        """Global env ids."""
        self.steps = 0
        """Steps taken (the exploration-noise counter)."""
        self._phase = self.ids.double()  # per global env: a deterministic start, whatever the partition
        self.episode = torch.zeros(num_envs, dtype=torch.int64)
        self.t = torch.zeros(num_envs, dtype=torch.int64)
        self.x = self._start(torch.ones(num_envs, dtype=torch.bool))

    def _start(self, mask: torch.Tensor) -> torch.Tensor:
        # a start in [-1, 1] that depends on the global env id and its episode count only
        start = torch.sin(self._phase * 12.9898 + self.episode.double() * 78.233).float()
        return torch.where(mask, start, getattr(self, "x", start))

    def obs(self) -> TensorDict:
        x = self.x.unsqueeze(-1)
        return TensorDict({"policy": torch.cat((x - self.target, x), -1)}, batch_size=[self.num_envs])

    def get_observations(self) -> TensorDict:
        return self.obs()

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        self.steps += 1
        self.x = self.x + 0.2 * actions.reshape(-1).clamp(-1, 1)
        self.t += 1
        terminated = self.x.abs() > 2.0
        time_outs = (self.t >= self.horizon) & ~terminated
        rewards = torch.where(terminated, -5.0, 1.0 - (self.x - self.target).abs())
        dones = terminated | time_outs
        final = self.obs()
        self.episode += dones.long()
        self.t = torch.where(dones, 0, self.t)
        self.x = self._start(dones)
        return self.obs(), rewards, dones.float(), {"time_outs": time_outs, "final_observation": final}


def env_noise(env: ReachEnv, seed: int = 0):  # type: ignore[no-untyped-def]
    """Exploration noise ``(N, 1)`` as a pure function of (seed, global env id, step): partition-invariant, like
    redline's per-env streams (a callable for ``SAC.action_noise``)."""

    def draw() -> torch.Tensor:
        zeros = torch.zeros_like(env.ids)
        counter = torch.stack((zeros + env.steps, env.ids, zeros, zeros), -1)
        words = philox4x32(counter, (seed, 1))
        u1, u2 = 1.0 - to_unit_float(words[:, 0]), to_unit_float(words[:, 1])
        return (torch.sqrt(-2.0 * torch.log(u1)) * torch.cos(2.0 * torch.pi * u2)).unsqueeze(-1)

    return draw


def rsl_rl_train_cfg(**algorithm: object) -> dict:
    """An rsl_rl runner dict selecting the off-policy learner, with :func:`tiny_cfg`'s sizes."""
    return {
        "num_steps_per_env": 2,
        "save_interval": 1,
        "max_iterations": 3,
        "seed": 3,
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "algorithm": {
            "class_name": "redline.learning.sac.rsl_rl_sac:SAC",
            "buffer_size_per_env": 32,
            "batch_size": 64,
            "learning_starts": 2,
            "precision": "fp32",
            **algorithm,
        },
        "actor": {"class_name": "MLPModel", "hidden_dims": [32, 32]},
        "critic": {"hidden_dims": [32, 32], "num_atoms": 11, "v_min": -5.0, "v_max": 25.0},
    }


def tiny_cfg(**overrides: object) -> SACConfig:
    """Small, fast, fp32: [32, 32] networks, 11 atoms, batch 64, 2 steps per iteration."""
    base = SACConfig(
        num_steps_per_env=2,
        buffer_size_per_env=32,
        batch_size=64,
        updates_per_step=2,
        policy_frequency=2,
        n_step=3,
        learning_starts=2,
        precision="fp32",
        actor=SACActorConfig(hidden_dims=(32, 32)),
        critic=SACCriticConfig(hidden_dims=(32, 32), num_atoms=11, v_min=-5.0, v_max=25.0),
    )
    return dataclasses.replace(base, **overrides)


def run_iteration(alg, env, obs: TensorDict) -> tuple[TensorDict, dict]:  # type: ignore[no-untyped-def]
    """One iteration: ``num_steps_per_env`` acted steps, then the update."""
    for _ in range(alg.cfg.num_steps_per_env):
        actions = alg.act(obs)
        obs, rewards, dones, extras = env.step(actions)
        alg.process_env_step(obs, rewards, dones, extras)
    return obs, alg.update()
