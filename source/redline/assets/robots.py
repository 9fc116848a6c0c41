"""Articulation configs of the robots in the local asset root (imports Isaac Lab; used by the task configs only)."""

from __future__ import annotations

import isaaclab.sim as sim_utils
from isaaclab.actuators import ImplicitActuatorCfg
from isaaclab.assets.articulation import ArticulationCfg
from isaaclab_newton.sim.schemas import NewtonArticulationCfg
from isaaclab_physx.sim.schemas import PhysxArticulationCfg

from redline.assets import GO1_REL, asset_path

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
    spawn=sim_utils.UsdFileCfg(
        usd_path=asset_path(GO1_REL),
        activate_contact_sensors=True,
        articulation_props=[
            PhysxArticulationCfg(
                enabled_self_collisions=False, solver_position_iteration_count=4, solver_velocity_iteration_count=0
            ),
            NewtonArticulationCfg(self_collision_enabled=False),
        ],
    ),
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
