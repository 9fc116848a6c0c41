"""``redline bench cores``: the default CPU training command against one process, beside raw ``mujoco.rollout``.

Three figures per task, all env steps per second over all envs, on the cores this process may use:

1. **raw physics**: ``mujoco.rollout`` on the task's own MuJoCo-C model (the one ``physics=mujoco_cpu`` compiles,
   contact sensors and all), one shared model, every world starting from the default pose with zero controls, one
   env step = the task's physics substeps, a thread per core. What the physics engine alone can do: the ceiling;
2. **one process**: ``redline train --nproc 1`` (one process, MuJoCo-C on every core, the rest of the step on one);
3. **default**: ``redline train`` as a user types it (on the CPU it fills the cores by itself, see
   :mod:`redline.commands.process_group`);
4. with ``--fuse_decimation on|off``, **default, fuse_decimation=on|off**: the default command with
   ``fuse_decimation`` set so (:func:`fuse_mode`; the flat Go1 fuses by default, the other tasks do not).

Each training mode also gives its **rollouts-only** rate: the same runs' env steps per second of their collection
phase alone (``collect_s``: env stepping, policy inference, storage writes; the update, returns and logging left
out), i.e. what the mode would do collecting without learning.

The two training modes run as whole ``redline train`` subprocesses in alternating rounds (so load drifts on a
shared machine slow both alike); a mode's figure is the median over rounds of the median per-iteration ``sps`` of
the iterations after the first (which pays for allocation and Warp's kernel loading). Start-up is not counted.
Raw ``mujoco.rollout`` is timed again (5 s) before every round, and a mode's share of raw is the median over rounds
of its rate over that round's raw rate (:func:`of_raw`): the VM's speed drifts by a third within an hour.

Run: ``redline bench cores --task Redline-Velocity-Flat-Go1 --num_envs 1024 --iterations 6 --rounds 2``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redline.bench.fuse import add_fuse_decimation_argument, fuse_overrides
from redline.envs import registry
from redline.envs.simulator import isaaclab_env
from redline.errors import UserError
from redline.host import usable_cores
from redline.options import positive_int

MODES = {"one process": ["--nproc", "1"], "default": []}
"""Training modes: extra ``redline train`` arguments of each."""


def fuse_mode(fuse: str | None) -> dict[str, list[str]]:
    """The mode ``--fuse_decimation on|off`` adds (none without it): the default command with that override."""
    return {f"default, fuse_decimation={fuse}": list(fuse_overrides(fuse))} if fuse is not None else {}


@dataclass
class RawRollout:
    """``mujoco.rollout`` of ``num_envs`` worlds of a task's MuJoCo-C model, ready to be timed again and again."""

    model: Any
    """The task's ``mujoco.MjModel`` (the one ``physics=mujoco_cpu`` compiles, contact sensors and all)."""
    state: Any
    """``(num_envs, nstate)`` float64: every world's start, the first env's state after one env step."""
    control: Any
    """``(num_envs, substeps, ncontrol)`` float64 zeros."""
    control_spec: int
    """The ``mjtState`` bits of :attr:`control`."""
    substeps: int
    """Physics steps per env step (decimation x substeps)."""
    threads: int
    """Rollout threads: one per usable core."""
    out: Any
    """``(num_envs, substeps, nstate)`` float64: the rollouts' states (written, not read)."""
    sensors: Any
    """``(num_envs, substeps, nsensordata)`` float64: their sensor values (written, not read)."""

    @classmethod
    def of_task(cls, task: str, num_envs: int) -> RawRollout:
        """Build ``task`` once with one env (``physics=mujoco_cpu``) and take its compiled model and state."""
        # heavy: the simulator, only for the raw rollout
        import numpy as np
        import torch

        env_cfg, _ = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", ["physics=mujoco_cpu"])
        env_cfg.scene.num_envs = 1
        env_cfg.seed = 0
        with isaaclab_env(task, env_cfg, "cpu") as env:
            env.reset()
            u = env.unwrapped
            env.step(torch.zeros(u.num_envs, u.single_action_space.shape[0]))  # sensors are added on first use
            solver = u.sim.physics_manager._solver
            model, state0 = solver.world_models.template, solver.step_arrays.state[0].copy()
            control_spec, ncontrol = solver.step_arrays.control_spec, solver.step_arrays.control.shape[-1]
            substeps = int(getattr(env_cfg, "decimation", 1)) * int(getattr(env_cfg.sim.physics, "num_substeps", 1))
        state = np.repeat(state0[None], num_envs, 0)
        control = np.zeros((num_envs, substeps, ncontrol))
        out = np.zeros((num_envs, substeps, state.shape[1]))
        sensors = np.zeros((num_envs, substeps, model.nsensordata))
        return cls(model, state, control, control_spec, substeps, usable_cores(), out, sensors)

    def sps(self, seconds: float = 5.0) -> float:
        """Env steps per second over ``seconds`` of back-to-back rollouts (after one warm-up) [env steps/s]."""
        # heavy: MuJoCo's bindings
        import mujoco
        from mujoco import rollout

        num_envs = self.state.shape[0]
        pool = rollout.Rollout(nthread=self.threads if self.threads > 1 else 0)
        datas = [mujoco.MjData(self.model) for _ in range(self.threads)]
        models = [self.model] * num_envs

        def step() -> None:
            pool.rollout(models, datas, self.state, self.control, control_spec=self.control_spec, skip_checks=True,
                         nstep=self.substeps, state=self.out, sensordata=self.sensors)  # fmt: skip

        try:
            step()  # warm-up
            count, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                step()
                count += 1
            return count * num_envs / (time.perf_counter() - start)
        finally:
            pool.close()


