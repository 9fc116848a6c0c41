"""Terrain origins and the terrain-levels curriculum drawn from the env's per-env streams.

Isaac Lab's :class:`~isaaclab.terrains.TerrainImporter` gives env ``i`` the terrain column
``floor(i / (num_envs / num_cols))`` and a start level from ``torch.randint`` (torch's global generator), and its
``update_env_origins`` sends an env that solved the last level to a random one, again from the global generator. So
an env's terrain depends on how many envs the process holds and on every other draw made before it. Here (``per_env``
and ``eval`` strategies) env ``g`` (global id) walks column ``g mod num_cols``, starts at a level drawn from its own
stream at startup (episode -1), and the random level after the last one is drawn from its stream at the reset that
needs it; with ``shared`` Isaac Lab's importer does it all, as in stock Isaac Lab.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from isaaclab.managers import SceneEntityCfg

from redline.seeding import Strategy

from .events import ROBOT, env_index, streams_of

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedEnv, ManagerBasedRLEnv


def _levels(draws: torch.Tensor, count: int) -> torch.Tensor:
    """Uniform integers in ``[0, count)`` from uniform floats in [0, 1) (long tensor of the draws' shape)."""
    return (draws * count).long().clamp_(max=count - 1)


def seed_terrain_origins(env: ManagerBasedEnv, env_ids: torch.Tensor | slice | None) -> None:
    """Startup event: each env's terrain column (its global id modulo the columns) and start level (uniform in
    ``[0, max_init_terrain_level]``, one draw from its stream), and the env origin they give. Does nothing with the
    ``shared`` strategy (Isaac Lab's importer drew them) or on a terrain without sub-terrain origins."""
    terrain: Any = env.scene.terrain
    streams = streams_of(env)
    if terrain.terrain_origins is None or streams.strategy is Strategy.SHARED:
        return
    ids = env_index(env, env_ids)
    num_rows, num_cols = terrain.terrain_origins.shape[:2]
    max_init = terrain.cfg.max_init_terrain_level
    max_init = num_rows - 1 if max_init is None else min(max_init, num_rows - 1)
    draws = streams.uniform(ids, ())
    terrain.terrain_levels[ids] = _levels(draws, max_init + 1).to(terrain.terrain_levels.device)
    terrain.terrain_types[ids] = (streams.global_ids[ids] % num_cols).to(terrain.terrain_types.device)
    terrain.env_origins[ids] = terrain.terrain_origins[terrain.terrain_levels[ids], terrain.terrain_types[ids]]


def terrain_levels_vel(
    env: ManagerBasedRLEnv, env_ids: torch.Tensor, asset_cfg: SceneEntityCfg = ROBOT
) -> torch.Tensor:
    """Isaac Lab's ``terrain_levels_vel`` (same rule) with the random level after the last one drawn from the env's
    stream: an env that walked more than half a sub-terrain's length in its episode moves a level up, one that walked
    less than half of what its command asked moves a level down; past the last level it goes to a uniform level
    below it. Each resetting env makes one draw (used or not), the first of its new episode. Unlike Isaac Lab's term,
    the first reset (no episode walked yet, the robot still at its spawn point) moves no env. Returns the mean level.
    """
    asset: Any = env.scene[asset_cfg.name]
    terrain: Any = env.scene.terrain
    ids = env_index(env, env_ids)
    command = env.command_manager.get_command("base_velocity")
    distance = torch.linalg.norm(asset.data.root_pos_w.torch[ids, :2] - env.scene.env_origins[ids, :2], dim=1)  # [m]
    move_up = distance > terrain.cfg.terrain_generator.size[0] / 2
    move_down = distance < torch.linalg.norm(command[ids, :2], dim=1) * env.max_episode_length_s * 0.5
    move_down *= ~move_up
    streams = streams_of(env)
    walked = streams.episode[ids] > 0  # the first reset follows no episode: the robots stand where they spawned
    move_up &= walked
    move_down &= walked
    if streams.strategy is Strategy.SHARED:
        terrain.update_env_origins(ids, move_up, move_down)
    elif terrain.terrain_origins is not None:
        levels = terrain.terrain_levels[ids] + move_up.long() - move_down.long()
        top = terrain.max_terrain_level
        random_level = _levels(streams.uniform(ids, ()), top).to(levels.device)
        terrain.terrain_levels[ids] = torch.where(levels >= top, random_level, levels.clamp(min=0))
        terrain.env_origins[ids] = terrain.terrain_origins[terrain.terrain_levels[ids], terrain.terrain_types[ids]]
    return torch.mean(terrain.terrain_levels.float())
