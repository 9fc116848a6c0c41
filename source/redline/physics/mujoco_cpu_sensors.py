"""The sensors :mod:`redline.physics.mujoco_cpu` adds to MuJoCo-C's model, and what rollout's sensor data says.

Added only when something asks for them: joint wrenches (Newton's ``body_parent_f``, the Ant's joint-wrench sensor)
through force, torque and orientation sensors at each body's centre of mass, and per-body net contact forces
(Newton's contacts for Isaac Lab's contact sensor on the Go1) through one MuJoCo contact sensor per body. Their values
are computed in the step's forward pass, where MuJoCo-Warp computes ``cfrc_int`` and contact forces.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np
from newton import Contacts

from redline.errors import UserError


def _rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Vectors ``v (..., 3)`` rotated by unit quaternions ``q (..., 4)`` in MuJoCo's (w, x, y, z) order."""
    w, u = q[..., :1], q[..., 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def check_sensors(base: mujoco.MjModel, user: str) -> mujoco.MjModel:
    """``base``, or a one-line :class:`UserError` naming ``user`` if its MuJoCo sensors are disabled."""
    if base.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_SENSOR:
        raise UserError(f"physics=mujoco_cpu: {user} needs MuJoCo sensors (disable_sensors=False)")
    return base


class AddedSensors:
    """The sensors added to a MuJoCo spec, where their values lie in rollout's sensor data, and what they read."""

    def __init__(self) -> None:
        self.data: np.ndarray | None = None
        """Rollout's sensor output, ``(nworld, 1, nsensordata)``, once the spec was compiled with sensors."""
        self._wrench_adr: np.ndarray | None = None
        self._wrench_cols = np.zeros((0, 10), dtype=np.int64)  # sensordata columns: force, torque, quaternion
        self._wrench_names: list[str] = []
        self.wrench_newton = np.zeros((0, 0), dtype=np.int32)
        """``(nworld, bodies)``: the Newton body of each body with a wrench reported, -1: none."""
        self._contact_names: list[str] = []
        self._contact_cols: np.ndarray | None = None  # (bodies, 4) sensordata columns: found, net force
        self.contact_bodies = np.zeros(0, dtype=np.int64)
        """MuJoCo bodies whose net contact force is reported (:meth:`contact_forces`)."""
        self._contact_shape = np.zeros((0, 0), dtype=np.int32)
        self._ground_shape = np.zeros(0, dtype=np.int32)

    @property
    def reports_wrenches(self) -> bool:
        """Whether the compiled model carries joint-wrench sensors (:meth:`wrenches`)."""
        return self._wrench_adr is not None

    @property
    def reports_contacts(self) -> bool:
        """Whether the compiled model carries contact sensors (:meth:`contact_forces`)."""
        return self._contact_cols is not None

    def add_wrenches(self, spec: Any, base: mujoco.MjModel, body_to_newton: np.ndarray) -> None:
        """Add to ``spec`` (compiled as ``base``) a site at each body's centre of mass (axes: its principal axes)
        and force, torque and world-orientation sensors there, so ``rollout``'s sensor data carries ``cfrc_int``;
        ``body_to_newton`` is Newton's ``mjc_body_to_newton`` ``(nworld, nbody)``.

        MuJoCo's force/torque sensors are the interaction wrench of the site's body with its parent (``cfrc_int``
        moved to the site, in site axes); at the centre of mass, rotated to world axes, that is Newton's
        ``body_parent_f`` (force, torque about the centre of mass).
        """
        check_sensors(base, "a joint-wrench sensor")
        bodies = np.arange(1, base.nbody)
        for b in bodies:
            site = f"redline_wrench_{b}"
            spec.body(base.body(int(b)).name).add_site(name=site, pos=base.body_ipos[b], quat=base.body_iquat[b])
            for kind in ("FORCE", "TORQUE", "FRAMEQUAT"):
                sensor_type = getattr(mujoco.mjtSensor, f"mjSENS_{kind}")
                spec.add_sensor(
                    name=f"{site}_{kind.lower()}", type=sensor_type, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=site
                )
        self.wrench_newton = body_to_newton[:, bodies]
        self._wrench_names = [f"redline_wrench_{b}" for b in bodies]

    def add_contacts(self, spec: Any, base: mujoco.MjModel, geom_to_shape: np.ndarray) -> None:
        """Add to ``spec`` (compiled as ``base``) a contact sensor on every body with geoms (net force of all its
        contacts, world axes); ``geom_to_shape`` is Newton's ``mjc_geom_to_newton_shape`` ``(nworld, ngeom)``."""
        check_sensors(base, "a contact sensor")
        shapes = geom_to_shape
        ground = [g for g in range(base.ngeom) if base.geom_bodyid[g] == 0 and (shapes[:, g] >= 0).all()]
        if not ground:
            raise UserError("physics=mujoco_cpu: contact reports need a static collision shape (a ground)")
        bodies = [b for b in range(1, base.nbody) if base.body_geomnum[b] > 0]
        found_force = (1 << int(mujoco.mjtConDataField.mjCONDATA_FOUND)) | (
            1 << int(mujoco.mjtConDataField.mjCONDATA_FORCE)
        )
        netforce = 3  # the contact sensor's reduce="netforce": one net force over all contacts, world axes
        for b in bodies:
            spec.add_sensor(
                name=f"redline_contact_{b}",
                type=mujoco.mjtSensor.mjSENS_CONTACT,
                objtype=mujoco.mjtObj.mjOBJ_BODY,
                objname=base.body(b).name,
                intprm=[found_force, netforce, 1],
            )
        self._contact_names = [f"redline_contact_{b}" for b in bodies]
        self.contact_bodies = np.array(bodies)
        self._contact_shape = shapes[:, base.body_geomadr[bodies]]  # (nworld, bodies): a shape of each body
        self._ground_shape = shapes[:, ground[0]]  # (nworld,): the other side of every reported contact

    def locate(self, m: mujoco.MjModel, nworld: int) -> None:
        """Find the added sensors in ``m`` (the spec compiled) and make room for ``nworld`` worlds' sensor data."""
        if self._wrench_names:
            adr = np.array(
                [[m.sensor(f"{n}_{k}").adr[0] for k in ("force", "torque", "framequat")] for n in self._wrench_names]
            )
            self._wrench_adr = adr  # (bodies, [force, torque, quat]) start in sensordata
            self._wrench_cols = np.concatenate(
                [adr[:, :1] + np.arange(3), adr[:, 1:2] + np.arange(3), adr[:, 2:] + np.arange(4)], 1
            )
        if self._contact_names:
            adr = np.array([m.sensor(n).adr[0] for n in self._contact_names])
            self._contact_cols = adr[:, None] + np.arange(4)  # found, force (x, y, z)
        self.data = np.zeros((nworld, 1, m.nsensordata))

    def wrenches(self) -> np.ndarray:
        """``(nworld, nbody - 1, 6)``: each MuJoCo body's wrench from its parent in the last step (force [N],
        torque about its centre of mass [N m], world axes), Newton's ``body_parent_f`` convention."""
        if self._wrench_adr is None or self.data is None:
            raise RuntimeError("no joint-wrench sensors: nothing asked for body_parent_f")
        sensors = self.data[:, 0]  # (nworld, nsensordata), the step's forward pass
        nworld = len(sensors)
        wrench = sensors[:, self._wrench_cols[:, :6]].reshape(nworld, -1, 2, 3)  # site (principal) axes
        quat = sensors[:, self._wrench_cols[:, 6:]]  # (nworld, bodies, 4): site axes -> world, (w, x, y, z)
        return _rotate(quat[:, :, None], wrench).reshape(nworld, -1, 6)

    def contact_forces(self) -> np.ndarray:
        """``(nworld, len(contact_bodies), 3)``: the net contact force on each body in the last step [N], world
        axes; zeros for a body without contacts."""
        if self._contact_cols is None or self.data is None:
            raise RuntimeError("no contact sensors: enable_contact_reports() was not called")
        data = self.data[:, 0][:, self._contact_cols]
        return -data[..., 1:4] * (data[..., :1] > 0)  # the sensor reports the force the body exerts

    def fill_contacts(self, contacts: Contacts) -> None:
        """Fill ``contacts`` with one contact per (world, body in contact): shape0 a shape of the body, shape1 the
        ground, ``force`` the net contact force on the body [N] (world axes), the normal world +z."""
        if self._contact_cols is None or self.data is None:
            raise UserError("physics=mujoco_cpu: contact reports were not enabled before the step")
        found = self.data[:, 0][:, self._contact_cols[:, 0]] > 0  # (nworld, bodies)
        world, body = np.nonzero(found)
        k = len(world)
        if k > contacts.rigid_contact_max:
            raise RuntimeError(f"mujoco_cpu: {k} contact reports exceed rigid_contact_max {contacts.rigid_contact_max}")
        contacts.rigid_contact_count.numpy()[0] = k
        contacts.rigid_contact_shape0.numpy()[:k] = self._contact_shape[world, body]
        contacts.rigid_contact_shape1.numpy()[:k] = self._ground_shape[world]
        contacts.rigid_contact_point0.numpy()[:k] = 0.0
        contacts.rigid_contact_point1.numpy()[:k] = 0.0
        contacts.rigid_contact_normal.numpy()[:k] = (0.0, 0.0, 1.0)
        force: Any = contacts.force
        force.numpy()[:k, :3] = self.contact_forces()[world, body]
        force.numpy()[:k, 3:] = 0.0
