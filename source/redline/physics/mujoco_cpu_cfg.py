"""Configs of the ``mujoco_cpu`` physics preset (light: no simulator import)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from isaaclab.utils import configclass
from isaaclab_newton.physics import MJWarpSolverCfg, NewtonCfg

PRESET_NAME = "mujoco_cpu"
"""The preset token: ``physics=mujoco_cpu``."""


def fuse_decimation_override(on: bool) -> str:
    """The override that turns :attr:`MuJoCoCPUSolverCfg.fuse_decimation` on or off."""
    return f"env.sim.physics.solver_cfg.fuse_decimation={'true' if on else 'false'}"


@configclass
class MuJoCoCPUSolverCfg(MJWarpSolverCfg):
    """MuJoCo's C engine, one ``MjData`` per env, stepped by ``mujoco.rollout`` on ``nthread`` threads.

    The other fields mean what they mean for MuJoCo-Warp; ``use_mujoco_contacts`` must stay True (MuJoCo-C finds
    its own contacts) and ``use_mujoco_cpu`` False (that is Newton's single-world CPU path, not this one).
    """

    class_type: Any = "redline.physics.mujoco_cpu:NewtonMuJoCoCPUManager"
    """Isaac Lab's MuJoCo-Warp manager, building :class:`redline.physics.mujoco_cpu.SolverMuJoCoCPU`."""

    nthread: int | None = None
    """Threads stepping the envs; None: this process's share of the cores it may use (its CPU affinity divided by
    the processes of a torchrun job on the node, :func:`redline.host.cores_per_process`)."""

    cache_launches: bool = True
    """Replay Warp's CPU kernel launches from their packed arguments when they repeat exactly (the same kernel,
    arrays and scalar bits), skipping ``wp.launch``'s Python argument packing: the same kernels on the same bytes,
    bitwise the same results (:mod:`redline.physics.launch_cache`). False: every launch through ``wp.launch``."""

    fuse_decimation: bool = False
    """Run an env step's ``decimation`` physics steps in one batched C call, the way Isaac Lab runs them when its
    physics owns the decimation loop (Newton with native actuators): actions and actuator targets are written once
    per env step, the physics steps ``decimation`` times, then Newton's state, its sensors and the scene (contact
    history, air time, finite-difference accelerations) update once, over the env step's dt. False (Isaac Lab's
    default for implicit actuators): every physics step goes through Newton and the scene. Needs no Newton
    actuator adapter (explicit actuators already take Isaac Lab's own loop), else it has no effect
    (docs/physics_cpu.md). The flat Go1 turns it on (docs/go1.md)."""


def mujoco_cpu_preset(mjwarp: NewtonCfg, nthread: int | None = None) -> NewtonCfg:
    """The ``mujoco_cpu`` twin of a task's MuJoCo-Warp preset: the same solver options, dt and substeps, MuJoCo's
    own contact detection (Newton's collision pipeline feeds MuJoCo-Warp only), no CUDA graph."""
    solver = mjwarp.solver_cfg
    if not isinstance(solver, MJWarpSolverCfg):
        raise TypeError(f"mujoco_cpu_preset expects a MuJoCo-Warp NewtonCfg, got solver_cfg {type(solver).__name__}")
    fields = {f.name: getattr(solver, f.name) for f in dataclasses.fields(solver) if f.name != "class_type"}
    fields.update(use_mujoco_contacts=True, use_mujoco_cpu=False)
    cfg = copy.deepcopy(mjwarp)
    cfg.solver_cfg = MuJoCoCPUSolverCfg(**fields, nthread=nthread)
    cfg.class_type = cfg.solver_cfg.class_type
    cfg.collision_cfg = None
    cfg.use_cuda_graph = False
    return cfg
