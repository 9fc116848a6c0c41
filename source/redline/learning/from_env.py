"""Building a learner from an rsl_rl-style vec env: the one constructor call PPO and SAC share."""

from __future__ import annotations

from typing import Any, Self, cast

import torch

from redline.learning.distributed import Communicator


class FromEnv:
    """Mixin: :meth:`from_env` for a learner constructed as ``cls(obs, num_actions, cfg, device, seed, comm)``."""

    @classmethod
    def from_env(
        cls,
        env: Any,
        cfg: Any,
        device: torch.device | str = "cpu",
        seed: int = 0,
        comm: Communicator | None = None,
    ) -> Self:
        """Build from an rsl_rl-style vec env (``get_observations()``, ``num_actions``) and the learner's config."""
        build = cast(Any, cls)  # the learner's own __init__, not this mixin's
        return cast(Self, build(env.get_observations(), env.num_actions, cfg, device=device, seed=seed, comm=comm))
