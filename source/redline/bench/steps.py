"""``redline bench steps``: where one training env step's time goes, phase by phase, on the real simulator.

The task is built as ``redline train`` builds it and trained for whole iterations of the redline learner
(:func:`~redline.learning.rollout.train_iteration`: act, ``env.step``, record, returns, update). Every part of a step
named in :data:`PHASES` is wrapped by a :class:`~redline.bench.phase_clock.PhaseClock`, which charges each phase its
*exclusive* wall time (a manager's own Python and torch ops, not the Warp kernels it launches nor the stream draws it
makes), so the phases add up to the measured time; what no wrapper saw (the rollout loop's own lines) is reported as
``unattributed``. Times are per env step of all envs (the update's per iteration, divided by the iteration's env
steps), over ``--iterations`` timed iterations after one warm-up iteration (kernel compilation, first resets).

Wrapping costs a few hundred nanoseconds a call (a Go1 step makes ~150 wrapped calls): it is in the figures, spread
over the phases. Nothing is changed but the timing: the same env, the same learner, the same results.

Run: ``redline bench steps --task Redline-Velocity-Flat-Go1 --num_envs 512``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import warp

from redline.bench.fuse import add_fuse_decimation_argument, fuse_overrides
from redline.bench.phase_clock import PhaseClock
from redline.envs.prepare import prepare_env, runner_cfg_dict
from redline.envs.simulator import isaaclab_env
from redline.errors import UserError
from redline.learning import PPOConfig
from redline.learning.rollout import train_iteration
from redline.options import RunOptions, positive_int
from redline.runners.redline_runner import RedlineRunner
from redline.validation import PRECISIONS

PHASES: tuple[tuple[str, str], ...] = (
    ("C step", "MuJoCo-C's mj_step of every world (the rollout pool or the patched-model C loop)"),
    ("mjw <-> C copies", "the step's inputs gathered from mjw_data, its outputs written back"),
    ("physics glue", "Isaac Lab's and Newton's Python around the physics step"),
    ("Warp kernels", "every wp.launch (Newton's conversions and state, Isaac Lab's assets and sensors)"),
    ("actions", "the action manager (process, apply) and writing the scene's data to the simulator"),
    ("sensors / contacts", "the scene's update (sensors, articulation data) and the solver's contact hand-over"),
    ("observations", "the observation manager (or a direct env's _get_observations)"),
    ("rewards", "the reward manager (or _get_rewards)"),
    ("terminations", "the termination manager (or _get_dones)"),
    ("commands", "the command manager"),
    ("events", "the event manager (interval and reset events)"),
    ("curriculum", "the curriculum manager"),
    ("resets", "_reset_idx less the managers, kernels and draws it calls"),
    ("seeding draws", "the per-env streams' draws and episode counters"),
    ("env step, other", "the rest of env.step and the vec-env wrapper (buffers, extras, torch glue)"),
    ("inference", "the policy's action (sampling included)"),
    ("storage", "recording the step in the rollout storage"),
    ("episode stats", "the runner's episode statistics"),
    ("returns", "bootstrap values and GAE, per iteration"),
    ("update", "the PPO update, per iteration"),
)
"""Each phase of the table and what it holds, in the table's order."""

_MANAGER_METHODS: dict[str, tuple[tuple[str, str], ...]] = {
    "actions": (("action_manager", "process_action"), ("action_manager", "apply_action")),
    "observations": (("observation_manager", "compute"),),
    "rewards": (("reward_manager", "compute"),),
    "terminations": (("termination_manager", "compute"),),
    "commands": (("command_manager", "compute"),),
    "events": (("event_manager", "apply"),),
    "curriculum": (("curriculum_manager", "compute"),),
}
"""Phase -> the (manager attribute, method) pairs of a manager-based env that it times."""

_DIRECT_METHODS: dict[str, tuple[str, ...]] = {
    "actions": ("_pre_physics_step", "_apply_action"),
    "observations": ("_get_observations",),
    "rewards": ("_get_rewards",),
    "terminations": ("_get_dones",),
}
"""Phase -> a direct env's methods that it times (a direct env has no managers)."""


