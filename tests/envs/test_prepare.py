"""prepare_env: the one place where a command's options reach a task's configs (no simulator is started)."""

from __future__ import annotations

import pytest

from redline.envs.prepare import CPU_PHYSICS, physics_overrides, physics_preset, prepare_env
from redline.errors import UserError
from redline.options import ALGORITHMS, RunOptions


def test_train_request_sets_both_devices_seeds_and_the_cpu_default() -> None:
    p = prepare_env(RunOptions(task="Redline-Cartpole", device="cpu", seed=7))
    assert p.task == "Redline-Cartpole" and p.device == "cpu"
    assert p.env_cfg.sim.device == "cpu" and p.agent_cfg.device == "cpu"  # both of Isaac Lab's CPU traps
    assert p.env_cfg.scene.num_envs == p.env_cfg.cpu_num_envs
    assert p.env_cfg.seed == 7 and p.env_cfg.seeding.seed == 7 and p.agent_cfg.seed == 7
    assert p.env_cfg.seeding.env_id_offset == 0


def test_play_request_uses_the_twin_and_seeds_its_streams() -> None:
    p = prepare_env(RunOptions(task="Redline-Cartpole", device="cpu", seed=3), play=True)
    assert p.task == "Redline-Cartpole-Play"
    assert p.env_cfg.seeding.strategy == "eval" and p.env_cfg.seeding.seed == 3  # --seed reaches play's streams
    assert p.env_cfg.scene.num_envs == 16


def test_a_rank_gets_its_global_env_ids_and_own_env_seed() -> None:
    p = prepare_env(RunOptions(task="Redline-Cartpole", num_envs=32, device="cpu", seed=5), rank=2)
    assert p.env_cfg.scene.num_envs == 32 and p.env_cfg.seeding.env_id_offset == 64
    assert p.env_cfg.seed == 7 and p.env_cfg.seeding.seed == 5  # Isaac Lab's generator per rank, streams shared


def test_num_envs_precedence() -> None:
    override = prepare_env(RunOptions(task="Redline-Cartpole", device="cpu", overrides=("env.scene.num_envs=8",)))
    assert override.env_cfg.scene.num_envs == 8  # an override is not replaced by the CPU default
    video = prepare_env(RunOptions(task="Redline-Cartpole", device="cpu"), play=True, default_num_envs=4)
    assert video.env_cfg.scene.num_envs == 4
    explicit = prepare_env(RunOptions(task="Redline-Cartpole", num_envs=12, device="cpu"), default_num_envs=4)
    assert explicit.env_cfg.scene.num_envs == 12


def test_an_agent_config_may_ask_for_its_own_cpu_env_count() -> None:
    sac = ALGORITHMS["sac"]
    asked = prepare_env(
        RunOptions(task="Redline-Cartpole", device="cpu", overrides=("agent.cpu_num_envs=24",)), agent_entry_point=sac
    )
    assert asked.env_cfg.scene.num_envs == 24  # the agent's count replaces the task's CPU default
    given = prepare_env(
        RunOptions(task="Redline-Cartpole", num_envs=12, device="cpu", overrides=("agent.cpu_num_envs=24",)),
        agent_entry_point=sac,
    )
    assert given.env_cfg.scene.num_envs == 12  # the command's count wins
    with pytest.raises(UserError, match=r"^agent\.cpu_num_envs: must be"):
        prepare_env(
            RunOptions(task="Redline-Cartpole", device="cpu", overrides=("agent.cpu_num_envs=0",)),
            agent_entry_point=sac,
        )


def test_every_call_returns_fresh_configs() -> None:
    a = prepare_env(RunOptions(task="Redline-Cartpole", device="cpu"))
    a.env_cfg.scene.num_envs = 1
    a.agent_cfg.max_iterations = 1
    b = prepare_env(RunOptions(task="Redline-Cartpole", device="cpu"))
    assert b.env_cfg.scene.num_envs != 1 and b.agent_cfg.max_iterations != 1


def test_bad_requests_name_the_field() -> None:
    with pytest.raises(UserError, match="--task: unknown task"):
        prepare_env(RunOptions(task="Redline-Nope", device="cpu"))
    with pytest.raises(UserError, match="unknown strategy"):
        prepare_env(RunOptions(task="Redline-Cartpole", device="cpu", seeding="random"))


def test_the_cpu_gets_mujoco_c_unless_a_preset_is_chosen() -> None:
    cpu = prepare_env(RunOptions(task="Redline-Cartpole", device="cpu"))
    assert type(cpu.env_cfg.sim.physics.solver_cfg).__name__ == "MuJoCoCPUSolverCfg"
    warp = prepare_env(RunOptions(task="Redline-Cartpole", device="cpu", overrides=("physics=newton_mjwarp",)))
    assert type(warp.env_cfg.sim.physics.solver_cfg).__name__ == "MJWarpSolverCfg"  # the user's choice wins
    assert physics_overrides("Redline-Ant", "cpu", ()) == [f"physics={CPU_PHYSICS}"]
    assert physics_overrides("Redline-Ant", "cuda:0", ()) == []  # a GPU keeps MuJoCo-Warp
    assert physics_overrides("Isaac-Cartpole-Direct", "cpu", ()) == []  # stock tasks have no such preset
    with pytest.raises(UserError, match="physics=mujoco_cpu: runs on the CPU only"):
        physics_overrides("Redline-Ant", "cuda:0", ("physics=mujoco_cpu",))


def test_the_physics_preset_is_the_chosen_one_the_cpu_default_or_the_tasks_own() -> None:
    assert physics_preset("Redline-Cartpole", "cpu", ()) == CPU_PHYSICS  # redline's task on the CPU
    assert physics_preset("Redline-Cartpole", "cuda:0", ()) == "newton_mjwarp"  # the task's own default
    assert physics_preset("Redline-Cartpole", "cuda:0", ("physics=isaacsim_physx",)) == "isaacsim_physx"
