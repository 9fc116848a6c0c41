"""The rough task's terrain origins and terrain-levels curriculum on stand-in envs (no simulator): Isaac Lab's rule,
the draws from each env's own stream."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import torch

from redline.seeding import EnvStreams
from redline_tasks.velocity.mdp.terrain import seed_terrain_origins, terrain_levels_vel

ROWS, COLS = 6, 3


class _Scene(dict):
    """``scene["robot"]`` plus the attributes the terms read."""


def _env(num_envs: int, offset: int = 0, strategy: str = "per_env") -> Any:
    origins = torch.stack(
        torch.meshgrid(torch.arange(ROWS).float() * 8, torch.arange(COLS).float() * 8, indexing="ij"), -1
    )
    origins = torch.cat([origins, torch.zeros(ROWS, COLS, 1)], -1)  # (rows, cols, 3) [m]
    terrain = SimpleNamespace(
        terrain_origins=origins,
        terrain_levels=torch.zeros(num_envs, dtype=torch.long),
        terrain_types=torch.zeros(num_envs, dtype=torch.long),
        env_origins=torch.zeros(num_envs, 3),
        max_terrain_level=ROWS,
        cfg=SimpleNamespace(max_init_terrain_level=2, terrain_generator=SimpleNamespace(size=(8.0, 8.0))),
    )
    robot = SimpleNamespace(data=SimpleNamespace(root_pos_w=SimpleNamespace(torch=torch.zeros(num_envs, 3))))
    scene = _Scene(robot=robot)
    scene.terrain, scene.env_origins = terrain, terrain.env_origins
    streams = EnvStreams(strategy, 3, num_envs, "cpu", env_id_offset=offset)
    command = torch.zeros(num_envs, 3)
    return SimpleNamespace(
        scene=scene,
        streams=streams,
        num_envs=num_envs,
        device="cpu",
        max_episode_length_s=20.0,
        command=command,
        command_manager=SimpleNamespace(get_command=lambda name: command),
    )


def test_start_levels_and_columns_depend_on_the_global_id_only() -> None:
    one, a, b = _env(6), _env(2), _env(4, offset=2)  # envs 0-5 in one process, or split 2 + 4
    for env in (one, a, b):
        seed_terrain_origins(env, None)
    split = torch.cat([a.scene.terrain.terrain_levels, b.scene.terrain.terrain_levels])
    assert torch.equal(one.scene.terrain.terrain_levels, split)
    assert torch.equal(one.scene.terrain.terrain_types, torch.arange(6) % COLS)
    assert one.scene.terrain.terrain_levels.max() <= 2  # max_init_terrain_level
    terrain = one.scene.terrain
    assert torch.equal(terrain.env_origins, terrain.terrain_origins[terrain.terrain_levels, terrain.terrain_types])


def test_levels_move_by_isaac_labs_rule_and_the_top_level_draws_from_the_stream() -> None:
    env = _env(4)
    seed_terrain_origins(env, None)
    terrain = env.scene.terrain
    terrain.terrain_levels[:] = torch.tensor([1, 1, 1, ROWS - 1])
    terrain.env_origins[:] = terrain.terrain_origins[terrain.terrain_levels, terrain.terrain_types]
    walked = terrain.env_origins.clone()
    walked[:, 0] += torch.tensor([5.0, 1.0, 3.0, 5.0])  # [m]: > 4 moves up; < half the commanded distance down
    env.scene["robot"].data.root_pos_w.torch = walked
    env.command[:] = torch.tensor([[0.0, 0.0, 0.0], [0.5, 0.0, 0.0], [0.1, 0.0, 0.0], [0.0, 0.0, 0.0]])  # [m/s]
    env.streams.begin_episode()  # episode 0: the first reset follows no episode, nothing moves
    terrain_levels_vel(env, torch.arange(4))
    assert torch.equal(terrain.terrain_levels, torch.tensor([1, 1, 1, ROWS - 1]))
    env.streams.begin_episode()
    mean = terrain_levels_vel(env, torch.arange(4))
    levels = terrain.terrain_levels
    assert levels[:3].tolist() == [2, 0, 1]  # up; down (walked 1 m of 5 m asked); stays (3 m > half of 2 m)
    assert 0 <= levels[3] < ROWS  # solved the top level: a random one, drawn from env 3's stream
    again = _env(4)
    again.streams.begin_episode()
    again.streams.begin_episode()
    draw = int((again.streams.uniform(torch.tensor([3]), ())[0] * ROWS).long())
    assert levels[3] == draw
    assert mean == levels.float().mean()
    assert torch.equal(terrain.env_origins, terrain.terrain_origins[levels, terrain.terrain_types])
