"""Seeding strategies on the real tasks (Newton, CPU): partition invariance, common random numbers, shared."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from redline.envs import registry
from redline.envs.simulator import isaaclab_env

pytestmark = pytest.mark.sim

ActionFn = Callable[[int, torch.Tensor, int], torch.Tensor]


def _wave(t: int, global_ids: torch.Tensor, num_actions: int) -> torch.Tensor:
    """A deterministic action for each env that depends only on its global id and the step."""
    phase = global_ids[:, None].float() + torch.arange(num_actions)[None, :].float()
    return 0.8 * torch.sin(0.15 * t + phase)


def _observe(env: object) -> torch.Tensor:
    """The policy observation now (a direct env's ``_get_observations``, a manager-based env's manager, with noise)."""
    manager = getattr(env, "observation_manager", None)
    return manager.compute()["policy"] if manager is not None else env._get_observations()["policy"]  # type: ignore[attr-defined]


def _run(task: str, num_envs: int, strategy: str, reset_orders: list[list[int]], steps: int, act: ActionFn):
    """Episode-start observations after each manual reset, then observations of ``steps`` steps (envs 0-3)."""
    env_cfg, _ = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", [])
    env_cfg.scene.num_envs = num_envs
    env_cfg.seed = 7
    env_cfg.seeding.strategy = strategy
    with isaaclab_env(task, env_cfg, "cpu") as env:
        u = env.unwrapped
        env.reset()
        starts = [_observe(u)[:4].clone()]
        for order in reset_orders:
            u._reset_idx(torch.tensor(order))
            starts.append(_observe(u)[:4].clone())
        trajectory = []
        n_act = u.single_action_space.shape[0]
        for t in range(steps):
            obs = env.step(act(t, u.streams.global_ids, n_act))[0]["policy"]
            trajectory.append(obs[:4].clone())
        episodes = u.streams.episode[:4].clone()
    return torch.stack(starts), torch.stack(trajectory), episodes


@pytest.mark.parametrize(
    ("task", "steps"),
    [
        ("Redline-Cartpole", 120),
        ("Redline-Ant", 120),
        ("Redline-Velocity-Flat-Go1", 40),
        ("Redline-Velocity-Flat-G1", 30),
    ],
)
def test_per_env_is_partition_invariant_bitwise(task: str, steps: int) -> None:
    # 4 more episodes for envs 0-3, in different orders, alone or together with envs 4-7
    small = _run(task, 4, "per_env", [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1], [1, 3, 0, 2]], steps, _wave)
    big = _run(
        task, 8, "per_env", [[0, 1, 2, 3], [7, 3, 5, 2, 1, 0], [6, 2, 0, 4, 3, 1], [1, 5, 3, 7, 0, 2]], steps, _wave
    )
    assert torch.equal(small[0], big[0])  # 5 episode starts of envs 0-3, bitwise
    assert torch.equal(small[1], big[1])  # and their whole observation trajectories, bitwise
    assert torch.equal(small[2], big[2])
    assert not torch.equal(small[0][0], small[0][1])  # episodes do start from different states


def test_eval_gives_every_policy_the_same_episode_starts() -> None:
    def still(t: int, ids: torch.Tensor, n: int) -> torch.Tensor:
        return torch.zeros(len(ids), n)

    def shaky(t: int, ids: torch.Tensor, n: int) -> torch.Tensor:
        return torch.ones(len(ids), n) * (1.0 if t % 20 < 10 else -1.0)  # pushes carts out of bounds

    a = _run("Redline-Cartpole", 4, "eval", [[0, 1, 2, 3]] * 3, 60, still)
    b = _run("Redline-Cartpole", 4, "eval", [[3, 1, 0, 2]] * 3, 60, shaky)
    assert torch.equal(a[0], b[0])
    train = _run("Redline-Cartpole", 4, "per_env", [[0, 1, 2, 3]] * 3, 1, still)
    assert not torch.equal(a[0], train[0])  # evaluation starts are not the training ones


def test_shared_reproduces_stock_isaaclab_numbers() -> None:
    """Stock Isaac-Cartpole-Direct (pointed at the local USD files) and Redline-Cartpole with ``shared``."""
    from isaaclab.utils import replace

    def starts(task: str) -> torch.Tensor:
        env_cfg, _ = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", [])
        if task.startswith("Isaac-"):
            ours, _ = registry.load_cfgs("Redline-Cartpole", "rsl_rl_cfg_entry_point", [])
            env_cfg.scene = replace(env_cfg.scene, ground=ours.scene.ground, cartpole=ours.scene.cartpole)
        else:
            env_cfg.seeding.strategy = "shared"
        env_cfg.scene.num_envs = 8
        env_cfg.seed = 11
        with isaaclab_env(task, env_cfg, "cpu") as env:
            env.reset()
            env.unwrapped._reset_idx(torch.tensor([5, 2]))
            return env.unwrapped._get_observations()["policy"].clone()

    from redline.assets import ensure_asset_root

    ensure_asset_root()  # the stock env class does not build them
    assert torch.equal(starts("Redline-Cartpole"), starts("Isaac-Cartpole-Direct"))
