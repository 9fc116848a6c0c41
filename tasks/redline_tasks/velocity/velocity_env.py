"""The manager-based env class of redline's velocity tasks: Isaac Lab's, plus per-env streams and local assets."""

from __future__ import annotations

from typing import Any

import torch
from isaaclab.envs import ManagerBasedRLEnv

from redline.assets import ensure_asset_root
from redline.seeding import EnvStreams

from ..common import make_streams
from .mdp import bind_noise_streams


class VelocityEnv(ManagerBasedRLEnv):
    """:class:`ManagerBasedRLEnv` that builds the local assets and its per-env streams (``self.streams``) before the
    managers exist, so startup events draw from the streams too, and counts an episode for every env it resets.

    The randomised terms in :mod:`redline_tasks.velocity.mdp` (events, commands, observation noise) draw from
    ``self.streams``.
    """

    streams: EnvStreams

    def __init__(self, cfg: Any, render_mode: str | None = None, **kwargs: Any) -> None:
        ensure_asset_root()
        self.streams = make_streams(cfg.seeding, cfg.seed, cfg.scene.num_envs, cfg.sim.device)
        bind_noise_streams(cfg.observations, self.streams)
        super().__init__(cfg, render_mode, **kwargs)

    def _reset_idx(self, env_ids: torch.Tensor | slice) -> None:
        ids = torch.arange(self.num_envs, device=self.device)[env_ids] if isinstance(env_ids, slice) else env_ids
        self.streams.begin_episode(ids)  # before the reset events draw the episode's start state
        super()._reset_idx(env_ids)
