"""Each world's MuJoCo-C model (:mod:`redline.physics.mujoco_cpu_models`): frame shortcuts Newton's edits break."""

from __future__ import annotations

import mujoco
import numpy as np

from redline.physics.mujoco_cpu_models import fix_sameframe

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
