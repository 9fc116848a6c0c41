"""MuJoCo-Warp against MuJoCo-C (``physics=mujoco_cpu``) on the CPU, side by side in one env of one process.

The env is built once with ``physics=mujoco_cpu``; its solver can take each physics step with MuJoCo-Warp
instead (:attr:`~redline.physics.mujoco_cpu.SolverMuJoCoCPU.use_warp_step`, the same Newton/Isaac Lab code
around it), and its MuJoCo-C thread count can change between blocks. The modes are timed in interleaved rounds
of ``steps`` env steps with uniform random actions (env only, no policy), so load drifts on a shared machine slow
all modes alike; each mode's figure is the median over rounds. Also reported: the share of the step spent in the
physics call (MuJoCo-Warp's step or the batched C step with its copies).

Run: ``redline bench physics --task Redline-Cartpole --num_envs 256 --threads 1 2``.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from typing import Any

from redline.envs import registry
from redline.envs.simulator import isaaclab_env
from redline.errors import UserError
from redline.options import positive_int


@dataclasses.dataclass(frozen=True)
class PhysicsBenchRow:
    """One mode's figures."""

    task: str
    mode: str
    """``mujoco_warp`` or ``mujoco_c xN`` (N threads)."""
    num_envs: int
    env_sps: float
    """Env steps per second, all envs (median over rounds)."""
    physics_share: float
    """Fraction of the env step's time inside the physics call."""


class _Timed:
    """Wraps the solver's physics call and adds up its wall time."""

    def __init__(self, solver: Any) -> None:
        self.seconds = 0.0
        self._inner = solver._mujoco_warp_step
        solver._mujoco_warp_step = self

    def __call__(self) -> None:
        start = time.perf_counter()
        self._inner()
        self.seconds += time.perf_counter() - start


def bench(task: str, num_envs: int, threads: list[int], steps: int, rounds: int) -> list[PhysicsBenchRow]:
    """Time MuJoCo-Warp and MuJoCo-C on ``threads`` thread counts, interleaved, on one ``task`` env."""
    # heavy: torch, not before the CLI has parsed
    import torch

    env_cfg, _ = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", ["physics=mujoco_cpu"])
    env_cfg.scene.num_envs = num_envs
    env_cfg.seed = 0
    modes = [("mujoco_warp", 0)] + [(f"mujoco_c x{n}", n) for n in threads]
    sps: dict[str, list[float]] = {mode: [] for mode, _ in modes}
    share: dict[str, list[float]] = {mode: [] for mode, _ in modes}
    with isaaclab_env(task, env_cfg, "cpu") as env:
        u = env.unwrapped
        solver = u.sim.physics_manager._solver
        timer = _Timed(solver)
        env.reset()
        shape = (num_envs, u.single_action_space.shape[0])

        def block(n: int) -> tuple[float, float]:
            timer.seconds = 0.0
            start = time.perf_counter()
            for _ in range(n):
                env.step(2 * torch.rand(shape) - 1)
            wall = time.perf_counter() - start
            return wall, timer.seconds

        for r in range(rounds + 1):  # round 0 warms up (Warp kernels compile on first use)
            for mode, n in modes:
                solver.use_warp_step = n == 0
                if n:
                    solver.set_nthread(n)
                wall, physics = block(steps if r else 10)
                if r:
                    sps[mode].append(num_envs * steps / wall)
                    share[mode].append(physics / wall)
    return [
        PhysicsBenchRow(task, mode, num_envs, statistics.median(sps[mode]), statistics.median(share[mode]))
        for mode, _ in modes
    ]


def format_rows(rows: list[PhysicsBenchRow]) -> str:
    """A markdown table; ratios against MuJoCo-Warp of the same task."""
    base = {row.task: row.env_sps for row in rows if row.mode == "mujoco_warp"}
    lines = ["| task | envs | physics | env-steps/s | vs MuJoCo-Warp | physics share |", "|---|---|---|---|---|---|"]
    for row in rows:
        ratio = row.env_sps / base[row.task]
        lines.append(
            f"| {row.task} | {row.num_envs} | {row.mode} | {row.env_sps:,.0f} | {ratio:.2f}x "
            f"| {100 * row.physics_share:.0f} % |"
        )
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``redline bench physics``'s own options."""
    parser.add_argument("--task", action="append", help="task id (repeatable); default Redline-Cartpole")
    parser.add_argument("--num_envs", type=positive_int, default=256, help="envs (256)")
    parser.add_argument("--threads", type=positive_int, nargs="+", default=[1, 2], help="MuJoCo-C thread counts")
    parser.add_argument("--steps", type=positive_int, default=100, help="env steps per mode and round (100)")
    parser.add_argument("--rounds", type=positive_int, default=3, help="interleaved rounds (3)")


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """``redline bench physics``: one row per task and mode (CPU only)."""
    if args.device not in (None, "cpu"):
        raise UserError(f"--device: bench physics compares CPU physics backends (valid: cpu), got '{args.device}'")
    rows: list[PhysicsBenchRow] = []
    for task in args.task or ["Redline-Cartpole"]:
        rows += bench(task, args.num_envs, args.threads, args.steps, args.rounds)
    return [dataclasses.asdict(row) for row in rows]


def show(rows: list[dict[str, Any]]) -> None:
    """The markdown table of :func:`run`'s rows."""
    print(format_rows([PhysicsBenchRow(**row) for row in rows]))


def main(argv: list[str] | None = None) -> None:
    """``python -m redline.bench.physics``: the subcommand without the CLI."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    args.device = "cpu"
    show(run(args))


if __name__ == "__main__":
    main()
