"""The sensors added to MuJoCo-C's model (:mod:`redline.physics.mujoco_cpu_sensors`): rotations to world axes."""

from __future__ import annotations

import mujoco
import numpy as np

from redline.physics.mujoco_cpu_sensors import _rotate


def test_rotate_matches_mujoco() -> None:
    rng = np.random.default_rng(0)
    q = rng.normal(size=(6, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    v = rng.normal(size=(6, 3))
    expected = np.empty_like(v)
    for i in range(len(q)):
        mujoco.mju_rotVecQuat(expected[i], v[i], q[i])
    np.testing.assert_allclose(_rotate(q, v), expected, atol=1e-12)
