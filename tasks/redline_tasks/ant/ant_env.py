"""Redline-Ant environment: Isaac Lab's direct Ant on local assets, with per-env seeded resets."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from isaaclab_tasks.core.locomotion.ant.ant_direct_env import AntEnv as IsaacAntEnv

from ..common import RedlineEnvMixin, begin_episodes
from .ant_env_cfg import AntEnvCfg


class AntEnv(RedlineEnvMixin, IsaacAntEnv):
    """Isaac Lab's Ant environment; see :class:`AntEnvCfg`."""

    cfg: AntEnvCfg

    run_state_buffers = ("actions", "potentials", "prev_potentials")
    """Task buffers a checkpoint's run state holds (:mod:`redline.run_state.parts`): the last actions and the
    progress potentials (each step's reward is the change of the potential; the rest of Isaac Lab's intermediate
    values are recomputed from the simulator's state before they are read)."""

    def _reset_idx(self, env_ids: Sequence[int] | None):
        super()._reset_idx(env_ids)  # Isaac Lab's reset: root pose, joint state drawn from torch's global stream
        ids = (
            torch.arange(self.num_envs, device=self.device)
            if env_ids is None
            else torch.as_tensor(env_ids, device=self.device)
        )
        if not begin_episodes(self.streams, ids):
            return
        c = self.cfg
        low = torch.tensor([[c.initial_joint_pos_range[0]], [c.initial_joint_vel_range[0]]], device=self.device)
        high = torch.tensor([[c.initial_joint_pos_range[1]], [c.initial_joint_vel_range[1]]], device=self.device)
        offsets = self.streams.uniform(ids, (2, self.robot.num_joints), low, high)  # (n, [pos, vel], joints)
        joint_pos = self.robot.data.default_joint_pos.torch[ids] + offsets[:, 0]  # [rad]
        joint_vel = self.robot.data.default_joint_vel.torch[ids] + offsets[:, 1]  # [rad/s]
        limits = self.robot.data.soft_joint_pos_limits.torch[ids]
        joint_pos = joint_pos.clamp_(limits[..., 0], limits[..., 1])
        vel_limits = self.robot.data.soft_joint_vel_limits.torch[ids]
        joint_vel = joint_vel.clamp_(-vel_limits, vel_limits)
        self.robot.write_joint_state_to_sim_index(position=joint_pos, velocity=joint_vel, env_ids=ids)
        self._compute_intermediate_values()
