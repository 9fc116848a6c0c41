"""Redline-Cartpole: Isaac Lab's direct-workflow cartpole, loading its USD files from the local asset root."""

from __future__ import annotations

from isaaclab.utils import configclass, replace
from isaaclab_tasks.core.cartpole.cartpole_direct_env_cfg import CartpoleEnvCfg as IsaacCartpoleEnvCfg
from isaaclab_tasks.core.cartpole.cartpole_direct_env_cfg import CartpoleSceneCfg as IsaacCartpoleSceneCfg

from redline.assets import CARTPOLE_REL, asset_path
from redline.assets.scene import local_ground_plane_cfg

from ..common import RedlineTaskCfg, use_play_defaults

##
# Scene
##


_ISAAC_SCENE = IsaacCartpoleSceneCfg()


@configclass
class CartpoleSceneCfg(IsaacCartpoleSceneCfg):
    """Isaac Lab's cartpole scene (ground, cartpole, light) with local USD files."""

    ground = replace(_ISAAC_SCENE.ground, spawn=local_ground_plane_cfg())
    cartpole = replace(
        _ISAAC_SCENE.cartpole, spawn=replace(_ISAAC_SCENE.cartpole.spawn, usd_path=asset_path(CARTPOLE_REL))
    )


##
# Environment
##


@configclass
class CartpoleEnvCfg(RedlineTaskCfg, IsaacCartpoleEnvCfg):
    """Isaac Lab's cartpole: same dynamics, observations (4), action (1 force, x100 N) and rewards.

    Rewards per step (x ``step_dt``): alive +1, terminated -2, pole angle^2 x -1, |cart vel| x -0.01,
    |pole vel| x -0.005; a full 5 s episode (300 steps) that balances perfectly returns 5.0.
    """

    scene: CartpoleSceneCfg = CartpoleSceneCfg(
        num_envs=4096, env_spacing=0.0, replicate_physics=True, clone_in_fabric=True
    )

    cpu_num_envs: int = 256
    """Default number of envs when the simulation runs on the CPU (``scene.num_envs`` is the GPU default)."""


@configclass
class CartpoleEnvCfg_PLAY(CartpoleEnvCfg):
    """Play twin: 16 envs, ``eval`` seeding; the task has no training noise to switch off."""

    def __post_init__(self):
        super().__post_init__()
        use_play_defaults(self)
