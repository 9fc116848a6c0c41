"""Every registered task builds on the real simulator (Newton, CPU), offline, and steps with finite values."""

from __future__ import annotations

import pytest
import torch

from redline.envs import registry
from redline.seeding import EnvStreams

pytestmark = pytest.mark.sim


SIZES = {
    "Redline-Velocity-Flat-Go1": (16, 500),
    "Redline-Velocity-Flat-Go1-Play": (16, 100),
    "Redline-Velocity-Flat-G1": (16, 40),  # MuJoCo-Warp on the CPU: ~1 s per G1 env step, whatever the env count
    "Redline-Velocity-Flat-G1-Play": (8, 20),
    "Redline-Velocity-Rough-Go1": (8, 60),  # the full 10 x 10 terrain: most of the time is building it
    "Redline-Velocity-Rough-Go1-Play": (8, 30),
}
"""(envs, steps) where the default 64 x 200 would be slow: a Go1 env step costs ~10x a Cartpole one on the CPU."""


@pytest.mark.parametrize("task", registry.redline_task_ids())
def test_builds_offline_and_steps_random_actions(task: str, no_network: list) -> None:
    from redline.envs.simulator import isaaclab_env

    num_envs, steps = SIZES.get(task, (64, 200))
    env_cfg, _ = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", [])
    env_cfg.scene.num_envs = num_envs
    env_cfg.seed = 0
    with isaaclab_env(task, env_cfg, "cpu") as env:
        assert isinstance(env.unwrapped.streams, EnvStreams)
        assert _live_objects(env.unwrapped.cfg) == []  # the streams reach the terms through the env, not the config
        num_actions = env.unwrapped.single_action_space.shape[0]
        obs, _ = env.reset()
        rewards = []
        generator = torch.Generator().manual_seed(0)
        for _ in range(steps):
            actions = torch.rand(num_envs, num_actions, generator=generator) * 2 - 1
            obs, reward, _, _, _ = env.step(actions)
            for name, value in obs.items():
                assert value.shape[0] == num_envs and torch.isfinite(value).all(), name
            rewards.append(reward)
        expected = (
            getattr(env_cfg, "observation_space", None) or env.unwrapped.observation_manager.group_obs_dim["policy"][0]
        )
        assert obs["policy"].shape == (num_envs, expected)
        if task.startswith("Redline-Velocity-Flat-Go1"):  # the symmetry agent's mirror knows the robot's joints
            _mirror_is_an_involution(env, obs)
    assert torch.isfinite(torch.stack(rewards)).all()
    assert torch.stack(rewards).std() > 0  # the physics moved and the rewards respond to it
    assert no_network == []  # nothing even tried to reach the asset server


def _mirror_is_an_involution(env: object, obs: object) -> None:
    from tensordict import TensorDict

    from redline_tasks.velocity.mdp.symmetry import go1_left_right, mirror_policy

    n = obs["policy"].shape[0]  # type: ignore[index]
    obs = TensorDict(dict(obs), batch_size=[n])  # type: ignore[call-overload]  (as rsl_rl's runner passes it)
    augmented, _ = go1_left_right(env, obs)
    names = tuple(env.unwrapped.scene["robot"].joint_names)  # type: ignore[attr-defined]
    assert augmented is not None and augmented.batch_size[0] == 2 * n
    assert torch.equal(mirror_policy(augmented["policy"][n:], names), obs["policy"])  # type: ignore[index]


def _live_objects(node: object, path: str = "cfg", depth: int = 0) -> list[str]:
    """Paths of every per-env stream (or object holding one) inside a config tree."""
    if isinstance(node, EnvStreams) or (hasattr(node, "streams") and isinstance(node.streams, EnvStreams)):
        return [path]
    if depth > 12:
        return []
    if isinstance(node, dict):
        children = node.items()
    elif isinstance(node, list | tuple):
        children = enumerate(node)
    elif hasattr(node, "__dataclass_fields__"):
        children = ((name, getattr(node, name, None)) for name in node.__dataclass_fields__)
    else:
        return []
    return [p for key, child in children for p in _live_objects(child, f"{path}.{key}", depth + 1)]
