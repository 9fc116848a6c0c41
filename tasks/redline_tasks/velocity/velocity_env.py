"""The manager-based env class of redline's velocity tasks: Isaac Lab's, plus per-env streams and local assets."""

from __future__ import annotations

import torch
from isaaclab.envs import ManagerBasedRLEnv

from ..common import RedlineEnvMixin


class VelocityEnv(RedlineEnvMixin, ManagerBasedRLEnv):
    """:class:`ManagerBasedRLEnv` with per-env streams (``self.streams``), counting an episode for every env it
    resets. The randomised terms in :mod:`redline_tasks.velocity.mdp` (events, commands, observation noise) draw
    from ``env.streams``.

    A checkpoint's run state holds every manager's state (found by walking Isaac Lab's managers and their terms:
    :mod:`redline.run_state.env_state`), the sensors' and terrain's and the simulator's: no task buffers of its own.
    """

    run_state_buffers = ()

    def _reset_idx(self, env_ids: torch.Tensor | slice) -> None:
        self.capture_final_observation()  # before the episode count moves on
        ids = torch.arange(self.num_envs, device=self.device)[env_ids] if isinstance(env_ids, slice) else env_ids
        self.streams.begin_episode(ids)  # before the reset events draw the episode's start state
        super()._reset_idx(env_ids)
