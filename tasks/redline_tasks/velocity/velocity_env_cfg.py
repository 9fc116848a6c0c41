"""Flat-ground velocity tracking for a quadruped (manager-based), Isaac Lab's velocity task on local assets.

The structure, terms and weights follow Isaac Lab's ``LocomotionVelocityRoughEnvCfg`` with its flat-terrain
changes; every reset, command, push, mass and friction draw comes from the env's per-env streams
(:mod:`redline_tasks.velocity.mdp`). The robot-specific config sets ``scene.robot`` and the body names.
"""

from __future__ import annotations

import math
from dataclasses import MISSING

import isaaclab.sim as sim_utils
from isaaclab.assets import ArticulationCfg, AssetBaseCfg
from isaaclab.envs import ManagerBasedRLEnvCfg
from isaaclab.managers import EventTermCfg as EventTerm
from isaaclab.managers import ObservationGroupCfg as ObsGroup
from isaaclab.managers import ObservationTermCfg as ObsTerm
from isaaclab.managers import RewardTermCfg as RewTerm
from isaaclab.managers import SceneEntityCfg
from isaaclab.managers import TerminationTermCfg as DoneTerm
from isaaclab.scene import InteractiveSceneCfg
from isaaclab.sensors import ContactSensorCfg
from isaaclab.sim import SimulationCfg
from isaaclab.terrains import TerrainImporterCfg
from isaaclab.utils import configclass
from isaaclab_tasks.core.velocity.velocity_env_cfg import RoughPhysicsCfg

from redline.assets.scene import LocalPlaneTerrainImporter

from ..common import SeedingCfg, use_play_defaults, with_mujoco_cpu
from . import mdp
from .mdp import noisy_term

##
# Scene
##


@configclass
class VelocitySceneCfg(InteractiveSceneCfg):
    """Flat ground (local plane), the robot, contact sensors on all its bodies, a light."""

    terrain = TerrainImporterCfg(
        class_type=LocalPlaneTerrainImporter,
        prim_path="/World/ground",
        terrain_type="plane",
        collision_group=-1,
        physics_material=sim_utils.RigidBodyMaterialCfg(
            friction_combine_mode="multiply",
            restitution_combine_mode="multiply",
            static_friction=1.0,
            dynamic_friction=1.0,
        ),
        debug_vis=False,
    )
    robot: ArticulationCfg = MISSING
    contact_forces = ContactSensorCfg(prim_path="{ENV_REGEX_NS}/Robot/.*", history_length=3, track_air_time=True)
    light = AssetBaseCfg(
        prim_path="/World/light", spawn=sim_utils.DistantLightCfg(color=(0.75, 0.75, 0.75), intensity=3000.0)
    )


##
# MDP
##


@configclass
class CommandsCfg:
    """Base velocity commands, resampled every 10 s; heading-controlled yaw."""

    base_velocity = mdp.SeededUniformVelocityCommandCfg(
        asset_name="robot",
        resampling_time_range=(10.0, 10.0),  # [s]
        rel_standing_envs=0.02,
        rel_heading_envs=1.0,
        heading_command=True,
        heading_control_stiffness=0.5,
        debug_vis=False,
        ranges=mdp.UniformVelocityCommandCfg.Ranges(
            lin_vel_x=(-1.0, 1.0),  # [m/s]
            lin_vel_y=(-1.0, 1.0),  # [m/s]
            ang_vel_z=(-1.0, 1.0),  # [rad/s]
            heading=(-math.pi, math.pi),  # [rad]
        ),
    )


@configclass
class ActionsCfg:
    """Joint position targets around the default pose."""

    joint_pos = mdp.JointPositionActionCfg(asset_name="robot", joint_names=[".*"], scale=0.25, use_default_offset=True)