def instrument(clock: PhaseClock, vec_env: Any, runner: RedlineRunner) -> set[str]:
    """Wrap every part of a training step :data:`PHASES` names; returns the phases that had something to wrap."""
    u = vec_env.unwrapped
    solver = u.sim.physics_manager._solver
    found: set[str] = set()

    def wrap(owner: Any, name: str, phase: str) -> None:
        if clock.wrap(owner, name, phase):
            found.add(phase)

    wrap(solver, "_rollout_step", "C step")
    wrap(getattr(solver, "_stepper", None), "step", "C step")
    arrays = getattr(solver, "step_arrays", None)
    wrap(arrays, "gather", "mjw <-> C copies")
    wrap(arrays, "scatter", "mjw <-> C copies")
    wrap(u.sim, "step", "physics glue")
    wrap_launches(clock, warp)
    found.add("Warp kernels")
    wrap(u.scene, "write_data_to_sim", "actions")
    wrap(u.scene, "update", "sensors / contacts")
    wrap(solver, "update_contacts", "sensors / contacts")
    for phase, pairs in _MANAGER_METHODS.items():
        for manager, method in pairs:
            wrap(getattr(u, manager, None), method, phase)
    if not hasattr(u, "observation_manager"):
        for phase, methods in _DIRECT_METHODS.items():
            for method in methods:
                wrap(u, method, phase)
    wrap(u, "_reset_idx", "resets")
    streams = getattr(u, "streams", None)
    for method in ("uniform", "normal", "words", "begin_episode"):
        wrap(streams, method, "seeding draws")
    wrap(vec_env, "step", "env step, other")
    alg = runner.alg
    wrap(alg, "act", "inference")
    wrap(alg, "process_env_step", "storage")
    wrap(runner.tracker, "step", "episode stats")
    wrap(alg, "compute_returns", "returns")
    wrap(alg, "update", "update")
    return found


KERNEL = "Warp kernels/"
"""Prefix of the per-kernel phases: ``Warp kernels/<kernel key>``, summed into the ``Warp kernels`` row."""


def wrap_launches(clock: PhaseClock, warp: Any) -> None:
    """Time every ``warp.launch`` under ``Warp kernels/<the kernel's key>`` (restored with the clock's wrappers)."""
    launch = warp.launch
    per_kernel: dict[str, Any] = {}

    def timed_launch(kernel: Any, *args: Any, **kwargs: Any) -> Any:
        name = str(getattr(kernel, "key", kernel))
        if name not in per_kernel:
            per_kernel[name] = clock.timed(launch, KERNEL + name)
        return per_kernel[name](kernel, *args, **kwargs)

    clock.wrap(warp, "launch", "unused")  # registers the restore; replaced at once by the per-kernel dispatch
    warp.launch = timed_launch


