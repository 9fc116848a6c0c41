"""The off-policy learner (skeleton: interface fixed, body filled in by later commits)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from tensordict import TensorDict

from redline.learning.distributed import Communicator
from redline.learning.sac.sac_config import SACConfig


class SAC:
    """SAC with a C51 clipped double-Q critic on a TensorDict replay; data-parallel, no host reads in update()."""

    def __init__(
        self,
        obs: TensorDict,
        num_actions: int,
        cfg: SACConfig,
        device: torch.device | str = "cpu",
        seed: int = 0,
        comm: Communicator | None = None,
    ) -> None:
        raise NotImplementedError

    @classmethod
    def from_env(
        cls, env: Any, cfg: SACConfig, device: torch.device | str = "cpu", seed: int = 0, comm: Communicator | None = None
    ) -> SAC:
        """Build from an rsl_rl-style vec env (``get_observations()``, ``num_actions``)."""
        return cls(env.get_observations(), env.num_actions, cfg, device=device, seed=seed, comm=comm)

    def act(self, obs: TensorDict) -> torch.Tensor:
        """Stochastic actions ``(N, A)`` for ``obs``; remembers ``obs`` and the actions for :meth:`process_env_step`."""
        raise NotImplementedError

    def act_inference(self, obs: TensorDict) -> torch.Tensor:
        """Deterministic actions ``action_scale * tanh(mean)``, ``(N, A)``."""
        raise NotImplementedError

    def process_env_step(
        self, next_obs: TensorDict, rewards: torch.Tensor, dones: torch.Tensor, extras: Mapping[str, Any]
    ) -> None:
        """Store the transition of the last :meth:`act` (``extras["time_outs"]``, ``extras["final_observation"]``)."""
        raise NotImplementedError

    def compute_returns(self, obs: TensorDict) -> None:
        """Nothing: n-step returns are computed when sampling."""

    def update(self) -> dict[str, torch.Tensor]:
        """``num_steps_per_env * updates_per_step`` gradient steps (none before ``learning_starts``); 0-dim tensors."""
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> None:
        raise NotImplementedError

    def check_replicas(self) -> None:
        raise NotImplementedError

    def get_policy(self) -> torch.nn.Module:
        raise NotImplementedError
