"""``redline.physics.worlds``: one model per thread, patched per world, steps bitwise as rollout's per-world models."""

from __future__ import annotations

import copy
from pathlib import Path

import mujoco
import numpy as np
import pytest
from mujoco import rollout

import redline
from redline.physics import worlds

GO1 = Path(redline.__file__).parent / "assets" / "data" / "unitree_go1" / "go1.xml"
STATE = int(mujoco.mjtState.mjSTATE_FULLPHYSICS)
CONTROL = int(mujoco.mjtState.mjSTATE_CTRL)


def _go1_on_a_floor() -> mujoco.MjModel:
    spec = mujoco.MjSpec.from_file(str(GO1))
    for geom in list(spec.geoms):  # the visual meshes are not shipped
        if geom.contype == 0 and geom.conaffinity == 0:
            spec.delete(geom)
    for mesh in list(spec.meshes):
        spec.delete(mesh)
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1])
    spec.add_sensor(type=mujoco.mjtSensor.mjSENS_SUBTREECOM, objtype=mujoco.mjtObj.mjOBJ_BODY, objname="trunk")
    return spec.compile()


def _randomised(base: mujoco.MjModel, n: int) -> list[mujoco.MjModel]:
    """Per-world copies with a drawn trunk mass (and inertia) and foot friction, as the Go1's startup events."""
    rng = np.random.default_rng(0)
    models = []
    for _ in range(n):
        m = copy.copy(base)
        scale = rng.uniform(0.8, 1.25)
        m.body_mass[1] *= scale
        m.body_inertia[1] *= scale
        m.geom_friction[1:, 0] = rng.uniform(0.6, 1.0)
        m.geom_priority[1:] = 1
        models.append(m)
    return models


@pytest.fixture(scope="module")
def lib():
    built, reason = worlds.library()
    if built is None:
        pytest.skip(f"no C loop here: {reason}")
    return built


@pytest.mark.parametrize("nthread", [1, 2, 3])
def test_patched_thread_models_step_bitwise_as_per_world_models(lib, nthread: int) -> None:
    """40 worlds, 30 physics steps from perturbed standing states with random controls: states and sensor data
    bitwise equal to mujoco.rollout with one model per world, for any thread count."""
    base = _go1_on_a_floor()
    n = 40
    models = _randomised(base, n)
    fields = worlds.varying_fields(models, ["body_mass", "body_inertia", "geom_friction", "geom_priority", "body_pos"])
    assert fields == ["body_mass", "body_inertia", "geom_friction"]  # priority is the same in all: not patched
    data = mujoco.MjData(base)
    mujoco.mj_resetDataKeyframe(base, data, 0) if base.nkey else mujoco.mj_resetData(base, data)
    data.qpos[2] = 0.35
    state0 = np.zeros((n, mujoco.mj_stateSize(base, STATE)))
    mujoco.mj_getState(base, data, state0[0], STATE)
    rng = np.random.default_rng(1)
    state0[:] = state0[0]
    state0[:, 1 + 7 : 1 + base.nq] += rng.normal(0, 0.05, (n, base.nq - 7))  # joint angles (after time, base pose)
    stepper = worlds.WorldStepper(lib, models, fields, nthread)
    pool = rollout.Rollout(nthread=0)
    scratch = [mujoco.MjData(base)]
    ours, theirs = state0.copy(), state0.copy()
    for _ in range(30):
        control = rng.uniform(-0.5, 0.5, (n, mujoco.mj_stateSize(base, CONTROL)))
        out_ours, sens_ours = np.zeros_like(ours), np.zeros((n, base.nsensordata))
        stepper.step(CONTROL, ours, control, out_ours, sens_ours)
        out_theirs, sens_theirs = np.zeros((n, 1, ours.shape[1])), np.zeros((n, 1, base.nsensordata))
        pool.rollout(models, scratch, theirs, control[:, None], control_spec=CONTROL, nstep=1,
                     initial_warmstart=np.zeros((n, base.nv)), state=out_theirs, sensordata=sens_theirs)  # fmt: skip
        assert np.array_equal(out_ours, out_theirs[:, 0]) and np.array_equal(sens_ours, sens_theirs[:, 0])
        ours, theirs = out_ours, out_theirs[:, 0].copy()
    assert not np.array_equal(ours[0], ours[1])  # the worlds did differ


def test_an_unusable_compiler_leaves_rollout_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "/nonexistent/cc")
    assert worlds._build() == (None, "no C compiler (cc) on PATH")
    monkeypatch.setenv(worlds.SWITCH, "off")
    assert worlds._build() == (None, f"{worlds.SWITCH}=off")
