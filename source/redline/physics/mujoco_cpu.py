"""MuJoCo's C engine behind Newton: one ``MjData`` per env, stepped on all cores by ``mujoco.rollout``.

:class:`SolverMuJoCoCPU` is Newton's :class:`~newton.solvers.SolverMuJoCo` built exactly as for MuJoCo-Warp on the
CPU (``separate_worlds=True``): every Newton conversion kernel (controls, joint coordinates, resets by world mask,
model-property updates) keeps filling the MuJoCo-Warp arrays ``mjw_data``/``mjw_model`` of shape ``(nworld, ...)``,
which on the CPU are host memory that numpy views without a copy. Only MuJoCo-Warp's ``step`` is replaced: the
inputs are gathered from ``mjw_data`` (vectorised numpy), ``mujoco.rollout.Rollout`` (a persistent C++ thread
pool) takes one ``mj_step`` per world on ``nthread`` threads with the GIL released, and the new ``qpos``, ``qvel``,
``act`` and ``time`` are written back to ``mjw_data``, from which Newton fills its state as usual.

What a step keeps between calls lives in ``mjw_data`` alone (MuJoCo-C's per-thread ``MjData`` are scratch), and
every world starts its solve from a zero warm start (``rollout`` cannot hand back ``qacc_warmstart``), so a world's
trajectory does not depend on which thread, chunk or process partition steps it.

Sensors are added to MuJoCo-C's model only when something asks for them, and come back in rollout's sensor data:
joint wrenches (Newton's ``body_parent_f``, the Ant's joint-wrench sensor) and per-body net contact forces
(:meth:`SolverMuJoCoCPU.update_contacts`, Isaac Lab's contact sensor on the Go1). Per-world model parameters that
Newton writes into ``mjw_model`` (masses, friction, gains, ...) are carried: after every model change each world's
``MjModel`` is refreshed from its row.

Not filled (asking for them is a one-line error, never a stale MuJoCo-Warp array): MuJoCo's other derived data of
the step (``qacc``, body poses and contacts in ``mjw_data``), Newton's ``body_qdd`` (IMU/PVA sensors) and
``mujoco.qfrc_actuator``.
"""

from __future__ import annotations

import copy
import logging
from typing import Any, cast

import mujoco
import numpy as np
import warp as wp
from isaaclab.physics import PhysicsManager
from isaaclab_newton.physics import NewtonManager
from isaaclab_newton.physics.mjwarp_manager import NewtonMJWarpManager
from mujoco import rollout
from newton import Contacts, Model, ModelFlags, State
from newton.solvers import SolverMuJoCo

from redline.errors import UserError
from redline.host import cores_per_process
from redline.physics import worlds

logger = logging.getLogger(__name__)

##
# Model fields carried per world
##

MODEL_FIELDS = (
    "qpos0",
    "qpos_spring",
    "body_pos",
    "body_quat",
    "body_ipos",
    "body_iquat",
    "body_mass",
    "body_subtreemass",
    "body_inertia",
    "body_invweight0",
    "body_gravcomp",
    "jnt_solref",
    "jnt_solimp",
    "jnt_pos",
    "jnt_axis",
    "jnt_stiffness",
    "jnt_range",
    "jnt_actfrcrange",
    "jnt_margin",
    "dof_armature",
    "dof_damping",
    "dof_invweight0",
    "dof_frictionloss",
    "dof_solimp",
    "dof_solref",
    "geom_solmix",
    "geom_solref",
    "geom_solimp",
    "geom_size",
    "geom_rbound",
    "geom_pos",
    "geom_quat",
    "geom_friction",
    "geom_margin",
    "geom_gap",
    "site_pos",
    "site_quat",
    "eq_solref",
    "eq_solimp",
    "eq_data",
    "actuator_gainprm",
    "actuator_biasprm",
    "actuator_dynprm",
    "actuator_ctrlrange",
    "actuator_forcerange",
    "actuator_actrange",
    "actuator_gear",
    "actuator_cranklength",
    "actuator_acc0",
    "actuator_lengthrange",
    "pair_solref",
    "pair_solreffriction",
    "pair_solimp",
    "pair_margin",
    "pair_gap",
    "pair_friction",
    "tendon_solref_lim",
    "tendon_solimp_lim",
    "tendon_solref_fri",
    "tendon_solimp_fri",
    "tendon_range",
    "tendon_actfrcrange",
    "tendon_margin",
    "tendon_stiffness",
    "tendon_damping",
    "tendon_armature",
    "tendon_frictionloss",
    "tendon_lengthspring",
    "tendon_length0",
    "tendon_invweight0",
)
"""The ``mjw_model`` fields Newton keeps per world (``SolverMuJoCo._expand_model_fields``) that a MuJoCo-C model
has with the same layout; each world's ``MjModel`` takes its row (float32 values, as MuJoCo-Warp steps them)."""