@configclass
class ObservationsCfg:
    """Proprioception, command and last action (48 values for a 12-joint robot)."""

    @configclass
    class PolicyCfg(ObsGroup):
        """Observations of the policy (and the critic)."""

        base_lin_vel = ObsTerm(**noisy_term(mdp.base_lin_vel, -0.1, 0.1))  # [m/s]
        base_ang_vel = ObsTerm(**noisy_term(mdp.base_ang_vel, -0.2, 0.2))  # [rad/s]
        projected_gravity = ObsTerm(**noisy_term(mdp.projected_gravity, -0.05, 0.05))
        velocity_commands = ObsTerm(func=mdp.generated_commands, params={"command_name": "base_velocity"})
        joint_pos = ObsTerm(**noisy_term(mdp.joint_pos_rel, -0.01, 0.01))  # [rad]
        joint_vel = ObsTerm(**noisy_term(mdp.joint_vel_rel, -1.5, 1.5))  # [rad/s]
        actions = ObsTerm(func=mdp.last_action)

        def __post_init__(self):
            self.enable_corruption = True
            self.concatenate_terms = True

    policy: PolicyCfg = PolicyCfg()


@configclass
class EventsCfg:
    """Domain randomisation at startup, start states at reset, pushes during the episode."""

    # startup
    physics_material = EventTerm(
        func=mdp.randomize_friction,
        mode="startup",
        params={
            "asset_cfg": SceneEntityCfg("robot", body_names=".*"),
            "static_friction_range": (0.6, 1.0),
            "dynamic_friction_range": (0.6, 1.0),
            "restitution_range": (0.0, 0.0),
            "num_buckets": 64,
        },
    )
    add_base_mass = EventTerm(
        func=mdp.randomize_base_mass,
        mode="startup",
        params={"asset_cfg": SceneEntityCfg("robot", body_names=MISSING), "scale_range": (1 / 1.25, 1.25)},
    )

    # reset
    reset_base = EventTerm(
        func=mdp.reset_root_state_uniform,
        mode="reset",
        params={
            "pose_range": {"x": (-0.5, 0.5), "y": (-0.5, 0.5), "yaw": (-3.14, 3.14)},  # [m], [rad]
            "velocity_range": {
                "x": (-0.5, 0.5),  # [m/s]
                "y": (-0.5, 0.5),
                "z": (-0.5, 0.5),
                "roll": (-0.5, 0.5),  # [rad/s]
                "pitch": (-0.5, 0.5),
                "yaw": (-0.5, 0.5),
            },
        },
    )
    reset_robot_joints = EventTerm(
        func=mdp.reset_joints_by_scale,
        mode="reset",
        params={"position_range": (0.5, 1.5), "velocity_range": (0.0, 0.0)},
    )

    # interval: checked every step; the term draws its own per-env push times
    push_robot = EventTerm(
        func=mdp.push_by_setting_velocity,
        mode="interval",
        interval_range_s=(0.0, 0.0),
        params={"interval_range_s": (10.0, 15.0), "velocity_range": {"x": (-0.5, 0.5), "y": (-0.5, 0.5)}},
    )


@configclass
class RewardsCfg:
    """Isaac Lab's velocity rewards (flat-terrain weights)."""

    # task
    track_lin_vel_xy_exp = RewTerm(
        func=mdp.track_lin_vel_xy_exp, weight=1.0, params={"command_name": "base_velocity", "std": math.sqrt(0.25)}
    )
    track_ang_vel_z_exp = RewTerm(
        func=mdp.track_ang_vel_z_exp, weight=0.5, params={"command_name": "base_velocity", "std": math.sqrt(0.25)}
    )
    # penalties
    lin_vel_z_l2 = RewTerm(func=mdp.lin_vel_z_l2, weight=-2.0)
    ang_vel_xy_l2 = RewTerm(func=mdp.ang_vel_xy_l2, weight=-0.05)
    joint_torques_l2 = RewTerm(func=mdp.joint_torques_l2, weight=-1.0e-5)
    joint_acc_l2 = RewTerm(func=mdp.joint_acc_l2, weight=-2.5e-7)
    action_rate_l2 = RewTerm(func=mdp.action_rate_l2, weight=-0.01)
    feet_air_time = RewTerm(
        func=mdp.feet_air_time,
        weight=0.25,
        params={
            "sensor_cfg": SceneEntityCfg("contact_forces", body_names=MISSING),
            "command_name": "base_velocity",
            "threshold": 0.5,  # [s]
        },
    )
    undesired_contacts = RewTerm(
        func=mdp.undesired_contacts,
        weight=-1.0,
        params={"sensor_cfg": SceneEntityCfg("contact_forces", body_names=MISSING), "threshold": 1.0},  # [N]
    )
    flat_orientation_l2 = RewTerm(func=mdp.flat_orientation_l2, weight=-2.5)


