"""A step's inputs and outputs for :mod:`redline.physics.mujoco_cpu`: MuJoCo-Warp's arrays <-> ``mujoco.rollout``'s.

Newton's conversion kernels keep filling ``mjw_data`` (``(nworld, ...)`` arrays of host memory on the CPU, viewed by
numpy without a copy). :class:`StepArrays` gathers a step's inputs from them into the float64 state and control
vectors that MuJoCo-C takes per world (vectorised, no loop over worlds) and writes the step's output back, from
where Newton fills its state as usual.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np

STATE_SPEC = int(mujoco.mjtState.mjSTATE_FULLPHYSICS)
"""What ``rollout`` takes and returns per world: time, qpos, qvel, act, history, plugin state."""


def spec_layout(m: mujoco.MjModel, spec: int) -> dict[int, slice]:
    """Where each component of a ``spec`` vector lies (``mj_getState`` writes them in bit order)."""
    out, start = {}, 0
    bit = 1
    while bit <= spec:
        if spec & bit:
            size = mujoco.mj_stateSize(m, bit)
            out[bit] = slice(start, start + size)
            start += size
        bit <<= 1
    return out


def control_spec(m: mujoco.MjModel) -> int:
    """The inputs of ``m``'s step that Newton writes: controls, applied forces, mocap poses, equality switches."""
    spec = int(mujoco.mjtState.mjSTATE_CTRL | mujoco.mjtState.mjSTATE_QFRC_APPLIED)
    spec |= int(mujoco.mjtState.mjSTATE_XFRC_APPLIED)
    if m.nmocap:
        spec |= int(mujoco.mjtState.mjSTATE_MOCAP_POS | mujoco.mjtState.mjSTATE_MOCAP_QUAT)
    if m.neq:
        spec |= int(mujoco.mjtState.mjSTATE_EQ_ACTIVE)
    return spec


class StepArrays:
    """The float64 inputs and outputs of one step of ``nworld`` worlds of model ``m`` (as MuJoCo-C computes)."""

    def __init__(self, m: mujoco.MjModel, nworld: int) -> None:
        self.nworld = nworld
        self.state_layout = spec_layout(m, STATE_SPEC)
        self.control_spec = control_spec(m)
        """The components of :attr:`control` (``mjtState`` bits)."""
        self.control_layout = spec_layout(m, self.control_spec)
        nstate = mujoco.mj_stateSize(m, STATE_SPEC)
        ncontrol = mujoco.mj_stateSize(m, self.control_spec)
        self.state = np.zeros((nworld, nstate))
        """``(nworld, nstate)``: each world's state before the step (:data:`STATE_SPEC`)."""
        self.control = np.zeros((nworld, 1, ncontrol))
        """``(nworld, 1, ncontrol)``: each world's inputs of the step (:attr:`control_spec`)."""
        self.next = np.zeros((nworld, 1, nstate))
        """``(nworld, 1, nstate)``: each world's state after the step (rollout's output)."""
        self.warmstart = np.zeros((nworld, m.nv))
        """Zeros: every solve starts cold, so a world's step does not depend on which thread takes it."""

    def gather(self, d: Any) -> None:
        """Take the step's inputs from ``mjw_data`` ``d``: ``qpos``, ``qvel``, ``act`` and the controls (the time
        stays the last step's output, :meth:`reload_time`)."""
        n = self.nworld
        s, c = self.state_layout, self.control_layout
        bits = mujoco.mjtState
        self.state[:, s[int(bits.mjSTATE_QPOS)]] = d.qpos.numpy()  # views of host memory
        self.state[:, s[int(bits.mjSTATE_QVEL)]] = d.qvel.numpy()
        act = d.act.numpy()
        if act.size:
            self.state[:, s[int(bits.mjSTATE_ACT)]] = act
        control = self.control[:, 0]
        control[:, c[int(bits.mjSTATE_CTRL)]] = d.ctrl.numpy()
        control[:, c[int(bits.mjSTATE_QFRC_APPLIED)]] = d.qfrc_applied.numpy()
        control[:, c[int(bits.mjSTATE_XFRC_APPLIED)]] = d.xfrc_applied.numpy().reshape(n, -1)
        if int(bits.mjSTATE_MOCAP_POS) in c:
            control[:, c[int(bits.mjSTATE_MOCAP_POS)]] = d.mocap_pos.numpy().reshape(n, -1)
            control[:, c[int(bits.mjSTATE_MOCAP_QUAT)]] = d.mocap_quat.numpy().reshape(n, -1)
        if int(bits.mjSTATE_EQ_ACTIVE) in c:
            control[:, c[int(bits.mjSTATE_EQ_ACTIVE)]] = d.eq_active.numpy()

    def scatter(self, d: Any) -> None:
        """Write the step's output into ``mjw_data`` ``d`` (``qpos``, ``qvel``, ``act``, ``time``); its time is also
        the next step's input."""
        s = self.state_layout
        bits = mujoco.mjtState
        out = self.next[:, 0]
        d.qpos.numpy()[...] = out[:, s[int(bits.mjSTATE_QPOS)]]
        d.qvel.numpy()[...] = out[:, s[int(bits.mjSTATE_QVEL)]]
        act = d.act.numpy()
        if act.size:
            act[...] = out[:, s[int(bits.mjSTATE_ACT)]]
        d.time.numpy()[...] = out[:, s[int(bits.mjSTATE_TIME)]].reshape(d.time.shape)
        self.state[:, s[int(bits.mjSTATE_TIME)]] = out[:, s[int(bits.mjSTATE_TIME)]]

    def carry(self) -> None:
        """Take the step's output as the next step's input (MuJoCo's own trajectory, as ``rollout`` with ``nstep``
        > 1: nothing goes through ``mjw_data``'s float32 arrays between the two steps)."""
        self.state[...] = self.next[:, 0]

    def reload_time(self, d: Any) -> None:
        """Take ``mjw_data`` ``d``'s time into the next step's input again (it was written from outside)."""
        time = self.state_layout[int(mujoco.mjtState.mjSTATE_TIME)]
        self.state[:, time] = d.time.numpy().reshape(self.nworld, -1)
