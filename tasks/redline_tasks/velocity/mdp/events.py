"""Event terms that draw from the env's per-env streams (``env.streams``) instead of torch's global generator.

Each mirrors the Isaac Lab term of the same name (same parameters, same effect). With the ``per_env`` and ``eval``
strategies env ``g``'s draws depend only on (seed, g, episode, draw index); with ``shared`` they come from torch's
global generator, as in Isaac Lab. Startup draws (mass, friction) fall in episode -1, before the first reset.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import torch
from isaaclab.envs.mdp import randomize_rigid_body_material
from isaaclab.managers import EventTermCfg, ManagerTermBase, SceneEntityCfg
from isaaclab.utils import math as math_utils
from newton.solvers import SolverMuJoCo

from redline.seeding import EnvStreams, Strategy

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedEnv

AXES = ("x", "y", "z", "roll", "pitch", "yaw")
"""Keys of the pose and velocity range dicts, in the order of Isaac Lab's ``sample_uniform_from_ranges``."""
ROBOT = SceneEntityCfg("robot")
"""Default asset of the terms (Isaac Lab's managers deep-copy parameter defaults, so sharing it is safe)."""


def env_index(env: ManagerBasedEnv, env_ids: torch.Tensor | slice | None) -> torch.Tensor:
    """``env_ids`` as a ``(n,)`` long tensor on the env's device (None or a slice: those envs)."""
    if env_ids is None or isinstance(env_ids, slice):
        return torch.arange(env.num_envs, device=env.device)[env_ids or slice(None)]
    return torch.as_tensor(env_ids, dtype=torch.long, device=env.device)


def streams_of(env: ManagerBasedEnv) -> EnvStreams:
    """The env's per-env streams (a redline env builds them before its managers)."""
    return env.streams  # type: ignore[attr-defined]


def _bounds(ranges: dict[str, tuple[float, float]], device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor]:
    """``(low, high)`` of shape ``(6,)`` over :data:`AXES`; a missing axis is (0, 0)."""
    pairs = torch.tensor([ranges.get(axis, (0.0, 0.0)) for axis in AXES], device=device)
    return pairs[:, 0], pairs[:, 1]


def reset_root_state_uniform(
    env: ManagerBasedEnv,
    env_ids: torch.Tensor | slice,
    pose_range: dict[str, tuple[float, float]],
    velocity_range: dict[str, tuple[float, float]],
    asset_cfg: SceneEntityCfg = ROBOT,
) -> None:
    """Default root pose offset by a uniform ``pose_range`` draw ([m], [rad]) and root velocity offset by a uniform
    ``velocity_range`` draw ([m/s], [rad/s]); one ``(2, 6)`` draw per env."""
    asset: Any = env.scene[asset_cfg.name]
    ids = env_index(env, env_ids)
    pose_low, pose_high = _bounds(pose_range, env.device)
    vel_low, vel_high = _bounds(velocity_range, env.device)
    draws = streams_of(env).uniform(
        ids, (2, 6), torch.stack((pose_low, vel_low)), torch.stack((pose_high, vel_high))
    )  # (n, [pose, velocity], 6)
    default_pose = asset.data.default_root_pose.torch[ids]  # (n, 7): position [m], quaternion (w, x, y, z)
    positions = default_pose[:, :3] + env.scene.env_origins[ids] + draws[:, 0, :3]
    delta = math_utils.quat_from_euler_xyz(draws[:, 0, 3], draws[:, 0, 4], draws[:, 0, 5])
    orientations = math_utils.quat_mul(default_pose[:, 3:7], delta)
    velocities = asset.data.default_root_vel.torch[ids] + draws[:, 1]
    asset.write_root_pose_to_sim_index(root_pose=torch.cat([positions, orientations], dim=-1), env_ids=ids)
    asset.write_root_velocity_to_sim_index(root_velocity=velocities, env_ids=ids)


def reset_joints_by_scale(
    env: ManagerBasedEnv,
    env_ids: torch.Tensor | slice,
    position_range: tuple[float, float],
    velocity_range: tuple[float, float],
    asset_cfg: SceneEntityCfg = ROBOT,
) -> None:
    """Default joint positions and velocities scaled by uniform factors from ``position_range`` and
    ``velocity_range``, clamped to the soft limits; one ``(2, num_joints)`` draw per env."""
    asset: Any = env.scene[asset_cfg.name]
    ids = env_index(env, env_ids)
    joints = torch.arange(asset.num_joints, device=env.device)[asset_cfg.joint_ids]
    low = torch.tensor([[position_range[0]], [velocity_range[0]]], device=env.device)
    high = torch.tensor([[position_range[1]], [velocity_range[1]]], device=env.device)
    scale = streams_of(env).uniform(ids, (2, len(joints)), low, high)  # (n, [position, velocity], joints)
    rows = ids[:, None]
    joint_pos = asset.data.default_joint_pos.torch[rows, joints] * scale[:, 0]  # [rad]
    joint_vel = asset.data.default_joint_vel.torch[rows, joints] * scale[:, 1]  # [rad/s]
    limits = asset.data.soft_joint_pos_limits.torch[rows, joints]
    joint_pos = joint_pos.clamp_(limits[..., 0], limits[..., 1])
    vel_limits = asset.data.soft_joint_vel_limits.torch[rows, joints]
    joint_vel = joint_vel.clamp_(-vel_limits, vel_limits)
    asset.write_joint_position_to_sim_index(position=joint_pos, joint_ids=joints, env_ids=ids)
    asset.write_joint_velocity_to_sim_index(velocity=joint_vel, joint_ids=joints, env_ids=ids)


