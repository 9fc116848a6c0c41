"""Redline-Ant environment: Isaac Lab's direct Ant, with the local assets built before spawning."""

from __future__ import annotations

from isaaclab_tasks.core.locomotion.ant.ant_direct_env import AntEnv as IsaacAntEnv

from redline.assets import ensure_asset_root

from .ant_env_cfg import AntEnvCfg


class AntEnv(IsaacAntEnv):
    """Isaac Lab's Ant environment; see :class:`AntEnvCfg`."""

    cfg: AntEnvCfg

    def __init__(self, cfg: AntEnvCfg, render_mode: str | None = None, **kwargs):
        ensure_asset_root()
        super().__init__(cfg, render_mode, **kwargs)
