"""``physics=mujoco_cpu`` on any Isaac Lab task (no simulator): the offer in a config tree, the registry rewrite,
the post-import hook, Isaac Lab's stock tasks and a user's task resolving it, the refusals."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import gymnasium as gym
import pytest
import torch
from isaaclab_newton.physics import MJWarpSolverCfg
from isaaclab_tasks.utils import resolve_presets, resolve_task_config

from redline.envs import registry
from redline.errors import UserError
from redline.physics.after_import import after_import
from redline.physics.any_task import ORIGINAL_KEY, offer_on_registered_tasks
from redline.physics.mujoco_cpu_cfg import MuJoCoCPUSolverCfg
from redline.physics.offer import offer_mujoco_cpu
from redline.physics.support import check_supported

STOCK = ["Isaac-Cartpole-Direct", "Isaac-Ant-Direct", "Isaac-Cartpole", "Isaac-Ant"]


def _user_cfg():
    from tests.physics.user_tasks.env_cfg import UserCartpoleEnvCfg

    return UserCartpoleEnvCfg()


def test_offer_adds_a_twin_to_every_mjwarp_group_and_changes_no_default() -> None:
    from tests.physics.user_tasks.env_cfg import UserPhysicsCfg

    cfg = offer_mujoco_cpu(_user_cfg())
    cpu = resolve_presets(offer_mujoco_cpu(_user_cfg()), ["mujoco_cpu"])
    solver = cpu.sim.physics.solver_cfg
    assert isinstance(solver, MuJoCoCPUSolverCfg)
    assert (solver.njmax, solver.nconmax, solver.cone) == (7, 4, "pyramidal")  # the user's MuJoCo-Warp options
    assert cpu.sim.physics.class_type == "redline.physics.mujoco_cpu:NewtonMuJoCoCPUManager"
    assert cpu.armature == 0.01  # a scalar keyed newton_mjwarp follows it: same scene as MuJoCo-Warp
    default = resolve_presets(cfg, [])
    assert type(default.sim.physics.solver_cfg) is MJWarpSolverCfg and default.armature == 0.0
    # the user's class-level choices are copied, never edited; a second offer changes nothing
    fresh = UserPhysicsCfg()
    assert type(fresh.newton_mjwarp.solver_cfg) is MJWarpSolverCfg and "mujoco_cpu" not in fresh.__dataclass_fields__
    again = offer_mujoco_cpu(offer_mujoco_cpu(_user_cfg()))
    assert offer_mujoco_cpu(again).sim.physics is again.sim.physics


@pytest.mark.parametrize("task", STOCK)
def test_stock_task_resolves_mujoco_cpu_with_its_mjwarp_options(task: str) -> None:
    registry.resolve_task_id(task)  # registers Isaac Lab's tasks; redline's registry rewrites their entries
    assert ORIGINAL_KEY in gym.spec(task).kwargs
    env_cfg, agent_cfg = resolve_task_config(task, "rsl_rl_cfg_entry_point", overrides=["physics=mujoco_cpu"])
    mjwarp, _ = resolve_task_config(task, "rsl_rl_cfg_entry_point", overrides=["physics=newton_mjwarp"])
    default, _ = resolve_task_config(task, "rsl_rl_cfg_entry_point", overrides=[])
    solver = env_cfg.sim.physics.solver_cfg
    assert isinstance(solver, MuJoCoCPUSolverCfg) and solver.use_mujoco_contacts
    assert (solver.njmax, solver.nconmax, solver.integrator) == (
        mjwarp.sim.physics.solver_cfg.njmax,
        mjwarp.sim.physics.solver_cfg.nconmax,
        mjwarp.sim.physics.solver_cfg.integrator,
    )
    assert env_cfg.sim.dt == mjwarp.sim.dt
    assert type(default.sim.physics.solver_cfg) is MJWarpSolverCfg  # the stock default stays MuJoCo-Warp
    if not torch.cuda.is_available():
        assert agent_cfg.device == "cpu"  # rsl_rl's cuda:0 cannot run here


def test_user_task_registered_after_redline_offers_mujoco_cpu() -> None:
    import tests.physics.user_tasks as user_tasks

    env_cfg, _ = registry.load_cfgs(user_tasks.TASK_ID, "rsl_rl_cfg_entry_point", ["physics=mujoco_cpu"])
    assert isinstance(env_cfg.sim.physics.solver_cfg, MuJoCoCPUSolverCfg)
    assert env_cfg.sim.physics.solver_cfg.njmax == 7 and env_cfg.armature == 0.01 and env_cfg.episode_length_s == 2.0
    with pytest.raises(UserError, match="Unknown preset"):
        registry.load_cfgs(user_tasks.TASK_ID, "rsl_rl_cfg_entry_point", ["physics=mujoco_gpu"])


def test_post_import_hook_sees_the_tasks_a_package_registers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "late_user_tasks"
    package.mkdir()
    (package / "__init__.py").write_text(
        textwrap.dedent(
            """
            import gymnasium as gym
            gym.register(id="Test-Late-Cartpole", entry_point="isaaclab.envs:ManagerBasedRLEnv",
                         kwargs={"env_cfg_entry_point": "tests.physics.user_tasks.env_cfg:UserCartpoleEnvCfg"})
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[tuple[str, bool]] = []

    def callback(name: str) -> None:
        seen.append((name, "Test-Late-Cartpole" in gym.registry))
        offer_on_registered_tasks()

    assert after_import(["late_user_tasks"], callback) == ["late_user_tasks"]
    import late_user_tasks  # noqa: F401  (the package a user's entry point names, imported after redline)

    try:
        assert seen == [("late_user_tasks", True)]  # after the package's code ran, once
        assert type(sys.modules["late_user_tasks"].__loader__).__name__ == "SourceFileLoader"  # its own loader back
        assert ORIGINAL_KEY in gym.spec("Test-Late-Cartpole").kwargs
        env_cfg, _ = resolve_task_config("Test-Late-Cartpole", None, overrides=["physics=mujoco_cpu"])
        assert isinstance(env_cfg.sim.physics.solver_cfg, MuJoCoCPUSolverCfg)
    finally:
        gym.registry.pop("Test-Late-Cartpole", None)
        sys.modules.pop("late_user_tasks", None)