def bench(task: str, num_envs: int | None, iterations: int, precision: str, fuse: str | None = None) -> dict[str, Any]:
    """Train ``task`` for one warm-up and ``iterations`` timed iterations and attribute each env step's time
    (``fuse``: ``"on"`` / ``"off"`` sets ``fuse_decimation``, ``None`` keeps the task's own)."""
    if iterations <= 0:
        raise UserError(f"--iterations: must be a positive integer, got {iterations}")
    overrides = fuse_overrides(fuse)
    prepared = prepare_env(RunOptions(task=task, num_envs=num_envs, device="cpu", overrides=overrides))
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper

    cfg = PPOConfig.from_rsl_rl(runner_cfg_dict(prepared.agent_cfg), precision=precision)
    clock = PhaseClock()
    with isaaclab_env(prepared.task, prepared.env_cfg) as env:
        vec_env: Any = RslRlVecEnvWrapper(env, clip_actions=prepared.agent_cfg.clip_actions)
        runner = RedlineRunner(vec_env, cfg, None, prepared.device, 0)
        runner.learn(1)  # warm-up: kernel compilation, first resets, the learner's buffers
        solver = vec_env.unwrapped.sim.physics_manager._solver
        found = instrument(clock, vec_env, runner)
        try:
            obs = vec_env.get_observations()
            clock.reset()
            start = time.perf_counter()
            for _ in range(iterations):
                obs, _ = train_iteration(runner.alg, vec_env, obs, on_step=runner.tracker.step)
            total = time.perf_counter() - start
        finally:
            clock.restore()
        threads = int(getattr(solver, "nthread", 0))
        steps = iterations * cfg.num_steps_per_env
        num_envs_run = vec_env.num_envs
    seconds, calls = dict(clock.seconds), dict(clock.calls)
    kernels: list[dict[str, Any]] = sorted(
        ({"kernel": k[len(KERNEL) :], "ms": 1e3 * v / steps, "calls": calls[k] / steps}
         for k, v in seconds.items() if k.startswith(KERNEL)),
        key=lambda row: -row["ms"],
    )  # fmt: skip
    seconds["Warp kernels"] = sum(v for k, v in seconds.items() if k.startswith(KERNEL))
    calls["Warp kernels"] = sum(v for k, v in calls.items() if k.startswith(KERNEL))
    phases: list[dict[str, Any]] = [
        {
            "phase": name,
            "present": name in found,
            "ms": 1e3 * seconds.get(name, 0.0) / steps,
            "calls": calls.get(name, 0) / steps,
        }
        for name, _ in PHASES
    ]
    return {
        "task": prepared.task,
        "num_envs": num_envs_run,
        "threads": threads,
        "iterations": iterations,
        "fuse_decimation": fuse,
        "steps": steps,
        "step_ms": 1e3 * total / steps,
        "phases": phases,
        "kernels": kernels,
        "unattributed_ms": 1e3 * total / steps - sum(p["ms"] for p in phases),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``redline bench steps``'s own options."""
    parser.add_argument("--task", action="append", help="task id (repeatable); default Redline-Velocity-Flat-Go1")
    parser.add_argument("--num_envs", type=positive_int, help="envs (default: the task's CPU default)")
    parser.add_argument("--iterations", type=positive_int, default=2, help="timed training iterations (2)")
    parser.add_argument("--precision", choices=PRECISIONS, default="auto", help="learner precision")
    add_fuse_decimation_argument(parser, "the step")


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """``redline bench steps``: one table per task (CPU only)."""
    if args.device not in (None, "cpu"):
        raise UserError(f"--device: bench steps measures the CPU step (valid: cpu), got '{args.device}'")
    tasks = args.task or ["Redline-Velocity-Flat-Go1"]
    return [bench(t, args.num_envs, args.iterations, args.precision, args.fuse_decimation) for t in tasks]


TOP_KERNELS = 12
"""Kernels listed under each table."""


def show(results: list[dict[str, Any]]) -> None:
    """A markdown table per task: each phase's ms per env step, its share and its calls per env step."""
    for r in results:
        fuse = "" if r["fuse_decimation"] is None else f" (fuse_decimation={r['fuse_decimation']})"
        print(
            f"{r['task']}{fuse}, {r['num_envs']} envs, {r['threads']} MuJoCo-C threads: {r['step_ms']:.2f} ms per "
            f"training env step of all envs (mean of {r['steps']} env steps: {r['iterations']} iterations after a "
            "warm-up)"
        )
        print("| phase | ms / env step | share | calls / env step |")
        print("|---|---|---|---|")
        for p in r["phases"]:
            if not p["present"]:
                print(f"| {p['phase']} | - | - | - |")
                continue
            print(f"| {p['phase']} | {p['ms']:.3f} | {p['ms'] / r['step_ms']:.1%} | {p['calls']:.1f} |")
        print(f"| unattributed | {r['unattributed_ms']:.3f} | {r['unattributed_ms'] / r['step_ms']:.1%} | |")
        print(f"| **total** | **{r['step_ms']:.3f}** | 100.0% | |")
        print(
            f"the {TOP_KERNELS} costliest of {len(r['kernels'])} Warp kernels (exclusive ms and launches per env step):"
        )
        for k in r["kernels"][:TOP_KERNELS]:
            print(f"  {k['ms']:8.3f} ms {k['calls']:6.1f}x  {k['kernel']}")