SAMEFRAME_FIELDS = ("body_sameframe", "geom_sameframe", "site_sameframe", "body_simple", "dof_simplenum")
"""Flags :func:`fix_sameframe` may clear per world (a world's inertial frames decide them)."""

OPTION_FIELDS = ("tolerance", "ls_tolerance", "ccd_tolerance", "density", "viscosity", "gravity", "wind", "magnetic")
"""Per-world solver options (``mjw_model.opt``) with the same meaning in ``MjModel.opt``."""

STATE_SPEC = int(mujoco.mjtState.mjSTATE_FULLPHYSICS)
"""What ``rollout`` takes and returns per world: time, qpos, qvel, act, history, plugin state."""


def default_nthread() -> int:
    """This process's share of the cores it may run on (:func:`redline.host.cores_per_process`)."""
    return cores_per_process()


def check_device(device: str) -> None:
    """A one-line :class:`UserError` unless ``device`` is the CPU."""
    if not str(device).startswith("cpu"):
        raise UserError(f"physics=mujoco_cpu runs on the CPU only (device {device}); use physics=newton_mjwarp")


def check_nthread(nthread: Any) -> int:
    """``nthread`` if it is a positive int, else a one-line :class:`UserError`."""
    if isinstance(nthread, bool) or not isinstance(nthread, int) or nthread <= 0:
        raise UserError(f"physics=mujoco_cpu: nthread must be a positive integer (got {nthread!r})")
    return nthread


def _rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Vectors ``v (..., 3)`` rotated by unit quaternions ``q (..., 4)`` in MuJoCo's (w, x, y, z) order."""
    w, u = q[..., :1], q[..., 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def fix_sameframe(m: mujoco.MjModel) -> int:
    """Clear MuJoCo's "same frame" shortcuts that the model's frames no longer satisfy; returns how many.

    The compiler flags a body whose inertial frame is its body frame (and geoms/sites that sit on the body or
    inertial frame) so that kinematics can skip a transform. Newton edits inertial frames after compiling
    (``body_ipos``/``body_iquat``; e.g. the Ant's torso has a rotated inertial frame yet stays flagged), and
    MuJoCo-C then silently uses the unrotated inertia while MuJoCo-Warp (no shortcuts) uses the right one.
    """
    same = mujoco.mjtSameFrame
    tol = 1e-9

    def at(pos: np.ndarray, quat: np.ndarray, ref_pos: np.ndarray, ref_quat: np.ndarray) -> tuple[np.ndarray, ...]:
        pos_ok = np.abs(pos - ref_pos).max(-1) < tol
        rot_ok = np.minimum(np.abs(quat - ref_quat).max(-1), np.abs(quat + ref_quat).max(-1)) < tol
        return pos_ok, rot_ok

    zero, ident = np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
    fixed = 0
    body_pos_ok, body_rot_ok = at(m.body_ipos, m.body_iquat, zero, ident)
    for flags, pos, quat, owner in (
        (m.body_sameframe, m.body_ipos, m.body_iquat, None),
        (m.geom_sameframe, m.geom_pos, m.geom_quat, m.geom_bodyid),
        (m.site_sameframe, m.site_pos, m.site_quat, m.site_bodyid),
    ):
        on_body = at(pos, quat, zero, ident)
        on_inertia = (
            (body_pos_ok, body_rot_ok) if owner is None else at(pos, quat, m.body_ipos[owner], m.body_iquat[owner])
        )
        ok = {
            int(same.mjSAMEFRAME_NONE): np.ones(len(flags), bool),
            int(same.mjSAMEFRAME_BODY): on_body[0] & on_body[1],
            int(same.mjSAMEFRAME_BODYROT): on_body[1],
            int(same.mjSAMEFRAME_INERTIA): on_inertia[0] & on_inertia[1],
            int(same.mjSAMEFRAME_INERTIAROT): on_inertia[1],
        }
        bad = ~np.choose(flags.astype(int), [ok[k] for k in range(5)])
        flags[bad] = int(same.mjSAMEFRAME_NONE)
        fixed += int(bad.sum())
        if owner is None and bad.any():
            m.body_simple[bad] = 0
            m.dof_simplenum[:] = 0
    return fixed


def without_midphase(m: mujoco.MjModel) -> mujoco.MjModel:
    """``m`` with MuJoCo's midphase off. The midphase culls a body's geoms through a bounding-volume tree that the
    compiler builds in the body's inertial frame; Newton edits inertial frames after compiling (see
    :func:`fix_sameframe`), so the tree can sit turned against the geoms and cull real contacts: MuJoCo-C missed
    two of the G1's left sole capsules on the ground while MuJoCo-Warp (no midphase) saw them (docs/g1.md). The
    robots here hold at most a few geoms per body, so the midphase saved next to nothing."""
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_MIDPHASE)
    return m


