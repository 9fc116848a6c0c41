"""Redline-Ant: Isaac Lab's direct-workflow Ant, loading its USD files from the local asset root."""

from __future__ import annotations

from isaaclab.utils import configclass, replace
from isaaclab_tasks.core.locomotion.ant.ant_common import TERRAIN_CFG
from isaaclab_tasks.core.locomotion.ant.ant_direct_env_cfg import AntDirectSceneCfg as IsaacAntSceneCfg
from isaaclab_tasks.core.locomotion.ant.ant_direct_env_cfg import AntEnvCfg as IsaacAntEnvCfg

from redline.assets import ANT_REL, asset_path
from redline.assets.scene import LocalPlaneTerrainImporter

from ..common import RedlineTaskCfg, use_play_defaults

##
# Scene
##

_ISAAC_SCENE = IsaacAntSceneCfg()


@configclass
class AntSceneCfg(IsaacAntSceneCfg):
    """Isaac Lab's Ant scene (flat terrain, ant, joint-wrench sensor, light) with local USD files."""

    terrain = replace(TERRAIN_CFG, class_type=LocalPlaneTerrainImporter)
    robot = replace(_ISAAC_SCENE.robot, spawn=replace(_ISAAC_SCENE.robot.spawn, usd_path=asset_path(ANT_REL)))


##
# Environment
##


@configclass
class AntEnvCfg(RedlineTaskCfg, IsaacAntEnvCfg):
    """Isaac Lab's Ant: same observations (60), actions (8 joint efforts) and rewards (progress, heading, up,
    alive, energy and action costs)."""

    scene: AntSceneCfg = AntSceneCfg(num_envs=4096, env_spacing=0.0, replicate_physics=True, clone_in_fabric=True)

    cpu_num_envs: int = 64
    """Default number of envs when the simulation runs on the CPU (``scene.num_envs`` is the GPU default)."""


@configclass
class AntEnvCfg_PLAY(AntEnvCfg):
    """Play twin: 16 envs, ``eval`` seeding; the task has no training noise to switch off."""

    def __post_init__(self):
        super().__post_init__()
        use_play_defaults(self)
