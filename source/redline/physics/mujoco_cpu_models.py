"""Each world's MuJoCo-C model for :mod:`redline.physics.mujoco_cpu`, kept equal to Newton's per-world values.

Newton compiles one ``MjModel`` (``SolverMuJoCo.mj_model``) and keeps the values that differ per world (masses,
friction, gains, solver parameters, ...) in the MuJoCo-Warp arrays ``mjw_model`` of shape ``(nworld, ...)``.
:class:`WorldModels` copies each world's row into a MuJoCo-C model after every model change: one model shared by all
worlds while their rows agree, else one patched model per thread (:mod:`redline.physics.worlds`) or one per world.
The functions below repair what Newton's edits after compiling leave inconsistent for MuJoCo-C (frame shortcuts, the
midphase tree, heightfield origins) and recompile the spec when sensors are added.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import mujoco
import numpy as np
import warp as wp

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


def recompiled(spec: Any, base: mujoco.MjModel) -> mujoco.MjModel:
    """``spec`` compiled again (with the sensors added to it), midphase off, carrying the values Newton wrote into
    ``base`` after compiling it (inertial frames, damping ratios, constants)."""
    m = without_midphase(spec.compile())
    for name in dir(base):
        value = getattr(base, name, None)
        if isinstance(value, np.ndarray) and not name.startswith(("_", "site_", "sensor_", "name_")):
            target = getattr(m, name, None)
            if isinstance(target, np.ndarray) and target.flags.writeable and target.shape == value.shape:
                target[...] = value
    return m


##
# Heightfields
##


def hfield_geoms(m: mujoco.MjModel, geom_to_shape: Any, shape_source: Any) -> list[tuple[int, int, float]]:
    """``[(MuJoCo geom, Newton shape, lowest height [m])]`` of every heightfield of ``m``; ``geom_to_shape`` is
    Newton's ``mjc_geom_to_newton_shape``, ``shape_source`` its model's ``shape_source``."""
    geoms = np.flatnonzero(m.geom_type == int(mujoco.mjtGeom.mjGEOM_HFIELD))
    if not len(geoms):
        return []
    shapes = geom_to_shape.numpy()[0]
    return [(int(g), int(shapes[g]), float(shape_source[int(shapes[g])].min_z)) for g in geoms]


def place_hfields(hfields: list[tuple[int, int, float]], mjw_model: Any, shape_transform: Any) -> None:
    """Put each heightfield geom where Newton's shape is. Newton builds a heightfield's MuJoCo geom with its origin
    lowered to the field's lowest height (MuJoCo's elevations start at 0), but its geom-property update writes
    the shape's own origin back into ``geom_pos``, which raises the field by ``-min_z`` (0.82 m on the rough
    terrain) for every engine that collides with MuJoCo's geom (MuJoCo-C here; MuJoCo-Warp with MuJoCo's
    contacts). Idempotent; run after every update."""
    if not hfields:
        return
    pos = mjw_model.geom_pos.numpy()  # (nworld, ngeom, 3): a view of host memory
    transforms = shape_transform.numpy()
    for geom, shape, min_z in hfields:
        pos[:, geom, 2] = transforms[shape][2] + min_z


##
# The worlds' models
##

Rows = list[tuple[str, str, np.ndarray]]
"""``[(where, field, values (nworld, ...))]``: ``where`` is ``"model"`` (an ``MjModel`` field) or ``"opt"``."""


def write_rows(m: mujoco.MjModel, rows: Rows, w: int) -> None:
    """Write world ``w``'s row of each per-world field in ``rows`` into ``m``."""
    for where, name, values in rows:
        holder = m if where == "model" else m.opt
        target = getattr(holder, name)
        if isinstance(target, np.ndarray):
            target[...] = values[w].reshape(target.shape)
        else:
            setattr(holder, name, type(target)(values[w].reshape(())))