def test_what_mujoco_cpu_cannot_simulate_is_refused_in_one_line() -> None:
    from isaaclab.sensors import ContactSensorCfg, ImuCfg
    from isaaclab.terrains import TerrainImporterCfg
    from isaaclab.terrains.config.rough import ROUGH_TERRAINS_CFG

    cfg = resolve_presets(offer_mujoco_cpu(_user_cfg()), ["mujoco_cpu"])
    check_supported(cfg, "cpu")  # the cartpole needs nothing more
    with pytest.raises(UserError, match=r"CPU only \(device cuda:0"):
        check_supported(cfg, "cuda:0")
    cases = [
        ("imu", ImuCfg(prim_path="{ENV_REGEX_NS}/Robot/pole"), r"env\.scene\.imu is an Imu sensor"),
        (
            "feet",
            ContactSensorCfg(prim_path="{ENV_REGEX_NS}/Robot/.*", filter_prim_paths_expr=["/World/ground"]),
            r"env\.scene\.feet\.filter_prim_paths_expr",
        ),
        ("terrain", TerrainImporterCfg(prim_path="/World/ground"), r"env\.scene\.terrain\.terrain_type is 'generator'"),
        (
            "terrain",
            TerrainImporterCfg(prim_path="/World/ground", terrain_generator=ROUGH_TERRAINS_CFG),
            r"sub_terrains boxes, pyramid_stairs, pyramid_stairs_inv: convert_to_heightfield is False",
        ),
    ]
    for name, part, message in cases:
        bad = resolve_presets(offer_mujoco_cpu(_user_cfg()), ["mujoco_cpu"])
        setattr(bad.scene, name, part)
        with pytest.raises(UserError, match=message):
            check_supported(bad, "cpu")
        check_supported(resolve_presets(offer_mujoco_cpu(_user_cfg()), ["newton_mjwarp"]), "cuda:0")
    heightfields = ROUGH_TERRAINS_CFG.copy()
    for sub in heightfields.sub_terrains.values():
        sub.convert_to_heightfield = True
    cfg.scene.terrain = TerrainImporterCfg(prim_path="/World/ground", terrain_generator=heightfields)
    check_supported(cfg, "cpu")  # MuJoCo-C collides with the heightfield Newton makes of it
