"""Issue 27's outside anchor: mjbatch's Go1 example trained for a fixed time, logged for ``scripts/walk_time.py``.

    python scripts/mjbatch_walk.py --example DIR --seed S --minutes M --out RUN_DIR

Runs in a virtualenv of its own — mjbatch pins its MuJoCo (``mjbatch==0.1.4`` wants ``mujoco==3.14.0``; Isaac Lab
3.0's Newton wants 3.12), so it can never share redline's — with mjbatch, mujoco, numpy, torch and
mujoco-menagerie, and imports ``go1_joystick.py`` from DIR (``examples/`` of github.com/kevinzakka/mjbatch, with its
``assets/theme.xml``). It neither imports redline nor changes the example's task, networks or PPO: the training loop
below is the example's ``train()`` (same learning-rate schedule, rollout, GAE and update) with a record per iteration
in ``redline train``'s metric keys — per ended episode, the episode-mean xy velocity error (the base's linear velocity
in its own frame against the command) and yaw-rate error, and whether it ended by time-out — so that walk_time.py
applies the Go1 walking criterion of docs/go1.md unchanged. ``wall_time_s`` counts training only, from the first
rollout (as ``redline train``'s does).

The example's robot comes from ``mujoco_menagerie``, which downloads Menagerie's Go1 from GitHub. Where that is
unreachable (this VM), ``--go1-xml`` builds the same robot offline from redline's shipped ``go1.xml`` (Menagerie's
model as mjlab ships it): visual meshes dropped (the example turns every collision but the feet off anyway), the foot
geoms named ``FR``/``FL``/``RR``/``RL`` as Menagerie names them, twelve position actuators in joint order with
Menagerie's force ranges (the example sets their gains), Menagerie's ``home`` keyframe (the example lifts the trunk
to the pose it draws) and a light named ``spotlight`` (the example deletes it). Menagerie's joint damping, armature,
friction loss, contact and solver options are not copied: the example overrides every one of them.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import types
from pathlib import Path

import numpy as np
import torch

HOME = [0.0, 0.9, -1.8] * 4
"""Menagerie's ``home`` keyframe joint targets [rad] (hip, thigh, calf per leg; FR, FL, RR, RL)."""
HOME_HEIGHT = 0.27
"""Menagerie's ``home`` trunk height [m]."""
TORQUE_LIMIT = {"hip": 23.7, "thigh": 23.7, "calf": 35.55}
"""Menagerie's actuator force ranges [N m] (as redline's Go1 ``effort_limit_sim``), by joint kind."""


def body_frame(quat: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """``vec`` (n, 3) in the world frame expressed in the frame of unit quaternions ``quat`` (n, 4; w, x, y, z)."""
    w, x, y, z = quat.T
    # R(q)^T v, R's columns written out as rows
    rot_t = np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)], 1),
            np.stack([2 * (x * y - w * z), 1 - 2 * (x * x + z * z), 2 * (y * z + w * x)], 1),
            np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)], 1),
        ],
        1,
    )
    return np.einsum("nij,nj->ni", rot_t, vec)


def offline_go1(xml: Path) -> object:
    """An object with Menagerie's ``.spec(name)`` that returns the Go1 as Menagerie names it, from ``xml``."""
    import mujoco

    def spec(_name: str) -> mujoco.MjSpec:
        s = mujoco.MjSpec.from_file(str(xml))
        for geom in list(s.geoms):
            if geom.type == mujoco.mjtGeom.mjGEOM_MESH:
                s.delete(geom)
        for mesh in list(s.meshes):
            s.delete(mesh)
        for geom in s.geoms:
            if geom.name.endswith("_foot_collision"):
                geom.name = geom.name.removesuffix("_foot_collision")
        s.lights[0].name = "spotlight"
        for joint in s.joints[1:]:
            actuator = s.add_actuator(name=joint.name.removesuffix("_joint"), target=joint.name)
            actuator.trntype = mujoco.mjtTrn.mjTRN_JOINT
            limit = TORQUE_LIMIT[joint.name.removesuffix("_joint").split("_")[1]]
            actuator.forcelimited, actuator.forcerange = mujoco.mjtLimited.mjLIMITED_TRUE, [-limit, limit]
        qpos = [0.0, 0.0, HOME_HEIGHT, 1.0, 0.0, 0.0, 0.0, *HOME]
        s.add_key(name="home", qpos=qpos, ctrl=HOME)
        return s

    return types.SimpleNamespace(spec=spec)


