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

Here: the solver (its construction, threads and step) and Isaac Lab's manager; beside it, by concern,
:mod:`.mujoco_cpu_models` (each world's ``MjModel``), :mod:`.mujoco_cpu_io` (a step's inputs and outputs),
:mod:`.mujoco_cpu_sensors` (the sensors added), :mod:`.worlds` (the C loop over patched models).
"""

from __future__ import annotations

from typing import Any, cast

import mujoco
import numpy as np
import warp as wp
from isaaclab.physics import PhysicsManager
from isaaclab_newton.physics import NewtonManager
from isaaclab_newton.physics.mjwarp_manager import NewtonMJWarpManager
from mujoco import rollout
from newton import Contacts, Model, ModelFlags, State
from newton._src.solvers.mujoco.kernels import convert_mj_coords_to_warp_kernel
from newton.solvers import SolverMuJoCo

from redline.errors import UserError
from redline.host import cores_per_process
from redline.physics import launch_cache, worlds
from redline.physics.mujoco_cpu_io import StepArrays
from redline.physics.mujoco_cpu_models import WorldModels, hfield_geoms, place_hfields, recompiled, without_midphase
from redline.physics.mujoco_cpu_sensors import AddedSensors
from redline.physics.mujoco_cpu_telemetry import TelemetryRefresh

SENSOR_BIT = int(mujoco.mjtDisableBit.mjDSBL_SENSOR)
"""MuJoCo's flag that skips the sensors in a step."""


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
        self.step_arrays = StepArrays(m, self.nworld)
        """A step's inputs and outputs, gathered from and written back to ``mjw_data``."""
        self._dt = float(m.opt.timestep)
        self.world_models = WorldModels(m, self.nworld)
        """Each world's MuJoCo-C model (Newton's; recompiled with sensors when a sensor needs them)."""
        self.added_sensors = AddedSensors()
        """The joint-wrench and contact sensors added to MuJoCo-C's model, and rollout's sensor data."""
        self._stepper: worlds.WorldStepper | None = None  # one model per thread when the worlds' models differ
        self._datas: list[mujoco.MjData] = []
        self.set_nthread(nthread)
        self.use_warp_step = False
        """Step with MuJoCo-Warp instead (same env, same process: for side-by-side benchmarks)."""
        self.steps_per_call = 1
        """Physics steps each :meth:`step` takes (the manager sets it while it fuses an env step's decimation)."""
        self._sensors_on = True  # MuJoCo's sensors computed in each step (:meth:`_set_sensors`)
        self.telemetry = TelemetryRefresh()
        """The implicit drives' torque telemetry, refreshed before the last physics step of an env step the manager
        owns (:mod:`.mujoco_cpu_telemetry`)."""
        self._state_in: State | None = None  # the input state of the step in progress
        self.fuse_steps = True
        """With ``fuse_decimation``: an env step's physics steps in one call (False: one call each, through Newton
        as Isaac Lab's own physics-owned loop takes them; the same results, for the test and side-by-side runs)."""
        self._cpu_ready = True
        self._hfields = hfield_geoms(self.mj_model, self.mjc_geom_to_newton_shape, self.model.shape_source)
        self._place_hfields()
        self._sync_models()

    @property
    def reports_wrenches(self) -> bool:
        """Whether the worlds carry joint-wrench sensors (:meth:`body_wrenches`)."""
        return self.added_sensors.reports_wrenches

    @property
    def reports_contacts(self) -> bool:
        """Whether the worlds carry contact sensors (:meth:`body_contact_forces`)."""
        return self.added_sensors.reports_contacts

    @property
    def contact_bodies(self) -> np.ndarray:
        """MuJoCo bodies whose net contact force is reported (:meth:`body_contact_forces`)."""
        return self.added_sensors.contact_bodies

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
        self._datas = [mujoco.MjData(self.world_models.template) for _ in range(nthread)]  # scratch, one per thread
        self._pool = rollout.Rollout(nthread=nthread if nthread > 1 else 0)

    ##
    # Model
    ##

    def _init_actuators(self, model: Model, spec: Any, *args: Any, **kwargs: Any) -> int:
        self._mj_spec = spec  # the spec Newton compiles ``mj_model`` from; sensors are added to it (``_recompile``)
        return super()._init_actuators(model, spec, *args, **kwargs)

    def _add_wrench_sensors(self) -> None:
        """Rebuild the MuJoCo-C model with joint-wrench sensors (:meth:`AddedSensors.add_wrenches`)."""
        to_newton: Any = self.mjc_body_to_newton  # (nworld, nbody) Newton body of each MuJoCo body, -1: none
        self.added_sensors.add_wrenches(self._mj_spec, self.mj_model, to_newton.numpy())
        self._recompile()

    def enable_contact_reports(self) -> None:
        """Rebuild the MuJoCo-C model with a contact sensor on every body with geoms (net force of all its
        contacts, world axes), so that :meth:`update_contacts` can hand Newton's contact sensors their forces."""
        geoms: Any = self.mjc_geom_to_newton_shape  # (nworld, ngeom) Newton shape of each MuJoCo geom, -1: none
        self.added_sensors.add_contacts(self._mj_spec, self.mj_model, geoms.numpy())
        self._recompile()

    def _recompile(self) -> None:
        """Compile the spec with the sensors added so far; every world steps that model from now on."""
        m = recompiled(self._mj_spec, self.mj_model)
        self.added_sensors.locate(m, self.nworld)
        self.world_models.set_template(m)
        self._make_threads(self.nthread)
        self._sync_models()  # builds the stepper for the new models, once

    def notify_model_changed(self, flags: ModelFlags | int) -> None:
        super().notify_model_changed(flags)
        if self._cpu_ready:
            self._place_hfields()
            self._sync_models()

    def _place_hfields(self) -> None:
        """Put each heightfield geom where Newton's shape is (:func:`~.mujoco_cpu_models.place_hfields`)."""
        place_hfields(self._hfields, self.mjw_model, cast(Any, self.model.shape_transform))

    def _sync_models(self) -> None:
        """Copy every world's row of the per-world ``mjw_model`` fields into its ``MjModel``, then step them."""
        models = self.world_models
        models.sync(self.mjw_model, carry_sites=models.template is self.mj_model)  # else sites were added
        self._build_stepper()

    def world_model(self, w: int) -> mujoco.MjModel:
        """World ``w``'s MuJoCo-C model (built on demand when the worlds share one patched model per thread)."""
        return self.world_models.world_model(w)

    def _build_stepper(self) -> None:
        """Step with one model per thread, patched per world (:mod:`redline.physics.worlds`), when the worlds'
        models differ only in array fields and the C loop is available; else rollout with the per-world models."""
        self._stepper = None
        patch = self.world_models.patch
        if patch is not None:
            lib, _ = worlds.library()
            assert lib is not None
            self._stepper = worlds.WorldStepper.from_values(lib, *patch, self.nthread)

    ##
    # Step
    ##

    def _mujoco_warp_step(self) -> None:
        """``steps_per_call`` MuJoCo-C ``mj_step`` per world, in place of MuJoCo-Warp's step."""
        if self.use_warp_step:
            super()._mujoco_warp_step()
            return
        assert self._pool is not None
        arrays = self.step_arrays
        arrays.gather(self.mjw_data)
        self._set_timestep(float(self.mjw_model.opt.timestep.numpy()[0]))
        n = self.steps_per_call
        telemetry = self.telemetry
        try:
            for k in range(n):  # constant controls: the same inputs Newton would write again
                if k:
                    arrays.carry()
                if telemetry.due():
                    if k:  # else Newton's input state already is this state
                        self._export_state()
                    telemetry.refresh()
                if n > 1:
                    self._set_sensors(k == n - 1)  # only the last step's sensor values are read
                self._step_once()
                telemetry.taken += 1
        finally:
            self._set_sensors(True)
        arrays.scatter(self.mjw_data)

    def _export_state(self) -> None:
        """The joint coordinates of Newton's input state of this step <- the state the C call holds now: a float32
        copy the telemetry reads (the C trajectory goes on from its float64 state; the step's output overwrites it).

        The joint half of Newton's ``_update_newton_state`` (its kernel and arguments; no forward kinematics, which
        nothing reads before the step's output replaces them)."""
        state = self._state_in
        assert state is not None
        self.step_arrays.scatter(self.mjw_data)
        model, d = self.model, self.mjw_data
        joints = model.joint_count // self.nworld
        dof_ref = getattr(getattr(model, "mujoco", None), "dof_ref", None)
        wp.launch(
            convert_mj_coords_to_warp_kernel,
            dim=(self.nworld, joints),
            inputs=[
                *(d.qpos, d.qvel, joints, model.joint_type, model.joint_q_start, model.joint_qd_start),
                *(model.joint_dof_dim, model.joint_child, model.joint_X_p, model.joint_X_c, model.body_com, dof_ref),
                *(model.body_flags, state.joint_q, state.joint_qd, self.mj_q_start, self.mj_qd_start),
            ],
            outputs=[state.joint_q, state.joint_qd],
            device=model.device,
        )

    def _step_once(self) -> None:
        """One ``mj_step`` per world from :attr:`step_arrays`' inputs into its outputs."""
        if self._stepper is not None:
            arrays = self.step_arrays
            sensors = self.added_sensors.data
            sensors = sensors if sensors is not None else np.zeros((self.nworld, 0))
            self._stepper.step(arrays.control_spec, arrays.state, arrays.control, arrays.next, sensors)
        else:
            self._rollout_step()

    def reload_carried_data(self) -> None:
        """Take ``mjw_data.time`` into the next step's input again after it was written from outside (a resumed
        run's saved state): the step reads ``qpos``/``qvel``/``act``/controls from ``mjw_data`` but keeps the time
        from its own last output."""
        if self.use_warp_step:
            return
        self.step_arrays.reload_time(self.mjw_data)

    def _rollout_step(self) -> None:
        """The step on ``mujoco.rollout`` with a model per world (shared while the worlds' models agree)."""
        assert self._pool is not None
        arrays = self.step_arrays
        self._pool.rollout(
            self.world_models.models,
            self._datas,
            arrays.state,
            arrays.control,
            control_spec=arrays.control_spec,
            skip_checks=True,
            nstep=1,
            initial_warmstart=arrays.warmstart,
            state=arrays.next,
            sensordata=self.added_sensors.data,
            chunk_size=None,
        )

    def _stepping_models(self) -> list[mujoco.MjModel]:
        """Every ``MjModel`` a step reads (each world's, or the stepper's one per thread), once each."""
        stepping = self._stepper.models if self._stepper is not None else []
        return list({id(m): m for m in [*self.world_models.models, *stepping]}.values())

    def _set_timestep(self, dt: float) -> None:
        if dt == self._dt:
            return
        for m in self._stepping_models():
            m.opt.timestep = dt
        self._dt = dt

    def _set_sensors(self, on: bool) -> None:
        """Compute MuJoCo's sensors in the next steps or not (``mjDSBL_SENSOR``: the dynamics are the same bits
        either way; skipped where a later step of the same call overwrites the values unread)."""
        if on == self._sensors_on:
            return
        stepped = self._stepper.models if self._stepper is not None else self._stepping_models()
        for m in stepped:  # the stepper's own copies only: the worlds' models (its source) keep their sensors
            m.opt.disableflags = m.opt.disableflags & ~SENSOR_BIT if on else m.opt.disableflags | SENSOR_BIT
        self._sensors_on = on

    def step(self, state_in: State, state_out: State, control: Any, contacts: Contacts | None, dt: float) -> None:
        if getattr(state_out, "body_qdd", None) is not None:
            raise UserError("physics=mujoco_cpu does not fill Newton's body_qdd yet (an IMU/PVA sensor asks for it)")
        if getattr(getattr(state_out, "mujoco", None), "qfrc_actuator", None) is not None:
            raise UserError("physics=mujoco_cpu does not fill Newton's mujoco.qfrc_actuator yet")
        wants_wrenches = getattr(state_out, "body_parent_f", None) is not None
        if wants_wrenches and not self.reports_wrenches and not self.use_warp_step:
            self._add_wrench_sensors()  # a joint-wrench sensor exists: from this step on
        self._state_in = state_in
        try:
            super().step(state_in, state_out, control, contacts, dt)
        finally:
            self._state_in = None

    ##
    # Sensors and contacts handed to Newton
    ##

    def body_wrenches(self) -> np.ndarray:
        """``(nworld, nbody - 1, 6)``: each MuJoCo body's wrench from its parent in the last step (force [N],
        torque about its centre of mass [N m], world axes), Newton's ``body_parent_f`` convention."""
        return self.added_sensors.wrenches()

    def _update_newton_state(self, model: Model, state: State, mj_data: Any, state_prev: State) -> None:
        super()._update_newton_state(model, state, mj_data, state_prev)
        if state.body_parent_f is None or self.use_warp_step:
            return
        to_newton = self.added_sensors.wrench_newton
        rows = to_newton >= 0
        state.body_parent_f.numpy()[to_newton[rows]] = self.body_wrenches()[rows]

    def body_contact_forces(self) -> np.ndarray:
        """``(nworld, len(contact_bodies), 3)``: the net contact force on each body in the last step [N], world
        axes; zeros for a body without contacts."""
        return self.added_sensors.contact_forces()

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
        self.added_sensors.fill_contacts(contacts)

    def close(self) -> None:
        """Stop the rollout thread pool; drop the recorded Warp launches (they hold this solver's arrays)."""
        launch_cache.clear()
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        self._cpu_ready = False