class WorldModels:
    """The MuJoCo-C model of each of ``nworld`` worlds, all ``template`` with the world's row of ``mjw_model``.

    Args:
        template: Newton's compiled model (:func:`without_midphase`).
        nworld: The number of worlds.
    """

    def __init__(self, template: mujoco.MjModel, nworld: int) -> None:
        self.nworld = nworld
        self.template = template
        """The model every world's is made from (recompiled with sensors by :meth:`set_template`)."""
        self.models: list[mujoco.MjModel] = [template] * nworld
        """One model per world for ``mujoco.rollout`` (the same object while the worlds' models agree)."""
        self.patch: tuple[mujoco.MjModel, dict[str, np.ndarray]] | None = None
        """``(base, {field: (nworld, ...) values})`` when the worlds share one model patched per world per thread
        (they differ in array fields only and the C loop of :mod:`redline.physics.worlds` is available)."""

    def set_template(self, m: mujoco.MjModel) -> None:
        """Make every world's model from ``m`` from now on (:meth:`sync` fills in the per-world values)."""
        self.template = m
        self.models = [m] * self.nworld

    def sync(self, mjw_model: Any, carry_sites: bool) -> None:
        """Copy every world's row of the per-world ``mjw_model`` fields into its model; worlds share one model
        until some field differs between them. ``carry_sites``: False once sites were added to the template."""
        rows: Rows = []
        for name in MODEL_FIELDS:
            if carry_sites or not name.startswith("site_"):
                rows += self._rows(mjw_model, name, self.template, "model")
        for name in OPTION_FIELDS:
            rows += self._rows(mjw_model.opt, name, self.template.opt, "opt")
        varies = any(not (values == values[:1]).all() for _, _, values in rows)
        options_vary = any(where == "opt" and not (values == values[:1]).all() for where, _, values in rows)
        patchable = varies and not options_vary  # solver options are a struct: worlds must share them
        self.patch = None
        if patchable and worlds.library()[0] is not None:
            self.patch = self._world_values(rows)
            self.models = [self.patch[0]] * self.nworld
            return
        if varies and self.models[-1] is self.models[0] and self.nworld > 1:
            self.models = [copy.copy(self.template) for _ in range(self.nworld)]
        targets = self.models if varies else [self.models[0]]
        for w, m in enumerate(targets):
            write_rows(m, rows, w)
            fix_sameframe(m)
        if not varies:
            self.models = [targets[0]] * self.nworld

    def _world_values(self, rows: Rows) -> tuple[mujoco.MjModel, dict[str, np.ndarray]]:
        """``(base, {field: (nworld, ...) values})``: the worlds' models are ``base`` with each field replaced by
        the world's row; only the fields that differ between worlds are listed. Built through one scratch model,
        never one model per world: a model holding a large heightfield (the rough terrain: megabytes) would cost
        its size per world."""
        scratch = copy.copy(self.template)
        flags = {name: getattr(self.template, name).copy() for name in SAMEFRAME_FIELDS}
        names = [name for where, name, _ in rows if where == "model"] + list(SAMEFRAME_FIELDS)
        per_world: dict[str, list[np.ndarray]] = {name: [] for name in names}
        for w in range(self.nworld):
            write_rows(scratch, rows, w)
            for name, value in flags.items():
                getattr(scratch, name)[...] = value  # fix_sameframe only clears flags: start from the compiled ones
            fix_sameframe(scratch)
            for name in names:
                per_world[name].append(getattr(scratch, name).copy())
        values = {name: np.stack(v) for name, v in per_world.items()}
        return scratch, {name: v for name, v in values.items() if v.size and not (v == v[:1]).all()}

    def world_model(self, w: int) -> mujoco.MjModel:
        """World ``w``'s MuJoCo-C model (built on demand when the worlds share one patched model per thread)."""
        if self.patch is None:
            return self.models[w]
        base, values = self.patch
        m = copy.copy(base)
        for name, v in values.items():
            getattr(m, name)[...] = v[w].reshape(getattr(m, name).shape)
        return m

    def _rows(self, source: Any, name: str, target: Any, where: str) -> Rows:
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
