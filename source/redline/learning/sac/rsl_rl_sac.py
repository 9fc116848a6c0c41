"""redline's SAC as an rsl_rl algorithm class for rsl_rl 5.5.1's stock ``OnPolicyRunner`` (skeleton)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from tensordict import TensorDict

from redline.learning.sac.sac import SAC as RedlineSAC


class SAC:
    """What rsl_rl's ``OnPolicyRunner`` calls on its algorithm, done by :class:`redline.learning.sac.sac.SAC`."""

    def __init__(self, learner: RedlineSAC, env: Any = None) -> None:
        self.learner = learner

    @classmethod
    def construct_algorithm(cls, obs: TensorDict, env: Any, cfg: Mapping[str, Any], device: str) -> SAC:
        raise NotImplementedError

    def act(self, obs: TensorDict) -> torch.Tensor:
        raise NotImplementedError

    def process_env_step(self, obs: TensorDict, rewards: torch.Tensor, dones: torch.Tensor, extras: dict) -> None:
        raise NotImplementedError

    def compute_returns(self, obs: TensorDict) -> None:
        pass

    def update(self) -> dict[str, float]:
        raise NotImplementedError

    def save(self) -> dict[str, Any]:
        raise NotImplementedError

    def load(self, loaded_dict: dict[str, Any], load_cfg: dict | None = None, strict: bool = True) -> bool:
        raise NotImplementedError