def _layout(m: mujoco.MjModel, spec: int) -> dict[int, slice]:
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


class SolverMuJoCoCPU(SolverMuJoCo):
    """Newton's MuJoCo solver with MuJoCo-Warp's step replaced by batched MuJoCo-C steps (see the module docs).

    Args:
        model: The Newton model (CPU device).
        nthread: Threads of the rollout pool (None: :func:`default_nthread`); 1 steps on the calling thread.
        **kwargs: :class:`SolverMuJoCo`'s options; ``use_mujoco_cpu`` must be False and ``use_mujoco_contacts``
            True (MuJoCo-C finds its own contacts), ``separate_worlds`` is forced True.
    """

    def __init__(self, model: Model, *, nthread: int | None = None, **kwargs: Any) -> None:
        check_device(str(model.device))
        nthread = check_nthread(default_nthread() if nthread is None else nthread)
        self._pool: rollout.Rollout | None = None
        if kwargs.pop("use_mujoco_cpu", False):
            raise UserError("physics=mujoco_cpu: use_mujoco_cpu must stay False (the batched C step replaces it)")
        if not kwargs.get("use_mujoco_contacts", True):
            raise UserError("physics=mujoco_cpu: needs use_mujoco_contacts=True (MuJoCo-C detects its own contacts)")
        kwargs["separate_worlds"] = True
        self._cpu_ready = False
        super().__init__(model, **kwargs)

        m = without_midphase(self.mj_model)
        self.nthread = nthread
        """Threads stepping the worlds (:meth:`set_nthread` changes it)."""
        self.nworld = int(self.mjw_data.nworld)
        self._state_layout = _layout(m, STATE_SPEC)
        control_spec = int(mujoco.mjtState.mjSTATE_CTRL | mujoco.mjtState.mjSTATE_QFRC_APPLIED)
        control_spec |= int(mujoco.mjtState.mjSTATE_XFRC_APPLIED)
        if m.nmocap:
            control_spec |= int(mujoco.mjtState.mjSTATE_MOCAP_POS | mujoco.mjtState.mjSTATE_MOCAP_QUAT)
        if m.neq:
            control_spec |= int(mujoco.mjtState.mjSTATE_EQ_ACTIVE)
        self._control_spec = control_spec
        self._control_layout = _layout(m, control_spec)
        nstate = mujoco.mj_stateSize(m, STATE_SPEC)
        ncontrol = mujoco.mj_stateSize(m, control_spec)
        self._state = np.zeros((self.nworld, nstate))  # inputs of a step, float64 as MuJoCo-C computes
        self._control = np.zeros((self.nworld, 1, ncontrol))
        self._next = np.zeros((self.nworld, 1, nstate))  # rollout's output
        self._warmstart = np.zeros((self.nworld, m.nv))  # every solve starts cold: see the module docs
        self._dt = float(m.opt.timestep)
        self._template = m  # Newton's model; with sensors added when a joint-wrench sensor needs them
        self._models: list[mujoco.MjModel] = [m] * self.nworld
        self._stepper: worlds.WorldStepper | None = None  # one model per thread when the worlds' models differ
        self._patchable = False  # the worlds' models differ in array fields only
        self._patch: tuple[mujoco.MjModel, dict[str, np.ndarray]] | None = None  # (base, per-world fields) then
        self._datas: list[mujoco.MjData] = []
        self._sensordata: np.ndarray | None = None  # rollout's sensor output, (nworld, 1, nsensordata)
        self._wrench_adr: np.ndarray | None = None
        self._wrench_cols = np.zeros((0, 10), dtype=np.int64)  # sensordata columns: force, torque, quaternion
        self._wrench_names: list[str] = []
        self._contact_names: list[str] = []
        self._contact_cols: np.ndarray | None = None  # (bodies, 4) sensordata columns: found, net force
        self.contact_bodies = np.zeros(0, dtype=np.int64)
        self._contact_shape = np.zeros((0, 0), dtype=np.int32)
        self._ground_shape = np.zeros(0, dtype=np.int32)
        self._wrench_newton = np.zeros((0, 0), dtype=np.int32)
        self.set_nthread(nthread)
        self.use_warp_step = False
        """Step with MuJoCo-Warp instead (same env, same process: for side-by-side benchmarks)."""
        self._cpu_ready = True
        self._hfields = self._hfield_geoms()
        self._place_hfields()
        self._sync_models()

    @property
    def reports_wrenches(self) -> bool:
        """Whether the worlds carry joint-wrench sensors (:meth:`body_wrenches`)."""
        return self._wrench_adr is not None

    @property
    def reports_contacts(self) -> bool:
        """Whether the worlds carry contact sensors (:meth:`body_contact_forces`)."""
        return self._contact_cols is not None

    def set_nthread(self, nthread: int) -> None:
        """Step on ``nthread`` threads from now on (1: on the calling thread)."""
        check_nthread(nthread)
        self._make_threads(nthread)
        self._build_stepper()

    def _make_threads(self, nthread: int) -> None:
        """A fresh rollout pool and one scratch ``MjData`` per thread, for the current template model."""
        if self._pool is not None:
            self._pool.close()
        self.nthread = nthread
        self._datas = [mujoco.MjData(self._template) for _ in range(nthread)]  # scratch, one per thread
        self._pool = rollout.Rollout(nthread=nthread if nthread > 1 else 0)

    ##
    # Model
    ##

    def _init_actuators(self, model: Model, spec: Any, *args: Any, **kwargs: Any) -> int:
        self._mj_spec = spec  # the spec Newton compiles ``mj_model`` from; sensors are added to it (``_recompile``)
        return super()._init_actuators(model, spec, *args, **kwargs)

    def _add_wrench_sensors(self) -> None:
        """Rebuild the MuJoCo-C model with a site at each body's centre of mass (axes: its principal axes) and
        force, torque and world-orientation sensors there, so ``rollout``'s sensor data carries ``cfrc_int``.

        MuJoCo's force/torque sensors are the interaction wrench of the site's body with its parent (``cfrc_int``
        moved to the site, in site axes); at the centre of mass, rotated to world axes, that is Newton's
        ``body_parent_f`` (force, torque about the centre of mass). Computed where MuJoCo-Warp computes
        ``cfrc_int``: in the step's forward pass, before integration.
        """
        base = self._check_sensors("a joint-wrench sensor")
        bodies = np.arange(1, base.nbody)
        for b in bodies:
            site = f"redline_wrench_{b}"
            self._mj_spec.body(base.body(int(b)).name).add_site(
                name=site, pos=base.body_ipos[b], quat=base.body_iquat[b]
            )
            for kind in ("FORCE", "TORQUE", "FRAMEQUAT"):
                sensor_type = getattr(mujoco.mjtSensor, f"mjSENS_{kind}")
                self._mj_spec.add_sensor(
                    name=f"{site}_{kind.lower()}", type=sensor_type, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=site
                )
        to_newton: Any = self.mjc_body_to_newton  # (nworld, nbody) Newton body of each MuJoCo body, -1: none
        self._wrench_newton = to_newton.numpy()[:, bodies]
        self._wrench_names = [f"redline_wrench_{b}" for b in bodies]
        self._recompile()

    def enable_contact_reports(self) -> None:
        """Rebuild the MuJoCo-C model with a contact sensor on every body with geoms (net force of all its
        contacts, world axes), so that :meth:`update_contacts` can hand Newton's contact sensors their forces."""
        base = self._check_sensors("a contact sensor")
        geoms: Any = self.mjc_geom_to_newton_shape  # (nworld, ngeom) Newton shape of each MuJoCo geom, -1: none
        shapes = geoms.numpy()
        ground = [g for g in range(base.ngeom) if base.geom_bodyid[g] == 0 and (shapes[:, g] >= 0).all()]
        if not ground:
            raise UserError("physics=mujoco_cpu: contact reports need a static collision shape (a ground)")
        bodies = [b for b in range(1, base.nbody) if base.body_geomnum[b] > 0]
        found_force = (1 << int(mujoco.mjtConDataField.mjCONDATA_FOUND)) | (
            1 << int(mujoco.mjtConDataField.mjCONDATA_FORCE)
        )
        netforce = 3  # the contact sensor's reduce="netforce": one net force over all contacts, world axes
        for b in bodies:
            self._mj_spec.add_sensor(
                name=f"redline_contact_{b}",
                type=mujoco.mjtSensor.mjSENS_CONTACT,
                objtype=mujoco.mjtObj.mjOBJ_BODY,
                objname=base.body(b).name,
                intprm=[found_force, netforce, 1],
            )
        self._contact_names = [f"redline_contact_{b}" for b in bodies]
        self.contact_bodies = np.array(bodies)
        """MuJoCo bodies whose net contact force is reported (:meth:`body_contact_forces`)."""
        self._contact_shape = shapes[:, base.body_geomadr[bodies]]  # (nworld, bodies): a shape of each body
        self._ground_shape = shapes[:, ground[0]]  # (nworld,): the other side of every reported contact
        self._recompile()

    def _check_sensors(self, user: str) -> mujoco.MjModel:
        base = self.mj_model
        if base.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_SENSOR:
            raise UserError(f"physics=mujoco_cpu: {user} needs MuJoCo sensors (disable_sensors=False)")
        return base

    def _recompile(self) -> None:
        """Compile the spec with the sensors added so far; every world steps that model from now on."""
        base = self.mj_model
        m = without_midphase(self._mj_spec.compile())
        # Newton adjusts the compiled model (inertial frames, damping ratios, constants): take those values over
        for name in dir(base):
            value = getattr(base, name, None)
            if isinstance(value, np.ndarray) and not name.startswith(("_", "site_", "sensor_", "name_")):
                target = getattr(m, name, None)
                if isinstance(target, np.ndarray) and target.flags.writeable and target.shape == value.shape:
                    target[...] = value
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
        self._template = m
        self._sensordata = np.zeros((self.nworld, 1, m.nsensordata))
        self._models = [m] * self.nworld
        self._make_threads(self.nthread)
        self._sync_models()  # builds the stepper for the new models, once

    def notify_model_changed(self, flags: ModelFlags | int) -> None:
        super().notify_model_changed(flags)
        if self._cpu_ready:
            self._place_hfields()
            self._sync_models()

    def _hfield_geoms(self) -> list[tuple[int, int, float]]:
        """``[(MuJoCo geom, Newton shape, lowest height [m])]`` of every heightfield."""
        geoms = np.flatnonzero(self.mj_model.geom_type == int(mujoco.mjtGeom.mjGEOM_HFIELD))
        if not len(geoms):
            return []
        mapping: Any = self.mjc_geom_to_newton_shape
        sources: Any = self.model.shape_source
        shapes = mapping.numpy()[0]
        return [(int(g), int(shapes[g]), float(sources[int(shapes[g])].min_z)) for g in geoms]

    def _place_hfields(self) -> None:
        """Put each heightfield geom where Newton's shape is. Newton builds a heightfield's MuJoCo geom with its origin
        lowered to the field's lowest height (MuJoCo's elevations start at 0), but its geom-property update writes
        the shape's own origin back into ``geom_pos``, which raises the field by ``-min_z`` (0.82 m on the rough
        terrain) for every engine that collides with MuJoCo's geom (MuJoCo-C here; MuJoCo-Warp with MuJoCo's
        contacts). Idempotent; run after every update."""
        if not self._hfields:
            return
        pos = self.mjw_model.geom_pos.numpy()  # (nworld, ngeom, 3): a view of host memory
        transforms = cast(Any, self.model.shape_transform).numpy()
        for geom, shape, min_z in self._hfields:
            pos[:, geom, 2] = transforms[shape][2] + min_z

    def _sync_models(self) -> None:
        """Copy every world's row of the per-world ``mjw_model`` fields into its ``MjModel``; worlds share one
        ``MjModel`` until some field differs between them."""
        rows: list[tuple[Any, str, np.ndarray]] = []  # (MjModel or MjOption getter, field, (nworld, ...) values)
        for name in MODEL_FIELDS:
            if not (self._template is not self.mj_model and name.startswith("site_")):  # sites were added
                rows += self._rows(self.mjw_model, name, self._template, "model")
        for name in OPTION_FIELDS:
            rows += self._rows(self.mjw_model.opt, name, self._template.opt, "opt")
        varies = any(not (values == values[:1]).all() for _, _, values in rows)
        options_vary = any(where == "opt" and not (values == values[:1]).all() for where, _, values in rows)
        self._patchable = varies and not options_vary  # solver options are a struct: worlds must share them
        self._patch = None
        if self._patchable and worlds.library()[0] is not None:
            self._patch = self._world_values(rows)
            self._models = [self._patch[0]] * self.nworld
            self._build_stepper()
            return
        if varies and self._models[-1] is self._models[0] and self.nworld > 1:
            self._models = [copy.copy(self._template) for _ in range(self.nworld)]
        targets = self._models if varies else [self._models[0]]
        for w, m in enumerate(targets):
            self._write_rows(m, rows, w)
            fix_sameframe(m)
        if not varies:
            self._models = [targets[0]] * self.nworld
        self._build_stepper()

    @staticmethod
    def _write_rows(m: mujoco.MjModel, rows: list[tuple[Any, str, np.ndarray]], w: int) -> None:
        """Write world ``w``'s row of each per-world field in ``rows`` into ``m``."""
        for where, name, values in rows:
            holder = m if where == "model" else m.opt
            target = getattr(holder, name)
            if isinstance(target, np.ndarray):
                target[...] = values[w].reshape(target.shape)
            else:
                setattr(holder, name, type(target)(values[w].reshape(())))

    def _world_values(self, rows: list[tuple[Any, str, np.ndarray]]) -> tuple[mujoco.MjModel, dict[str, np.ndarray]]:
        """``(base, {field: (nworld, ...) values})``: the worlds' models are ``base`` with each field replaced by
        the world's row; only the fields that differ between worlds are listed. Built through one scratch model,
        never one model per world: a model holding a large heightfield (the rough terrain: megabytes) would cost
        its size per world."""
        scratch = copy.copy(self._template)
        flags = {name: getattr(self._template, name).copy() for name in SAMEFRAME_FIELDS}
        names = [name for where, name, _ in rows if where == "model"] + list(SAMEFRAME_FIELDS)
        per_world: dict[str, list[np.ndarray]] = {name: [] for name in names}
        for w in range(self.nworld):
            self._write_rows(scratch, rows, w)
            for name, value in flags.items():
                getattr(scratch, name)[...] = value  # fix_sameframe only clears flags: start from the compiled ones
            fix_sameframe(scratch)
            for name in names:
                per_world[name].append(getattr(scratch, name).copy())
        values = {name: np.stack(v) for name, v in per_world.items()}
        return scratch, {name: v for name, v in values.items() if v.size and not (v == v[:1]).all()}

    def world_model(self, w: int) -> mujoco.MjModel:
        """World ``w``'s MuJoCo-C model (built on demand when the worlds share one patched model per thread)."""
        if self._patch is None:
            return self._models[w]
        base, values = self._patch
        m = copy.copy(base)
        for name, v in values.items():
            getattr(m, name)[...] = v[w].reshape(getattr(m, name).shape)
        return m

    def _build_stepper(self) -> None:
        """Step with one model per thread, patched per world (:mod:`redline.physics.worlds`), when the worlds'
        models differ only in array fields and the C loop is available; else rollout with the per-world models."""
        self._stepper = None
        if self._patch is not None:
            lib, _ = worlds.library()
            assert lib is not None
            self._stepper = worlds.WorldStepper.from_values(lib, *self._patch, self.nthread)

    def _rows(self, source: Any, name: str, target: Any, where: str) -> list[tuple[Any, str, np.ndarray]]:
        """``[(where, name, values (nworld, ...))]`` when ``source.name`` is a per-world array that ``target`` has
        with the same number of values per world, else ``[]``."""
        array = getattr(source, name, None)
        if not isinstance(array, wp.array) or not hasattr(target, name) or array.shape[0] != self.nworld:
            return []
        values = array.numpy().reshape(self.nworld, -1)
        current = getattr(target, name)
        if np.size(current) != values.shape[1]:
            logger.debug("mujoco_cpu: %s.%s has another layout in MuJoCo-C; not carried", where, name)
            return []
        return [(where, name, values)]

    ##
    # Step
    ##

    def _mujoco_warp_step(self) -> None:
        """One MuJoCo-C ``mj_step`` per world on the rollout pool, in place of MuJoCo-Warp's step."""
        if self.use_warp_step:
            super()._mujoco_warp_step()
            return
        assert self._pool is not None
        d = self.mjw_data
        n = self.nworld
        s, c = self._state_layout, self._control_layout
        bits = mujoco.mjtState
        qpos, qvel, act = d.qpos.numpy(), d.qvel.numpy(), d.act.numpy()  # views of host memory
        self._state[:, s[int(bits.mjSTATE_QPOS)]] = qpos
        self._state[:, s[int(bits.mjSTATE_QVEL)]] = qvel
        if act.size:
            self._state[:, s[int(bits.mjSTATE_ACT)]] = act
        control = self._control[:, 0]
        control[:, c[int(bits.mjSTATE_CTRL)]] = d.ctrl.numpy()
        control[:, c[int(bits.mjSTATE_QFRC_APPLIED)]] = d.qfrc_applied.numpy()
        control[:, c[int(bits.mjSTATE_XFRC_APPLIED)]] = d.xfrc_applied.numpy().reshape(n, -1)
        if int(bits.mjSTATE_MOCAP_POS) in c:
            control[:, c[int(bits.mjSTATE_MOCAP_POS)]] = d.mocap_pos.numpy().reshape(n, -1)
            control[:, c[int(bits.mjSTATE_MOCAP_QUAT)]] = d.mocap_quat.numpy().reshape(n, -1)
        if int(bits.mjSTATE_EQ_ACTIVE) in c:
            control[:, c[int(bits.mjSTATE_EQ_ACTIVE)]] = d.eq_active.numpy()
        self._set_timestep(float(self.mjw_model.opt.timestep.numpy()[0]))
        if self._stepper is not None:
            sensors = self._sensordata if self._sensordata is not None else np.zeros((n, 0))
            self._stepper.step(self._control_spec, self._state, self._control, self._next, sensors)
        else:
            self._rollout_step()
        out = self._next[:, 0]
        qpos[...] = out[:, s[int(bits.mjSTATE_QPOS)]]
        qvel[...] = out[:, s[int(bits.mjSTATE_QVEL)]]
        if act.size:
            act[...] = out[:, s[int(bits.mjSTATE_ACT)]]
        d.time.numpy()[...] = out[:, s[int(bits.mjSTATE_TIME)]].reshape(d.time.shape)
        self._state[:, s[int(bits.mjSTATE_TIME)]] = out[:, s[int(bits.mjSTATE_TIME)]]

    def reload_carried_data(self) -> None:
        """Take ``mjw_data.time`` into the next step's input again after it was written from outside (a resumed
        run's saved state): the step reads ``qpos``/``qvel``/``act``/controls from ``mjw_data`` but keeps the time
        from its own last output."""
        if self.use_warp_step:
            return
        time = self._state_layout[int(mujoco.mjtState.mjSTATE_TIME)]
        self._state[:, time] = self.mjw_data.time.numpy().reshape(self.nworld, -1)

    def _rollout_step(self) -> None:
        """The step on ``mujoco.rollout`` with a model per world (shared while the worlds' models agree)."""
        assert self._pool is not None
        self._pool.rollout(
            self._models,
            self._datas,
            self._state,
            self._control,
            control_spec=self._control_spec,
            skip_checks=True,
            nstep=1,
            initial_warmstart=self._warmstart,
            state=self._next,
            sensordata=self._sensordata,
            chunk_size=None,
        )

    def _set_timestep(self, dt: float) -> None:
        if dt == self._dt:
            return
        stepping = self._stepper.models if self._stepper is not None else []
        for m in {id(m): m for m in [*self._models, *stepping]}.values():
            m.opt.timestep = dt
        self._dt = dt

    def step(self, state_in: State, state_out: State, control: Any, contacts: Contacts | None, dt: float) -> None:
        if getattr(state_out, "body_qdd", None) is not None:
            raise UserError("physics=mujoco_cpu does not fill Newton's body_qdd yet (an IMU/PVA sensor asks for it)")
        if getattr(getattr(state_out, "mujoco", None), "qfrc_actuator", None) is not None:
            raise UserError("physics=mujoco_cpu does not fill Newton's mujoco.qfrc_actuator yet")
        wants_wrenches = getattr(state_out, "body_parent_f", None) is not None
        if wants_wrenches and not self.reports_wrenches and not self.use_warp_step:
            self._add_wrench_sensors()  # a joint-wrench sensor exists: from this step on
        super().step(state_in, state_out, control, contacts, dt)

    def body_wrenches(self) -> np.ndarray:
        """``(nworld, nbody - 1, 6)``: each MuJoCo body's wrench from its parent in the last step (force [N],
        torque about its centre of mass [N m], world axes), Newton's ``body_parent_f`` convention."""
        if self._wrench_adr is None or self._sensordata is None:
            raise RuntimeError("no joint-wrench sensors: nothing asked for body_parent_f")
        sensors = self._sensordata[:, 0]  # (nworld, nsensordata), the step's forward pass
        wrench = sensors[:, self._wrench_cols[:, :6]].reshape(self.nworld, -1, 2, 3)  # site (principal) axes
        quat = sensors[:, self._wrench_cols[:, 6:]]  # (nworld, bodies, 4): site axes -> world, (w, x, y, z)
        return _rotate(quat[:, :, None], wrench).reshape(self.nworld, -1, 6)

    def _update_newton_state(self, model: Model, state: State, mj_data: Any, state_prev: State) -> None:
        super()._update_newton_state(model, state, mj_data, state_prev)
        if state.body_parent_f is None or self.use_warp_step:
            return
        rows = self._wrench_newton >= 0
        state.body_parent_f.numpy()[self._wrench_newton[rows]] = self.body_wrenches()[rows]

    def body_contact_forces(self) -> np.ndarray:
        """``(nworld, len(contact_bodies), 3)``: the net contact force on each body in the last step [N], world
        axes; zeros for a body without contacts."""
        if self._contact_cols is None or self._sensordata is None:
            raise RuntimeError("no contact sensors: enable_contact_reports() was not called")
        data = self._sensordata[:, 0][:, self._contact_cols]
        return -data[..., 1:4] * (data[..., :1] > 0)  # the sensor reports the force the body exerts

    def update_contacts(self, contacts: Contacts, state: State | None = None) -> None:
        """Fill ``contacts`` with one contact per (world, body in contact): shape0 a shape of the body, shape1 the
        ground, ``force`` the net contact force on the body [N] (world axes), the normal world +z.

        What Newton's contact sensor derives from them per body is exact for the net force (``net_forces_w``,
        air time, contact thresholds); the normal/friction split assumes flat ground, contact positions are not
        reported (zeros). Needs :meth:`enable_contact_reports` before the step.
        """
        if self.use_warp_step:
            super().update_contacts(contacts, state)
            return
        if self._contact_cols is None or self._sensordata is None:
            raise UserError("physics=mujoco_cpu: contact reports were not enabled before the step")
        found = self._sensordata[:, 0][:, self._contact_cols[:, 0]] > 0  # (nworld, bodies)
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
        force.numpy()[:k, :3] = self.body_contact_forces()[world, body]
        force.numpy()[:k, 3:] = 0.0

    def close(self) -> None:
        """Stop the rollout thread pool."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        self._cpu_ready = False


class NewtonMuJoCoCPUManager(NewtonMJWarpManager):
    """Isaac Lab's MuJoCo-Warp manager building :class:`SolverMuJoCoCPU` (``physics=mujoco_cpu``)."""

    @classmethod
    def _create_solver(cls, model: Model, solver_cfg: Any) -> SolverMuJoCo:
        check_device(str(PhysicsManager._device or model.device))
        kwargs = cls._filter_solver_kwargs(SolverMuJoCo, solver_cfg)
        kwargs.pop("ls_parallel", None)
        return SolverMuJoCoCPU(model, nthread=solver_cfg.nthread, **kwargs)

    @classmethod
    def _supports_cuda_graph_capture(cls) -> bool:
        return False

    @classmethod
    def step(cls) -> None:
        solver = NewtonManager._solver
        if NewtonManager._report_contacts and isinstance(solver, SolverMuJoCoCPU) and not solver.reports_contacts:
            solver.enable_contact_reports()  # a contact sensor exists (registered after the solver was built)
        super().step()
