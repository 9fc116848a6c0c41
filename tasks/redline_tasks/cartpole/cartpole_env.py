"""Redline-Cartpole environment: Isaac Lab's direct cartpole on local assets, with per-env seeded resets."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from isaaclab_tasks.core.cartpole.cartpole_direct_env import CartpoleEnv as IsaacCartpoleEnv

from ..common import RedlineEnvMixin, begin_episodes
from .cartpole_env_cfg import CartpoleEnvCfg


class CartpoleEnv(RedlineEnvMixin, IsaacCartpoleEnv):
    """Isaac Lab's cartpole environment; see :class:`CartpoleEnvCfg`."""

    cfg: CartpoleEnvCfg

    run_state_buffers = ("actions",)
    """Task buffers a checkpoint's run state holds (:mod:`redline.run_state.parts`): the last actions."""

    def __init__(self, cfg: CartpoleEnvCfg, render_mode: str | None = None, **kwargs):
        super().__init__(cfg, render_mode, **kwargs)
        dof_ids = torch.cat((self._cart_dof_idx, self._pole_dof_idx))
        self._reset_dof_ids = dof_ids  # (2,) cart, pole
        c = self.cfg
        self._reset_low = torch.tensor(  # (2, 2) [pos, vel] x [cart, pole] lower bounds [m, m/s, rad, rad/s]
            [
                [c.initial_cart_position_range[0], c.initial_pole_angle_range[0]],
                [c.initial_cart_velocity_range[0], c.initial_pole_velocity_range[0]],
            ],
            device=self.device,
        )
        self._reset_high = torch.tensor(
            [
                [c.initial_cart_position_range[1], c.initial_pole_angle_range[1]],
                [c.initial_cart_velocity_range[1], c.initial_pole_velocity_range[1]],
            ],
            device=self.device,
        )

    def _reset_idx(self, env_ids: Sequence[int] | None):
        super()._reset_idx(env_ids)  # Isaac Lab's reset: root pose, joint state drawn from torch's global stream
        ids = self.cartpole._ALL_INDICES if env_ids is None else torch.as_tensor(env_ids, device=self.device)
        if not begin_episodes(self.streams, ids):
            return
        offsets = self.streams.uniform(ids, (2, 2), self._reset_low, self._reset_high)  # (n, [pos, vel], [cart, pole])
        dofs = self._reset_dof_ids
        joint_pos = self.cartpole.data.default_joint_pos.torch[ids].clone()
        joint_vel = self.cartpole.data.default_joint_vel.torch[ids].clone()
        joint_pos[:, dofs] += offsets[:, 0]
        joint_vel[:, dofs] += offsets[:, 1]
        limits = self.cartpole.data.soft_joint_pos_limits.torch[ids]
        joint_pos = joint_pos.clamp_(limits[..., 0], limits[..., 1])
        vel_limits = self.cartpole.data.soft_joint_vel_limits.torch[ids]
        joint_vel = joint_vel.clamp_(-vel_limits, vel_limits)
        self.joint_pos[ids] = joint_pos
        self.joint_vel[ids] = joint_vel
        self.cartpole.write_joint_position_to_sim_index(position=joint_pos, env_ids=ids)
        self.cartpole.write_joint_velocity_to_sim_index(velocity=joint_vel, env_ids=ids)