@configclass
class TerminationsCfg:
    """Time out, or the base touches the ground."""

    time_out = DoneTerm(func=mdp.time_out, time_out=True)
    base_contact = DoneTerm(
        func=mdp.illegal_contact,
        params={"sensor_cfg": SceneEntityCfg("contact_forces", body_names=MISSING), "threshold": 1.0},  # [N]
    )


##
# Environment
##


@configclass
class VelocityFlatEnvCfg(ManagerBasedRLEnvCfg):
    """Velocity tracking on flat ground: 20 s episodes, 50 Hz control (4 x 5 ms physics steps)."""

    sim: SimulationCfg = SimulationCfg(physics=RoughPhysicsCfg())
    # env_spacing 0: world origins do not depend on num_envs (Newton worlds never collide with each other)
    scene: VelocitySceneCfg = VelocitySceneCfg(num_envs=4096, env_spacing=0.0)
    observations: ObservationsCfg = ObservationsCfg()
    actions: ActionsCfg = ActionsCfg()
    commands: CommandsCfg = CommandsCfg()
    rewards: RewardsCfg = RewardsCfg()
    terminations: TerminationsCfg = TerminationsCfg()
    events: EventsCfg = EventsCfg()

    seeding: SeedingCfg = SeedingCfg()
    """Where every random draw comes from; ``per_env`` by default (see :mod:`redline_tasks.common`)."""

    cpu_num_envs: int = 1024
    """Default number of envs when the simulation runs on the CPU (``scene.num_envs`` is the GPU default). 1024: on
    the CPU default physics (``mujoco_cpu``) env steps/s still grow from 256 to 1024 envs (6.2k -> 7.6k on 2 cores),
    and a 24.6k-sample batch (5 epochs x 4 minibatches of 6.1k) walked within 30 min of training (docs/go1.md)."""

    final_observation: bool = False
    """Each step's extras carry the true final observation (:data:`redline_tasks.common.FINAL_OBSERVATION`); off:
    nothing is computed."""

    def __post_init__(self):
        self.decimation = 4
        self.episode_length_s = 20.0  # [s]
        self.sim.dt = 0.005  # [s]
        self.sim.render_interval = self.decimation
        self.sim.physics_material = self.scene.terrain.physics_material
        newton_mjwarp = self.sim.physics.newton_mjwarp
        newton_mjwarp.solver_cfg.njmax = 65  # flat ground: few contacts per world (Isaac Lab's flat values)
        newton_mjwarp.solver_cfg.nconmax = 35
        newton_mjwarp.num_substeps = 1  # 5 ms MuJoCo steps as in legged_gym (Isaac Lab: 2 x 2.5 ms); 1.6x faster
        self.sim.physics.default = newton_mjwarp
        self.sim.physics = with_mujoco_cpu(self.sim.physics)  # physics=mujoco_cpu: MuJoCo's C engine, all cores
        self.scene.contact_forces.update_period = self.sim.dt


def use_velocity_play_defaults(cfg: VelocityFlatEnvCfg) -> None:
    """What every velocity ``-Play`` twin changes (Isaac Lab's play changes): 16 envs, ``eval`` seeding, no
    observation noise, no pushes."""
    use_play_defaults(cfg)
    cfg.observations.policy.enable_corruption = False
    cfg.events.push_robot = None
