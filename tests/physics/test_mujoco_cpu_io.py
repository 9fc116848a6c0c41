"""A step's inputs and outputs (:mod:`redline.physics.mujoco_cpu_io`): MuJoCo-Warp-shaped arrays <-> rollout's."""

from __future__ import annotations

from types import SimpleNamespace

import mujoco
import numpy as np
from mujoco import rollout

from redline.physics.mujoco_cpu_io import STATE_SPEC, StepArrays

XML = """
<mujoco>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" mass="1"/>
    </body>
    <body name="mocap" mocap="true" pos="1 0 0"/>
  </worldbody>
  <actuator>
    <motor joint="hinge" gear="2"/>
    <general joint="hinge" dyntype="filter" dynprm="0.05" gainprm="1"/>
  </actuator>
</mujoco>
"""


class _Array:
    """What a CPU ``wp.array`` offers here: ``numpy()``, a view of its memory."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.shape = values.shape

    def numpy(self) -> np.ndarray:
        return self.values


def _mjw_data(m: mujoco.MjModel, datas: list[mujoco.MjData]) -> SimpleNamespace:
    """``mjw_data``'s arrays of shape ``(nworld, ...)`` holding ``datas``' values."""
    names = ("qpos", "qvel", "act", "ctrl", "qfrc_applied", "xfrc_applied", "mocap_pos", "mocap_quat", "eq_active")
    arrays = {name: _Array(np.stack([getattr(d, name) for d in datas]).astype(np.float32)) for name in names}
    return SimpleNamespace(time=_Array(np.array([d.time for d in datas], dtype=np.float32)), **arrays)


def test_a_step_through_step_arrays_is_mujocos_step() -> None:
    m = mujoco.MjModel.from_xml_string(XML)
    rng = np.random.default_rng(0)
    datas = [mujoco.MjData(m) for _ in range(3)]
    for d in datas:  # float32 values, as MuJoCo-Warp holds them
        for name in ("qpos", "qvel", "act", "ctrl", "qfrc_applied", "xfrc_applied", "mocap_pos"):
            getattr(d, name)[...] = rng.normal(size=getattr(d, name).shape).astype(np.float32)
    mjw = _mjw_data(m, datas)
    arrays = StepArrays(m, len(datas))
    arrays.gather(mjw)
    for w, d in enumerate(datas):
        state = np.empty(mujoco.mj_stateSize(m, STATE_SPEC))
        mujoco.mj_getState(m, d, state, STATE_SPEC)
        control = np.empty(mujoco.mj_stateSize(m, arrays.control_spec))
        mujoco.mj_getState(m, d, control, arrays.control_spec)
        np.testing.assert_array_equal(arrays.state[w], state)
        np.testing.assert_array_equal(arrays.control[w, 0], control)
    with rollout.Rollout(nthread=0) as pool:
        pool.rollout([m] * len(datas), [mujoco.MjData(m)], arrays.state, arrays.control,
                     control_spec=arrays.control_spec, nstep=1, initial_warmstart=arrays.warmstart,
                     state=arrays.next)  # fmt: skip
    arrays.scatter(mjw)
    for w, d in enumerate(datas):
        mujoco.mj_step(m, d)
        np.testing.assert_allclose(mjw.qpos.values[w], d.qpos, rtol=1e-6)  # float32 again, as in mjw_data
        np.testing.assert_allclose(mjw.qvel.values[w], d.qvel, rtol=1e-6)
        np.testing.assert_allclose(mjw.act.values[w], d.act, rtol=1e-6)
        assert mjw.time.values[w] == np.float32(m.opt.timestep)
    assert (arrays.state[:, arrays.state_layout[int(mujoco.mjtState.mjSTATE_TIME)]] == m.opt.timestep).all()
    mjw.time.values[:] = 5.0  # written from outside: a resumed run's state
    arrays.reload_time(mjw)
    assert (arrays.state[:, arrays.state_layout[int(mujoco.mjtState.mjSTATE_TIME)]] == 5.0).all()


def test_carried_steps_are_mujocos_own_steps_from_cold_starts() -> None:
    # fuse_decimation's steps within one call: each output carried as the next input in float64 (no round trip
    # through mjw_data's float32) is MuJoCo's own trajectory, every solve from a zero warm start as a single step's
    m = mujoco.MjModel.from_xml_string(XML)
    rng = np.random.default_rng(1)
    datas = [mujoco.MjData(m) for _ in range(2)]
    for d in datas:
        for name in ("qpos", "qvel", "act", "ctrl", "qfrc_applied"):
            getattr(d, name)[...] = rng.normal(size=getattr(d, name).shape).astype(np.float32)
    arrays = StepArrays(m, len(datas))
    arrays.gather(_mjw_data(m, datas))
    with rollout.Rollout(nthread=0) as pool:
        for k in range(3):
            if k:
                arrays.carry()
            pool.rollout([m] * len(datas), [mujoco.MjData(m)], arrays.state, arrays.control,
                         control_spec=arrays.control_spec, nstep=1, initial_warmstart=arrays.warmstart,
                         state=arrays.next)  # fmt: skip
    for w, d in enumerate(datas):
        for _ in range(3):
            d.qacc_warmstart[:] = 0.0
            mujoco.mj_step(m, d)
        state = np.empty(mujoco.mj_stateSize(m, STATE_SPEC))
        mujoco.mj_getState(m, d, state, STATE_SPEC)
        np.testing.assert_array_equal(arrays.next[w, 0], state)


CONTACT_XML = """
<mujoco>
  <worldbody>
    <geom name="ground" type="plane" size="2 2 0.1"/>
    <body name="box" pos="0 0 0.12" euler="10 20 0">
      <freejoint/>
      <geom name="box" type="box" size="0.1 0.1 0.1" mass="1"/>
      <site name="centre"/>
    </body>
  </worldbody>
  <sensor>
    <contact body1="box" reduce="netforce" data="found force"/>
    <force site="centre"/>
    <framepos objtype="body" objname="box"/>
  </sensor>
</mujoco>
"""


def test_skipping_the_sensors_leaves_the_dynamics_and_the_last_values() -> None:
    # fuse_decimation computes MuJoCo's sensors in the last step of a call only (mjDSBL_SENSOR before the others):
    # a box landing on the ground moves the same bits, and the last step's contact, force and position sensors read
    # the same values, as when every step computes them
    from redline.physics.mujoco_cpu import SENSOR_BIT

    m = mujoco.MjModel.from_xml_string(CONTACT_XML)
    runs = []
    for skip in (False, True):
        d = mujoco.MjData(m)
        for k in range(6):
            on = not skip or k == 5
            m.opt.disableflags = m.opt.disableflags & ~SENSOR_BIT if on else m.opt.disableflags | SENSOR_BIT
            mujoco.mj_step(m, d)
        runs.append((d.qpos.copy(), d.qvel.copy(), d.sensordata.copy()))
    (qpos, qvel, sensors), (qpos_skip, qvel_skip, sensors_skip) = runs
    assert np.linalg.norm(sensors[1:4]) > 1.0  # the box is on the ground: a net contact force [N]
    np.testing.assert_array_equal(qpos_skip, qpos)
    np.testing.assert_array_equal(qvel_skip, qvel)
    np.testing.assert_array_equal(sensors_skip, sensors)