class push_by_setting_velocity(ManagerTermBase):
    """Push the robot by adding a uniform ``velocity_range`` draw to its root velocity, at per-env times.

    Isaac Lab draws an interval term's firing times from torch's global generator, so this term keeps its own
    timers: register it with ``mode="interval"`` and ``interval_range_s=(0.0, 0.0)`` (checked every env step) and
    give the time between pushes [s] as the ``interval_range_s`` parameter; the first push of an episode and each
    next one are drawn from the env's stream.
    """

    def __init__(self, cfg: EventTermCfg, env: ManagerBasedEnv) -> None:
        super().__init__(cfg, env)
        self.time_left = torch.zeros(env.num_envs, device=env.device)
        """``(num_envs,)`` [s] until each env's next push."""

    def reset(self, env_ids: torch.Tensor | slice | None = None) -> None:
        ids = env_index(self._env, env_ids)
        self.time_left[ids] = streams_of(self._env).uniform(ids, (), *self.cfg.params["interval_range_s"])

    def __call__(
        self,
        env: ManagerBasedEnv,
        env_ids: torch.Tensor | slice | None,
        interval_range_s: tuple[float, float],
        velocity_range: dict[str, tuple[float, float]],
        asset_cfg: SceneEntityCfg = ROBOT,
    ) -> None:
        self.time_left -= env.step_dt
        due = (self.time_left <= 0.0).nonzero().flatten()
        if len(due) == 0:
            return
        asset: Any = env.scene[asset_cfg.name]
        low, high = _bounds(velocity_range, env.device)
        streams = streams_of(env)
        velocity = asset.data.root_vel_w.torch[due] + streams.uniform(due, (6,), low, high)  # [m/s], [rad/s]
        asset.write_root_velocity_to_sim_index(root_velocity=velocity, env_ids=due)
        self.time_left[due] = streams.uniform(due, (), *interval_range_s)


def randomize_base_mass(
    env: ManagerBasedEnv,
    env_ids: torch.Tensor | slice | None,
    scale_range: tuple[float, float],
    asset_cfg: SceneEntityCfg = ROBOT,
) -> None:
    """Scale the masses [kg] and inertias of ``asset_cfg``'s bodies by a log-uniform factor in ``scale_range``
    (one per env and body). Use it at ``startup``: it scales the current values."""
    asset: Any = env.scene[asset_cfg.name]
    ids = env_index(env, env_ids)
    bodies = torch.arange(asset.num_bodies, device=env.device)[asset_cfg.body_ids]
    log_low, log_high = math.log(scale_range[0]), math.log(scale_range[1])
    scale = torch.exp(streams_of(env).uniform(ids, (len(bodies),), log_low, log_high))  # (n, bodies)
    rows = ids[:, None]
    masses = asset.data.body_mass.torch[rows, bodies] * scale
    inertias = asset.data.body_inertia.torch[rows, bodies] * scale[..., None]  # (n, bodies, 9)
    asset.set_masses_index(masses=masses, body_ids=bodies, env_ids=ids)
    asset.set_inertias_index(inertias=inertias, body_ids=bodies, env_ids=ids)


class randomize_friction(randomize_rigid_body_material):
    """One friction coefficient per env, uniform in ``static_friction_range``, for all of the asset's shapes.

    On Newton (MuJoCo-Warp) the coefficient comes from the env's stream and is written to Newton's per-shape
    friction; on other physics backends, with Newton's Kamino solver or with the ``shared`` strategy this is Isaac
    Lab's ``randomize_rigid_body_material`` (torch's global generator). Restitution is left as it is.
    """

    def __call__(
        self,
        env: ManagerBasedEnv,
        env_ids: torch.Tensor | slice | None,
        static_friction_range: tuple[float, float],
        dynamic_friction_range: tuple[float, float],
        restitution_range: tuple[float, float],
        num_buckets: int,
        asset_cfg: SceneEntityCfg,
        make_consistent: bool = False,
    ) -> None:
        impl: Any = self._impl
        binding = getattr(impl, "_friction_binding", None)
        solver = getattr(getattr(impl, "_newton_manager", None), "_solver", None)
        if binding is None or not isinstance(solver, SolverMuJoCo) or streams_of(env).strategy is Strategy.SHARED:
            super().__call__(
                env,
                env_ids,
                static_friction_range,
                dynamic_friction_range,
                restitution_range,
                num_buckets,
                asset_cfg,
                make_consistent,
            )
            return
        # heavy: Warp/Newton, imported only once the simulator runs
        import warp as wp
        from newton import ModelFlags

        ids = env_index(env, env_ids)
        friction = streams_of(env).uniform(ids, (1,), *static_friction_range)  # (n, 1)
        shapes = impl._shape_indices.to(env.device)
        wp.to_torch(binding)[ids[:, None], shapes] = friction.expand(-1, len(shapes))
        impl._newton_manager.add_model_change(ModelFlags.SHAPE_PROPERTIES)