class NewtonMuJoCoCPUManager(NewtonMJWarpManager):
    """Isaac Lab's MuJoCo-Warp manager building :class:`SolverMuJoCoCPU` (``physics=mujoco_cpu``).

    With ``fuse_decimation`` it owns the env's decimation loop as Isaac Lab's Newton manager does for native
    actuators (:meth:`handles_decimation`: one :meth:`step` per env step) and, when nothing runs between the
    physics steps (no actuator adapter, no actuator or force callbacks, MuJoCo's own contacts), takes all of them in
    one batched C call: Newton's conversion kernels, its sensors and the scene update once per env step, not once
    per physics step.
    """

    @classmethod
    def _owns_decimation(cls) -> bool:
        """Whether ``fuse_decimation`` is on and no Newton actuator adapter runs between physics steps."""
        solver_cfg = getattr(PhysicsManager._cfg, "solver_cfg", None)
        return bool(getattr(solver_cfg, "fuse_decimation", False)) and NewtonManager._adapter is None

    @classmethod
    def _is_all_graphable(cls) -> bool:
        # Isaac Lab's test for "step() runs the whole decimation loop" (handles_decimation, step)
        return cls._owns_decimation() or super()._is_all_graphable()

    @classmethod
    def _simulate_full(cls) -> None:
        solver = NewtonManager._solver
        if not (cls._owns_decimation() and isinstance(solver, SolverMuJoCoCPU)):
            super()._simulate_full()
            return
        # the implicit drives' telemetry from the state before the last physics step, as Isaac Lab's loops have it
        solver.telemetry.begin(cls._decimation, cls._num_substeps, cls._republish)
        try:
            cls._simulate_owned(solver)
        finally:
            solver.telemetry.end()

    @classmethod
    def _simulate_owned(cls, solver: SolverMuJoCoCPU) -> None:
        """An env step's physics in one C call per substep when nothing runs between its physics steps (no
        actuator or force callbacks, MuJoCo's own contacts), else Isaac Lab's loop of one call per physics step."""
        fusable = not (cls._post_actuator_callbacks or cls._state_force_callbacks or cls._needs_collision_pipeline)
        if not (fusable and solver.fuse_steps):
            super()._simulate_full()
            return
        cls._stage_body_forces()
        solver.steps_per_call = cls._decimation
        try:
            cls._run_solver_substeps(None)  # num_substeps calls of decimation C steps each
        finally:
            solver.steps_per_call = 1
        cls._republish()
        cls._update_sensors(None)

    @classmethod
    def _republish(cls) -> None:
        """Isaac Lab's post-step callbacks (an articulation's user-ordered copies of the state)."""
        for callback in cls._post_step_callbacks:
            callback()

    @classmethod
    def _create_solver(cls, model: Model, solver_cfg: Any) -> SolverMuJoCo:
        check_device(str(PhysicsManager._device or model.device))
        if getattr(solver_cfg, "cache_launches", False):
            launch_cache.install()
        else:
            launch_cache.uninstall()
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
