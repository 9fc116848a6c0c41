"""Redline-Cartpole environment: Isaac Lab's direct cartpole, with the local assets built before spawning."""

from __future__ import annotations

from isaaclab_tasks.core.cartpole.cartpole_direct_env import CartpoleEnv as IsaacCartpoleEnv

from redline.assets import ensure_asset_root

from .cartpole_env_cfg import CartpoleEnvCfg


class CartpoleEnv(IsaacCartpoleEnv):
    """Isaac Lab's cartpole environment; see :class:`CartpoleEnvCfg`."""

    cfg: CartpoleEnvCfg

    def __init__(self, cfg: CartpoleEnvCfg, render_mode: str | None = None, **kwargs):
        ensure_asset_root()
        super().__init__(cfg, render_mode, **kwargs)
