"""The ``mujoco_cpu`` preset offered by every task, with its MuJoCo-Warp options (no simulator)."""

from __future__ import annotations

import pytest

from redline.envs import registry


@pytest.mark.parametrize("task", [t for t in registry.redline_task_ids()])
def test_every_task_offers_mujoco_cpu_with_its_mjwarp_options(task: str) -> None:
    default, _ = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", [])
    mjwarp, _ = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", ["physics=newton_mjwarp"])
    cpu, _ = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", ["physics=mujoco_cpu"])
    assert type(default.sim.physics.solver_cfg).__name__ == "MJWarpSolverCfg"  # not the default
    solver, reference = cpu.sim.physics.solver_cfg, mjwarp.sim.physics.solver_cfg
    assert type(solver).__name__ == "MuJoCoCPUSolverCfg" and solver.nthread is None
    for field in ("njmax", "iterations", "ls_iterations", "solver", "integrator", "cone", "impratio", "tolerance"):
        assert getattr(solver, field) == getattr(reference, field), field
    assert cpu.sim.physics.num_substeps == mjwarp.sim.physics.num_substeps
    assert solver.use_mujoco_contacts and cpu.sim.physics.collision_cfg is None
