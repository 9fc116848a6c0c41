"""Articulation configs of the robots in the local asset root (imports Isaac Lab; used by the task configs only)."""

from __future__ import annotations

import isaaclab.sim as sim_utils
from isaaclab.actuators import ImplicitActuatorCfg
from isaaclab.assets.articulation import ArticulationCfg
from isaaclab_newton.sim.schemas import NewtonArticulationCfg
from isaaclab_physx.sim.schemas import PhysxArticulationCfg

from redline.assets import G1_REL, GO1_REL, asset_path


def _spawn(rel: str, position_iterations: int, velocity_iterations: int) -> sim_utils.UsdFileCfg:
    """A robot of the local asset root with contact sensors and no self-collisions; PhysX's solver iterations."""
    physx = PhysxArticulationCfg(
        enabled_self_collisions=False,
        solver_position_iteration_count=position_iterations,
        solver_velocity_iteration_count=velocity_iterations,
    )
    return sim_utils.UsdFileCfg(
        usd_path=asset_path(rel),
        activate_contact_sensors=True,
        articulation_props=[physx, NewtonArticulationCfg(self_collision_enabled=False)],
    )


##
# Unitree Go1
##

# Joint-side motor figures from Unitree's go1 URDF (as used by Isaac Lab and mjlab): hip and thigh joints behind a
# 6:1 gearbox, the calf behind a further 1.5:1. The PD gains put each joint's reflected rotor inertia at a 10 Hz
# natural frequency with a damping ratio of 2 (mjlab's choice for this model).
_ROTOR_INERTIA = 0.000111842  # [kg m^2]
_HIP_ARMATURE = _ROTOR_INERTIA * 6.0**2  # [kg m^2] reflected through the 6:1 gearbox
_KNEE_ARMATURE = _ROTOR_INERTIA * 9.0**2  # [kg m^2] reflected through 6:1 x 1.5:1
_OMEGA = 2.0 * 3.141592653589793 * 10.0  # [rad/s]
_ZETA = 2.0

UNITREE_GO1_CFG = ArticulationCfg(
    spawn=_spawn(GO1_REL, 4, 0),
    init_state=ArticulationCfg.InitialStateCfg(
        pos=(0.0, 0.0, 0.35),  # [m] trunk height: the standing pose below has its feet ~1.5 cm above the ground
        joint_pos={
            ".*L_hip_joint": 0.1,  # [rad]
            ".*R_hip_joint": -0.1,
            "F[L,R]_thigh_joint": 0.8,
            "R[L,R]_thigh_joint": 1.0,
            ".*_calf_joint": -1.5,
        },
        joint_vel={".*": 0.0},  # [rad/s]
    ),
    soft_joint_pos_limit_factor=0.9,
    actuators={
        "hips_thighs": ImplicitActuatorCfg(
            joint_names_expr=[".*_hip_joint", ".*_thigh_joint"],
            effort_limit_sim=23.7,  # [N m]
            velocity_limit_sim=30.1,  # [rad/s]
            stiffness=_HIP_ARMATURE * _OMEGA**2,  # [N m/rad] ~15.9
            damping=2.0 * _ZETA * _HIP_ARMATURE * _OMEGA,  # [N m s/rad] ~1.01
            armature=_HIP_ARMATURE,
        ),
        "calves": ImplicitActuatorCfg(
            joint_names_expr=[".*_calf_joint"],
            effort_limit_sim=35.55,  # [N m]
            velocity_limit_sim=20.06,  # [rad/s]
            stiffness=_KNEE_ARMATURE * _OMEGA**2,  # [N m/rad] ~35.8
            damping=2.0 * _ZETA * _KNEE_ARMATURE * _OMEGA,  # [N m s/rad] ~2.28
            armature=_KNEE_ARMATURE,
        ),
    },
)
"""Unitree Go1 (12 joints ``{FL,FR,RL,RR}_{hip,thigh,calf}_joint``; base body ``trunk``; each foot is a sphere on
its ``*_calf`` body) with implicit PD actuators."""


