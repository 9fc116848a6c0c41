"""Isaac Lab's uniform velocity command, resampled from the env's per-env streams."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from isaaclab.envs.mdp import UniformVelocityCommand, UniformVelocityCommandCfg
from isaaclab.utils import configclass

from .events import env_index, streams_of


class SeededUniformVelocityCommand(UniformVelocityCommand):
    """:class:`UniformVelocityCommand` whose resampling time, velocities, heading and standing/heading flags come
    from one ``(7,)`` draw per env of the env's stream (Isaac Lab draws them from torch's global generator)."""

    cfg: SeededUniformVelocityCommandCfg

    def _resample(self, env_ids: Sequence[int] | torch.Tensor | slice) -> None:
        ids = env_index(self._env, env_ids)  # type: ignore[arg-type]
        if len(ids) == 0:
            return
        c = self.cfg
        r = c.ranges
        bounds = torch.tensor(
            [
                c.resampling_time_range,  # [s]
                r.lin_vel_x,  # [m/s]
                r.lin_vel_y,  # [m/s]
                r.ang_vel_z,  # [rad/s]
                r.heading if r.heading is not None else (0.0, 0.0),  # [rad]
                (0.0, 1.0),  # heading-env coin
                (0.0, 1.0),  # standing-env coin
            ],
            device=self.device,
        )
        u = streams_of(self._env).uniform(ids, (7,), bounds[:, 0], bounds[:, 1])  # (n, 7)
        self.time_left[ids] = u[:, 0]
        self.vel_command_b[ids] = u[:, 1:4]
        if c.heading_command:
            self.heading_target[ids] = u[:, 4]
            self.is_heading_env[ids] = u[:, 5] <= c.rel_heading_envs
        self.is_standing_env[ids] = u[:, 6] <= c.rel_standing_envs
        self.command_counter[ids] += 1


@configclass
class SeededUniformVelocityCommandCfg(UniformVelocityCommandCfg):
    """:class:`UniformVelocityCommandCfg` drawing from the env's per-env streams."""

    class_type: type = SeededUniformVelocityCommand
