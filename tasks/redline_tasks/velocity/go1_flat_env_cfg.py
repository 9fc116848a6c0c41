"""Redline-Velocity-Flat-Go1: the flat velocity task on the offline Unitree Go1 (MuJoCo Menagerie's model)."""

from __future__ import annotations

from isaaclab.utils import configclass, replace

from redline.assets.robots import UNITREE_GO1_CFG

from .velocity_env_cfg import VelocityFlatEnvCfg, use_velocity_play_defaults

##
# Environment
##


@configclass
class Go1FlatEnvCfg(VelocityFlatEnvCfg):
    """Go1 on flat ground: 48 observations, 12 joint-position actions; Isaac Lab's Go1 reward weights."""

    def __post_init__(self):
        super().__post_init__()
        self.scene.robot = replace(UNITREE_GO1_CFG, prim_path="{ENV_REGEX_NS}/Robot")
        # the feet are spheres on the calf bodies; the trunk is the base
        self.rewards.feet_air_time.params["sensor_cfg"].body_names = ".*_calf"
        self.rewards.undesired_contacts.params["sensor_cfg"].body_names = ".*_thigh"
        self.terminations.base_contact.params["sensor_cfg"].body_names = "trunk"
        self.events.add_base_mass.params["asset_cfg"].body_names = "trunk"
        self.rewards.track_lin_vel_xy_exp.weight = 1.5
        self.rewards.track_ang_vel_z_exp.weight = 0.75
        self.rewards.joint_torques_l2.weight = -2.0e-4
        # an env step's four physics steps in one MuJoCo-C call, as Isaac Lab's physics-owned loop: ~1.2x cheaper
        # per env step; env steps to walk 1.06x [0.99, 1.14] of the default loop's (10 paired seeds, docs/go1.md)
        self.sim.physics.mujoco_cpu.solver_cfg.fuse_decimation = True


@configclass
class Go1FlatEnvCfg_PLAY(Go1FlatEnvCfg):
    """Play twin: 16 envs, ``eval`` seeding, no observation noise, no pushes."""

    def __post_init__(self):
        super().__post_init__()
        use_velocity_play_defaults(self)