##
# Unitree G1 (29 joints, no hands)
##

# Each joint group's motor: (joint-side reflected rotor inertia [kg m^2] -- the MJCF's armature, which is Unitree's
# rotor inertias through the two-stage planetary gearboxes --, effort limit [N m], velocity limit [rad/s]). The waist
# pitch/roll and ankle joints are four-bar linkages driven by two 5020 motors each (twice the inertia and effort).
# Gains as for the Go1 (10 Hz, damping ratio 2 on the reflected inertia; mjlab's choice for this model).
_G1_MOTORS: dict[str, tuple[tuple[str, ...], float, float, float]] = {
    "5020": (
        (
            ".*_shoulder_pitch_joint",
            ".*_shoulder_roll_joint",
            ".*_shoulder_yaw_joint",
            ".*_elbow_joint",
            ".*_wrist_roll_joint",
        ),
        0.003609725,
        25.0,
        37.0,
    ),
    "7520_14": ((".*_hip_pitch_joint", ".*_hip_yaw_joint", "waist_yaw_joint"), 0.01017752004, 88.0, 32.0),
    "7520_22": ((".*_hip_roll_joint", ".*_knee_joint"), 0.025101925, 139.0, 20.0),
    "4010": ((".*_wrist_pitch_joint", ".*_wrist_yaw_joint"), 0.00425, 5.0, 22.0),
    "2x5020": (
        ("waist_pitch_joint", "waist_roll_joint", ".*_ankle_pitch_joint", ".*_ankle_roll_joint"),
        2 * 0.003609725,
        50.0,
        37.0,
    ),
}


def _g1_actuator(joints: tuple[str, ...], armature: float, effort: float, velocity: float) -> ImplicitActuatorCfg:
    return ImplicitActuatorCfg(
        joint_names_expr=list(joints),
        effort_limit_sim=effort,  # [N m]
        velocity_limit_sim=velocity,  # [rad/s]
        stiffness=armature * _OMEGA**2,  # [N m/rad]
        damping=2.0 * _ZETA * armature * _OMEGA,  # [N m s/rad]
        armature=armature,  # [kg m^2]
    )


UNITREE_G1_CFG = ArticulationCfg(
    spawn=_spawn(G1_REL, 8, 4),  # Isaac Lab's G1 iterations
    init_state=ArticulationCfg.InitialStateCfg(
        pos=(0.0, 0.0, 0.76),  # [m] pelvis height: the knees-bent pose below has its soles ~3 mm above the ground
        joint_pos={
            ".*_hip_pitch_joint": -0.312,  # [rad]
            ".*_knee_joint": 0.669,
            ".*_ankle_pitch_joint": -0.363,
            ".*_elbow_joint": 0.6,
            ".*_shoulder_pitch_joint": 0.2,
            "left_shoulder_roll_joint": 0.2,
            "right_shoulder_roll_joint": -0.2,
        },
        joint_vel={".*": 0.0},  # [rad/s]
    ),
    soft_joint_pos_limit_factor=0.9,
    actuators={name: _g1_actuator(*motor) for name, motor in _G1_MOTORS.items()},
)
"""Unitree G1 (29 joints ``{left,right}_{hip_{pitch,roll,yaw},knee,ankle_{pitch,roll}}_joint``, ``waist_{yaw,roll,
pitch}_joint``, ``{left,right}_{shoulder_{pitch,roll,yaw},elbow,wrist_{roll,pitch,yaw}}_joint``; base body
``pelvis``; each sole is three capsules on its ``*_ankle_roll_link``) with implicit PD actuators."""

G1_ACTION_SCALE: dict[str, float] = {
    joint: 0.25 * effort / (armature * _OMEGA**2)
    for joints, armature, effort, _ in _G1_MOTORS.values()
    for joint in joints
}
"""Joint-position action scale [rad] per joint regex: a unit action asks for a quarter of the effort limit (mjlab's
rule for this model: 0.35-0.55 rad on the legs, 0.07 rad on the weak wrist pitch/yaw)."""
