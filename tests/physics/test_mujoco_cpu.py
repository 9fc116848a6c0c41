"""``physics=mujoco_cpu`` pieces that need no simulator: the preset config, frame shortcuts, rotations."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from redline.envs import registry
from redline.physics.mujoco_cpu import _rotate, fix_sameframe

XML = """
<mujoco>
  <worldbody>
    <body name="box" pos="0 0 1">
      <freejoint/>
      <geom type="box" size=".3 .1 .05" mass="2"/>
    </body>
  </worldbody>
</mujoco>
"""


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


def _qacc(m: mujoco.MjModel) -> np.ndarray:
    d = mujoco.MjData(m)
    d.qvel[:] = [0.1, -0.2, 0.3, 4.0, -3.0, 5.0]  # spinning: the inertia's orientation matters
    mujoco.mj_forward(m, d)
    return d.qacc.copy()


def test_fix_sameframe_restores_a_rotated_inertial_frame() -> None:
    m = mujoco.MjModel.from_xml_string(XML)
    assert m.body_sameframe[1] == mujoco.mjtSameFrame.mjSAMEFRAME_BODY
    assert fix_sameframe(m) == 0  # a freshly compiled model is consistent
    # what Newton does after compiling: rotate the inertial frame (here by 90 deg about z), keep the flags
    rotated = np.array([np.sqrt(0.5), 0.0, 0.0, np.sqrt(0.5)])
    m.body_iquat[1] = rotated
    stale = _qacc(m)
    assert fix_sameframe(m) >= 1
    assert m.body_sameframe[1] == mujoco.mjtSameFrame.mjSAMEFRAME_NONE
    # the reference: the same body compiled with its inertia given in that rotated frame from the start
    inertia = " ".join(str(x) for x in m.body_inertia[1])
    quat = " ".join(str(x) for x in rotated)
    inertial = f'<inertial pos="0 0 0" quat="{quat}" mass="{m.body_mass[1]}" diaginertia="{inertia}"/>'
    reference = mujoco.MjModel.from_xml_string(XML.replace("<freejoint/>", "<freejoint/>" + inertial))
    np.testing.assert_allclose(_qacc(m), _qacc(reference), atol=1e-9)
    assert np.abs(stale - _qacc(m)).max() > 1e-3  # the stale shortcut gave other dynamics


def test_rotate_matches_mujoco() -> None:
    rng = np.random.default_rng(0)
    q = rng.normal(size=(6, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    v = rng.normal(size=(6, 3))
    expected = np.empty_like(v)
    for i in range(len(q)):
        mujoco.mju_rotVecQuat(expected[i], v[i], q[i])
    np.testing.assert_allclose(_rotate(q, v), expected, atol=1e-12)
