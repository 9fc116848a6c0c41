"""Redline-Velocity-Flat-G1: Isaac Lab's humanoid (G1) flat velocity task on the offline Unitree G1 (MuJoCo
Menagerie's 29-joint MJX model, no hands).

The MDP is Isaac Lab's ``Isaac-Velocity-Flat-G1`` (``isaaclab_tasks/core/velocity/config/g1``: its rough config's
reward terms and changes, then its flat ones) on redline's seeded velocity task; the robot's joints are renamed
from Isaac Lab's older G1 (``torso_joint`` -> ``waist_*_joint``, ``elbow_pitch/roll`` -> ``elbow``, wrists instead of
fingers). The actuators and the per-joint action scale are mjlab's for this model.
"""

from __future__ import annotations

from isaaclab.managers import RewardTermCfg as RewTerm
from isaaclab.managers import SceneEntityCfg
from isaaclab.utils import configclass, replace

from redline.assets.robots import G1_ACTION_SCALE, UNITREE_G1_CFG

from . import mdp
from .velocity_env_cfg import RewardsCfg, VelocityFlatEnvCfg, use_velocity_play_defaults

FEET = ".*_ankle_roll_link"
"""The bodies carrying the soles (three capsules each)."""
LEGS = [".*_hip_.*", ".*_knee_joint"]
"""The joints whose torques and accelerations are penalised (Isaac Lab's G1 flat choice)."""

##
# MDP
##


@configclass
class G1RewardsCfg(RewardsCfg):
    """Isaac Lab's G1 rewards: yaw-frame / world-frame tracking, a termination penalty, biped air time, foot
    sliding, ankle limits and deviation of the joints not needed for walking."""

    termination_penalty = RewTerm(func=mdp.is_terminated, weight=-200.0)
    track_lin_vel_xy_exp = RewTerm(
        func=mdp.track_lin_vel_xy_yaw_frame_exp, weight=1.0, params={"command_name": "base_velocity", "std": 0.5}
    )
    track_ang_vel_z_exp = RewTerm(
        func=mdp.track_ang_vel_z_world_exp, weight=1.0, params={"command_name": "base_velocity", "std": 0.5}
    )
    feet_air_time = RewTerm(
        func=mdp.feet_air_time_positive_biped,
        weight=0.75,
        params={
            "command_name": "base_velocity",
            "sensor_cfg": SceneEntityCfg("contact_forces", body_names=FEET),
            "threshold": 0.4,  # [s]
        },
    )
    feet_slide = RewTerm(
        func=mdp.feet_slide,
        weight=-0.1,
        params={
            "sensor_cfg": SceneEntityCfg("contact_forces", body_names=FEET),
            "asset_cfg": SceneEntityCfg("robot", body_names=FEET),
        },
    )
    dof_pos_limits = RewTerm(
        func=mdp.joint_pos_limits,
        weight=-1.0,
        params={"asset_cfg": SceneEntityCfg("robot", joint_names=[".*_ankle_pitch_joint", ".*_ankle_roll_joint"])},
    )
    joint_deviation_hip = RewTerm(
        func=mdp.joint_deviation_l1,
        weight=-0.1,
        params={"asset_cfg": SceneEntityCfg("robot", joint_names=[".*_hip_yaw_joint", ".*_hip_roll_joint"])},
    )
    joint_deviation_arms = RewTerm(
        func=mdp.joint_deviation_l1,
        weight=-0.1,
        params={"asset_cfg": SceneEntityCfg("robot", joint_names=[".*_shoulder_.*_joint", ".*_elbow_joint"])},
    )
    joint_deviation_wrists = RewTerm(
        func=mdp.joint_deviation_l1,
        weight=-0.05,  # Isaac Lab's weight for its G1's hand joints
        params={"asset_cfg": SceneEntityCfg("robot", joint_names=".*_wrist_.*_joint")},
    )
    joint_deviation_torso = RewTerm(
        func=mdp.joint_deviation_l1,
        weight=-0.1,
        params={"asset_cfg": SceneEntityCfg("robot", joint_names="waist_.*_joint")},
    )


##
# Environment
##


@configclass
class G1FlatEnvCfg(VelocityFlatEnvCfg):
    """G1 on flat ground: 99 observations, 29 joint-position actions; Isaac Lab's G1 flat weights."""

    rewards: G1RewardsCfg = G1RewardsCfg()

    cpu_num_envs: int = 1024
    """Default number of envs on the CPU: as the Go1's. On ``mujoco_cpu``, 256 / 512 / 1024 envs gave 164 / 214 / 384
    env steps/s while training (734 / 914 / 611 env-only; 2 cores shared with other jobs, docs/g1.md)."""

    def __post_init__(self):
        super().__post_init__()
        physics = self.sim.physics  # each choice is its own copy, the default too
        for preset in (physics.newton_mjwarp, physics.mujoco_cpu, physics.default):
            preset.solver_cfg.njmax = 200  # six sole capsules, and the whole body when it falls (docs/g1.md)
            preset.solver_cfg.nconmax = 48
        self.scene.robot = replace(UNITREE_G1_CFG, prim_path="{ENV_REGEX_NS}/Robot")
        self.actions.joint_pos.scale = dict(G1_ACTION_SCALE)
        # commands: forward only, less sideways (Isaac Lab's G1 flat ranges)
        ranges = self.commands.base_velocity.ranges
        ranges.lin_vel_x = (0.0, 1.0)  # [m/s]
        ranges.lin_vel_y = (-0.5, 0.5)  # [m/s]
        ranges.ang_vel_z = (-1.0, 1.0)  # [rad/s]
        self.commands.base_velocity.vel_yaw_success_threshold = 0.8  # [rad/s]
        # rewards
        self.rewards.lin_vel_z_l2.weight = -0.2
        self.rewards.undesired_contacts = None
        self.rewards.flat_orientation_l2.weight = -1.0
        self.rewards.action_rate_l2.weight = -0.005
        self.rewards.joint_acc_l2.weight = -1.0e-7
        self.rewards.joint_acc_l2.params["asset_cfg"] = SceneEntityCfg("robot", joint_names=LEGS)
        self.rewards.joint_torques_l2.weight = -2.0e-6
        self.rewards.joint_torques_l2.params["asset_cfg"] = SceneEntityCfg("robot", joint_names=LEGS)
        # terminations and events: the torso is the "base" of Isaac Lab's G1 terms
        self.terminations.base_contact.params["sensor_cfg"].body_names = "torso_link"
        self.events.add_base_mass.params["asset_cfg"].body_names = "torso_link"
        self.events.reset_robot_joints.params["position_range"] = (1.0, 1.0)


@configclass
class G1FlatEnvCfg_PLAY(G1FlatEnvCfg):
    """Play twin: 16 envs, ``eval`` seeding, no observation noise, no pushes."""

    def __post_init__(self):
        super().__post_init__()
        use_velocity_play_defaults(self)
