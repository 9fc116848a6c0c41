"""Run in a subprocess by ``test_any_task_sim.py`` (Isaac Lab reads ``ISAACSIM_ASSET_ROOT`` at import): the same
open-loop actions on a task under ``newton_mjwarp`` and ``mujoco_cpu`` from the same seed (one JSON line with the
largest differences), or the user task under ``mujoco_cpu`` (``user``)."""

from __future__ import annotations

import json
import sys

import torch


def run(task: str, physics: str, num_envs: int, steps: int) -> dict[str, torch.Tensor | str]:
    from redline.envs.prepare import prepare_env
    from redline.envs.simulator import isaaclab_env
    from redline.options import RunOptions

    prepared = prepare_env(
        RunOptions(task=task, num_envs=num_envs, device="cpu", seed=7, overrides=(f"physics={physics}",))
    )
    out: dict[str, list[torch.Tensor]] = {"pos": [], "vel": [], "reward": [], "done": []}
    with isaaclab_env(prepared.task, prepared.env_cfg, "cpu") as env:
        u = env.unwrapped
        solver = type(u.sim.physics_manager._solver).__name__
        (robot,) = u.scene.articulations.values()
        env.reset()
        n_act = u.single_action_space.shape[0]
        ids = torch.arange(num_envs, dtype=torch.float32)
        for t in range(steps):
            phase = ids[:, None] + torch.arange(n_act)[None, :].float()
            action = 0.6 * torch.sin(0.15 * t + phase) + 0.4  # the bias drives carts out of bounds: episodes end
            _, reward, terminated, truncated, _ = env.step(action)
            out["pos"].append(robot.data.joint_pos.torch.clone())
            out["vel"].append(robot.data.joint_vel.torch.clone())
            out["reward"].append(reward.clone())
            out["done"].append((terminated | truncated).clone())
    return {"solver": solver, **{k: torch.stack(v) for k, v in out.items()}}


def main(task: str, num_envs: int, steps: int) -> None:
    warp = run(task, "newton_mjwarp", num_envs, steps)
    cpu = run(task, "mujoco_cpu", num_envs, steps)

    def diff(key: str) -> float:
        return float((cpu[key].float() - warp[key].float()).abs().max())  # type: ignore[union-attr]

    result = {
        "solvers": [warp["solver"], cpu["solver"]],
        "pos": diff("pos"),
        "vel": diff("vel"),
        "reward": diff("reward"),
        "same_dones": bool(torch.equal(cpu["done"], warp["done"])),  # type: ignore[arg-type]
        "dones": int(cpu["done"].sum()),  # type: ignore[union-attr]
        "moved": float((cpu["pos"] - cpu["pos"][:, :1]).abs().max()),  # type: ignore[index,operator]
    }
    print("PARITY " + json.dumps(result))


def user_task(num_envs: int, steps: int) -> None:
    """The user task of ``tests/physics/user_tasks`` under ``mujoco_cpu`` through redline's config path, zero
    actions: prints its solver, its MuJoCo-Warp ``njmax`` as carried over, and the env steps that ended episodes."""
    import tests.physics.user_tasks as user_tasks
    from redline.envs.prepare import prepare_env
    from redline.envs.simulator import isaaclab_env
    from redline.options import RunOptions

    request = RunOptions(task=user_tasks.TASK_ID, num_envs=num_envs, device="cpu", overrides=("physics=mujoco_cpu",))
    prepared = prepare_env(request)
    truncated_at, finite = [], True
    with isaaclab_env(prepared.task, prepared.env_cfg, "cpu") as env:
        u = env.unwrapped
        solver = type(u.sim.physics_manager._solver).__name__
        env.reset()
        for t in range(steps):
            obs, _, _, truncated, _ = env.step(torch.zeros(num_envs, 1))
            finite = finite and bool(torch.isfinite(obs["policy"]).all())
            if truncated.any():
                truncated_at.append(t)
    njmax = prepared.env_cfg.sim.physics.solver_cfg.njmax
    print("USER " + json.dumps({"solver": solver, "njmax": njmax, "truncated_at": truncated_at, "finite": finite}))


if __name__ == "__main__":
    if sys.argv[1] == "user":
        user_task(int(sys.argv[2]), int(sys.argv[3]))
    else:
        main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
