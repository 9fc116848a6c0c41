"""Redline-Ant: Isaac Lab's direct-workflow Ant, loading its USD files from the local asset root."""

from __future__ import annotations

from isaaclab.utils import configclass, replace
from isaaclab_tasks.core.locomotion.ant.ant_common import TERRAIN_CFG
from isaaclab_tasks.core.locomotion.ant.ant_direct_env_cfg import AntDirectSceneCfg as IsaacAntSceneCfg
from isaaclab_tasks.core.locomotion.ant.ant_direct_env_cfg import AntEnvCfg as IsaacAntEnvCfg

from redline.assets import ANT_REL, asset_path
from redline.assets.scene import LocalPlaneTerrainImporter

from ..common import SeedingCfg, use_play_defaults, with_mujoco_cpu

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
class AntEnvCfg(IsaacAntEnvCfg):
    """Isaac Lab's Ant: same observations (60), actions (8 joint efforts) and rewards (progress, heading, up,
    alive, energy and action costs)."""

    scene: AntSceneCfg = AntSceneCfg(num_envs=4096, env_spacing=0.0, replicate_physics=True, clone_in_fabric=True)

    # env_spacing 0: world origins do not depend on num_envs, so an env's physics is bitwise the same in any
    # partition of the envs (Newton worlds never collide with each other).
    seeding: SeedingCfg = SeedingCfg()
    """Where reset states come from; ``per_env`` by default (see :mod:`redline_tasks.common`)."""

    cpu_num_envs: int = 64
    """Default number of envs when the simulation runs on the CPU (``scene.num_envs`` is the GPU default)."""

    def __post_init__(self):
        super().__post_init__()
        self.sim.physics = with_mujoco_cpu(self.sim.physics)  # physics=mujoco_cpu: MuJoCo's C engine, all cores


@configclass
class AntEnvCfg_PLAY(AntEnvCfg):
    """Play twin: 16 envs, ``eval`` seeding; the task has no training noise to switch off."""

    def __post_init__(self):
        super().__post_init__()
        use_play_defaults(self)