def training_sps(task: str, num_envs: int, iterations: int, extra: list[str], log_root: Path) -> dict[str, Any]:
    """One ``redline train`` subprocess; its median ``sps`` over the iterations after the first, and its world size."""
    environ = {k: v for k, v in os.environ.items() if k != "REDLINE_NPROC"}
    command = [sys.executable, "-m", "redline.cli", "train", "--task", task, "--device", "cpu", "--num_envs",
               str(num_envs), "--max_iterations", str(iterations), "--log_root", str(log_root), *extra]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True, env=environ)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    (metrics,) = log_root.glob("*/*/metrics.jsonl")
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    metrics.parent.rename(metrics.parent.with_name(f"{metrics.parent.name}-{time.monotonic_ns()}"))
    return {**rates(records), "world_size": records[-1]["world_size"]}


def rates(records: list[dict[str, Any]]) -> dict[str, float]:
    """Medians over the iterations after the first of a run's ``metrics.jsonl`` records: ``sps`` (training env
    steps/s, the record's own) and ``rollout_sps`` (the iteration's env steps over its ``collect_s``) [env steps/s]."""
    if len(records) < 2:
        raise ValueError("rates: need at least two iterations (the first is left out)")
    rollout = [(r["env_steps"] - p["env_steps"]) / r["collect_s"] for p, r in itertools.pairwise(records)]
    return {"sps": statistics.median(r["sps"] for r in records[1:]), "rollout_sps": statistics.median(rollout)}


def of_raw(rates: list[float], raws: list[float]) -> float:
    """The median over rounds of a mode's rate over the same round's raw rate: the share of raw, robust to the
    machine's speed drifting between rounds (raw ``mujoco.rollout`` alone has read 18.5k-27.8k env-steps/s within
    minutes on one 2-core VM)."""
    if len(rates) != len(raws) or not rates:
        raise ValueError(f"of_raw: one raw rate per round, got {len(raws)} for {len(rates)} rounds")
    return statistics.median(r / w for r, w in zip(rates, raws, strict=True))


def bench(task: str, num_envs: int, iterations: int, rounds: int, fuse: str | None = None) -> dict[str, Any]:
    """The figures of the module docs for one task (``fuse``: also :func:`fuse_mode`'s, alternating with the
    other modes); raw ``mujoco.rollout`` is timed again before every round, and each mode's share of raw is the
    median of its rounds' shares (:func:`of_raw`)."""
    raw = RawRollout.of_task(task, num_envs)
    modes = {**MODES, **fuse_mode(fuse)}
    raws: list[float] = []
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory(prefix="redline-bench-cores-") as tmp:
        for r in range(rounds):
            raws.append(raw.sps())
            order = list(modes) if r % 2 == 0 else list(reversed(modes))
            for mode in order:
                runs[mode].append(training_sps(task, num_envs, iterations, modes[mode], Path(tmp) / f"{mode}-{r}"))
    result: dict[str, Any] = {
        "task": task,
        "num_envs": num_envs,
        "iterations": iterations,
        "raw": {"sps": statistics.median(raws), "rounds": raws, "substeps": raw.substeps, "threads": raw.threads},
        "modes": list(modes),
    }
    for mode, measured in runs.items():
        sps, rollout = [m["sps"] for m in measured], [m["rollout_sps"] for m in measured]
        result[mode] = {
            "sps": statistics.median(sps),
            "rounds": sps,
            "world_size": measured[-1]["world_size"],
            "of_raw": of_raw(sps, raws),
            "rollout_sps": statistics.median(rollout),
            "rollout_rounds": rollout,
            "rollout_of_raw": of_raw(rollout, raws),
        }
    return result


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``redline bench cores``'s own options."""
    parser.add_argument("--task", action="append", help="task id (repeatable); default Redline-Velocity-Flat-Go1")
    parser.add_argument("--num_envs", type=positive_int, default=1024, help="envs in total (1024)")
    parser.add_argument("--iterations", type=positive_int, default=6, help="training iterations per run (6)")
    parser.add_argument("--rounds", type=positive_int, default=2, help="alternating rounds (2)")
    add_fuse_decimation_argument(parser, "also the default command")


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """``redline bench cores``: one result per task (CPU only)."""
    if args.device not in (None, "cpu"):
        raise UserError(f"--device: bench cores measures CPU training (valid: cpu), got '{args.device}'")
    tasks = args.task or ["Redline-Velocity-Flat-Go1"]
    return [bench(t, args.num_envs, args.iterations, args.rounds, args.fuse_decimation) for t in tasks]


def show(results: list[dict[str, Any]]) -> None:
    """A markdown table of :func:`run`'s results."""
    print("| task | envs | mode | processes | env-steps/s | of raw rollout | rounds | rollouts only | of raw |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        raw = r["raw"]
        raw_rounds = ", ".join(f"{s:,.0f}" for s in raw["rounds"])
        print(f"| {r['task']} | {r['num_envs']} | raw mujoco.rollout ({raw['threads']} threads, {raw['substeps']} "
              f"substeps) | 1 | {raw['sps']:,.0f} | 100 % | {raw_rounds} | | |")  # fmt: skip
        for mode in r["modes"]:
            m = r[mode]
            rounds = ", ".join(f"{s:,.0f}" for s in m["rounds"])
            print(f"| {r['task']} | {r['num_envs']} | {mode} | {m['world_size']} | {m['sps']:,.0f} "
                  f"| {100 * m['of_raw']:.0f} % | {rounds} | {m['rollout_sps']:,.0f} "
                  f"| {100 * m['rollout_of_raw']:.0f} % |")  # fmt: skip