def load_example(directory: Path, go1_xml: Path | None) -> types.ModuleType:
    """Import ``go1_joystick`` from ``directory``; its viewer helpers are not needed to train."""
    window = types.ModuleType("window")
    window.ARROW, window.Window = None, None  # type: ignore[attr-defined]
    window.clock = lambda s: f"{int(s // 60)}:{int(s % 60):02d}"  # type: ignore[attr-defined]
    window.progress = lambda *a, **k: None  # type: ignore[attr-defined]
    sys.modules.setdefault("window", window)
    sys.path.insert(0, str(directory))
    example = importlib.import_module("go1_joystick")
    if go1_xml is not None:
        robot = offline_go1(go1_xml)
        example.mm = types.SimpleNamespace(get=lambda _name: robot)
    return example


def measured(example: types.ModuleType) -> type:
    """The example's ``Go1`` with per-episode tracking errors and time-outs counted (the task is unchanged)."""

    class Measured(example.Go1):  # type: ignore[name-defined, misc]
        def __init__(self, num_envs: int, seed: int = 0) -> None:
            self.err_sum = np.zeros((num_envs, 2))
            self.err_steps = np.zeros(num_envs)
            self.ended: list[tuple[float, float, bool]] = []
            super().__init__(num_envs, seed)

        def step(self, action: np.ndarray):  # type: ignore[no-untyped-def]
            reward, done, fell, terms = super().step(action)
            local = body_frame(self.qpos[:, 3:7], self.qvel[:, :3])  # free joint: world-frame linear velocity
            err_xy = np.linalg.norm(local[:, :2] - self.command[:, :2], axis=1)
            err_yaw = np.abs(self.qvel[:, 5] - self.command[:, 2])  # free joint's angular velocity: body frame
            self.err_sum += np.stack([err_xy, err_yaw], 1)
            self.err_steps += 1
            for i in np.flatnonzero(done):
                mean_xy, mean_yaw = self.err_sum[i] / self.err_steps[i]
                self.ended.append((float(mean_xy), float(mean_yaw), bool(not fell[i])))
            self.err_sum[done], self.err_steps[done] = 0.0, 0.0
            return reward, done, fell, terms

    return Measured


def record(iteration: int, env_steps: int, wall: float, ended: list[tuple[float, float, bool]]) -> dict:
    """One iteration's record in ``redline train``'s keys (the errors are None when no episode ended)."""
    timeouts = sum(t for _, _, t in ended)
    return {
        "iteration": iteration,
        "env_steps": env_steps,
        "wall_time_s": round(wall, 4),
        "sps": env_steps / wall,
        "episode/Metrics/base_velocity/error_vel_xy": float(np.mean([e[0] for e in ended])) if ended else None,
        "episode/Metrics/base_velocity/error_vel_yaw": float(np.mean([e[1] for e in ended])) if ended else None,
        "episode/Episode_Termination/time_out": timeouts,
        "episode/Episode_Termination/fell": len(ended) - timeouts,
    }


def train(example: types.ModuleType, seed: int, minutes: float, out: Path) -> None:
    """The example's ``train()`` with ``seed``, stopped after ``minutes`` of training; one record per iteration."""
    g = example
    g.SEED = seed
    torch.manual_seed(seed)
    env = measured(g)(g.NUM_ENVS, seed=seed)
    actor, learner = g.ActorCritic().to(g.ACTOR), g.ActorCritic().to(g.DEVICE)
    actor.load_state_dict(learner.state_dict())
    opt = torch.optim.Adam(learner.parameters(), g.LR, fused=True)
    out.mkdir(parents=True, exist_ok=True)
    start, it = time.perf_counter(), 0
    with (out / "metrics.jsonl").open("w") as log:
        while time.perf_counter() - start < minutes * 60.0:
            opt.param_groups[0]["lr"] = float(np.interp(it, (0, g.LR_TO), (g.LR, g.LR_END)))
            env.ended = []
            batch, _ = g.rollout(actor, env)
            g.update(learner, opt, batch, *g.gae(batch))
            actor.load_state_dict(learner.state_dict())
            steps = (it + 1) * g.HORIZON * g.NUM_ENVS
            log.write(json.dumps(record(it, steps, time.perf_counter() - start, env.ended)) + "\n")
            log.flush()
            it += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--example", type=Path, required=True, help="folder holding go1_joystick.py and assets/")
    parser.add_argument("--go1-xml", type=Path, help="build the robot from this go1.xml (offline) instead of Menagerie")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--minutes", type=float, default=11.5, help="training time before stopping [min]")
    parser.add_argument("--out", type=Path, required=True, help="run folder: metrics.jsonl goes here")
    args = parser.parse_args()
    if not (args.example / "go1_joystick.py").is_file():
        raise SystemExit(f"mjbatch_walk.py: error: --example: {args.example} holds no go1_joystick.py")
    if args.go1_xml is not None and not args.go1_xml.is_file():
        raise SystemExit(f"mjbatch_walk.py: error: --go1-xml: {args.go1_xml} is not a file")
    train(load_example(args.example, args.go1_xml), args.seed, args.minutes, args.out)


if __name__ == "__main__":
    main()
