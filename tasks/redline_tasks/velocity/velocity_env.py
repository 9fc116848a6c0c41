"""The manager-based env class of redline's velocity tasks: Isaac Lab's, plus per-env streams and local assets."""

from __future__ import annotations

import torch
from isaaclab.envs import ManagerBasedRLEnv

from ..common import RedlineEnvMixin


class VelocityEnv(RedlineEnvMixin, ManagerBasedRLEnv):
    """:class:`ManagerBasedRLEnv` with per-env streams (``self.streams``), counting an episode for every env it
    resets. The randomised terms in :mod:`redline_tasks.velocity.mdp` (events, commands, observation noise) draw
    from ``env.streams``.
    """

    def _reset_idx(self, env_ids: torch.Tensor | slice) -> None:
        ids = torch.arange(self.num_envs, device=self.device)[env_ids] if isinstance(env_ids, slice) else env_ids
        self.streams.begin_episode(ids)  # before the reset events draw the episode's start state
        super()._reset_idx(env_ids)
