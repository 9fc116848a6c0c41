"""MDP terms of redline's velocity task: Isaac Lab's deterministic terms (observations, rewards, terminations,
actions) and redline's randomised ones, which draw from the env's per-env streams (``env.streams``, a
:class:`redline.seeding.EnvStreams`) where Isaac Lab's draw from torch's global generator."""

from isaaclab.envs.mdp import (  # noqa: F401
    JointPositionActionCfg,
    UniformVelocityCommandCfg,
    action_rate_l2,
    ang_vel_xy_l2,
    base_ang_vel,
    base_lin_vel,
    flat_orientation_l2,
    generated_commands,
    illegal_contact,
    is_terminated,
    joint_acc_l2,
    joint_deviation_l1,
    joint_pos_limits,
    joint_pos_rel,
    joint_torques_l2,
    joint_vel_rel,
    last_action,
    lin_vel_z_l2,
    projected_gravity,
    time_out,
    track_ang_vel_z_exp,
    track_lin_vel_xy_exp,
    undesired_contacts,
)
from isaaclab_tasks.core.velocity.mdp import (  # noqa: F401
    feet_air_time,
    feet_air_time_positive_biped,
    feet_slide,
    track_ang_vel_z_world_exp,
    track_lin_vel_xy_yaw_frame_exp,
)

from .commands import SeededUniformVelocityCommand, SeededUniformVelocityCommandCfg  # noqa: F401
from .events import (  # noqa: F401
    push_by_setting_velocity,
    randomize_base_mass,
    randomize_friction,
    reset_joints_by_scale,
    reset_root_state_uniform,
)
from .noise import noisy, noisy_term  # noqa: F401
