"""``scripts/gpu_sim_check.sh``'s driver: the simulator on the GPU, in stages ordered by value, inside a deadline.

Stages (issue 38, item 3), each a set of child processes with its own time budget [s]; a stage that fails or runs
out of time is recorded and the next one runs:

a. ``cuda_tests``: the test files with CUDA-only tests (learner, capture, fused Philox, any-task physics);
b. ``throughput``: ``redline train`` on each task of :data:`TASKS` (the training env steps/s, the time split
   ``env_s`` = physics + managers, ``inference_s``, ``gae_s``, ``update_s``, the update's MFU, NVML GPU utilisation
   and the bottleneck verdict of the last iteration), ``redline bench env`` on the first task (env-only and
   inference env steps/s) and the host syncs of one env step (``torch.cuda.set_sync_debug_mode``);
c. ``rsl_rl_ratio``: the first task with ``--learner redline`` and ``--learner rsl_rl`` alternating, the ratio of
   their median iteration times (``collect_s + learn_s``, the first iteration left out);
d. ``learning``: ``Redline-Velocity-Flat-Go1`` trained until its budget ends (a stop signal: the run ends cleanly),
   then the walking criterion of docs/go1.md (``scripts/walk_time.py``): minutes and env steps to walk.

Writes ``gpu_sim.json`` (every stage's figures, errors and seconds) and ``gpu_sim.log`` (each child's command and
the tail of its output) into ``--out``, and prints one verdict line. The training runs' folders (checkpoints: GBs at
4096-16,384 envs) go under ``--runs``, outside ``--out``: the device tool returns at most 8 files of ``$OUT``, so
anything more there could keep ``gpu_sim.json`` from coming back. ``--device cpu --tiny`` runs every stage at a
size CI affords (a minute).

A tool for the GPU machine, outside the installed package (no ``redline`` command runs it): ``python -m
tools.gpu.gpu_sim`` from the repository root, with the bundle's redline installed (``tools/gpu/bundle.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from redline.envs import registry
from redline.envs.simulator import isaaclab_env
from redline.errors import UserError

CUDA_TEST_FILES = (
    "tests/learning/test_capture.py",
    "tests/learning/test_precision.py",
    "tests/learning/test_rollout.py",
    "tests/seeding/test_fused_philox.py",
    "tests/physics/test_any_task.py",
    "tests/telemetry/test_gpu_monitor.py",
    "tests/learning/sac/test_sac_capture.py::test_cuda_graph_learner_equals_eager",
)
"""Test files holding the tests that select CUDA when it is there (the rest of each file runs too), and single CUDA
tests whose files' other tests would cost the stage's budget (SAC's one-graph trace: ~20 s of CPU)."""
TASKS = (
    "Redline-Velocity-Flat-Go1",
    "Redline-Velocity-Flat-G1",
    "Redline-Velocity-Rough-Go1",
    "Redline-Ant",
    "Redline-Cartpole",
)
"""Stage b's tasks, most valuable first (the first is also stage b's env-only bench and stage c's task)."""
WALK_TASK = "Redline-Velocity-Flat-Go1"
"""Stage d's task: the one docs/go1.md's walking criterion is for."""


@dataclasses.dataclass(frozen=True)
class Size:
    """How big each stage runs."""

    num_envs: int
    """Envs of every run (stage b adds a run of the first task at ``big_envs``)."""
    big_envs: int | None
    """The first task's second size in stage b (None: none)."""
    iterations: int
    """Training iterations of each stage-b and stage-c run (the first is left out of the medians)."""
    tasks: tuple[str, ...]
    """Stage b's tasks."""
    pairs: int
    """Stage c's redline / rsl_rl alternations."""
    budgets: dict[str, float]
    """Seconds each stage may take; the learning stage also stops at the deadline."""
    test_args: tuple[str, ...]
    """pytest's arguments in stage a."""
    cold_s: float
    """Seconds of stage b's budget the first training run gets beyond its share while no run has finished: Warp
    compiles every kernel into the machine's empty cache then (58 s on the 2-core CPU at 4 envs, measured cold
    against warm, 2026-12-06; the GPU's unmeasured)."""
    reuse: bool = False
    """Stage c pairs its first rsl_rl run with stage b's first run, and stage d reads that run instead of training
    (CI's size, where each process's start-up is most of the time); stage b skips ``bench env``."""


GPU = Size(
    num_envs=4096,
    big_envs=16384,
    iterations=6,
    tasks=TASKS[:3],
    pairs=2,
    budgets={"cuda_tests": 60.0, "throughput": 180.0, "rsl_rl_ratio": 60.0, "learning": 180.0},
    test_args=CUDA_TEST_FILES,
    cold_s=60.0,
)
"""The device run (one H100/H200): stages a-b in a first pass of 240 s, c-d (or the failed ones) in a rerun of
240 s, both inside 15 device minutes (docs/gpu.md). Ant and Cartpole are left out of stage b (the CPU rehearsal
covers their plumbing)."""
TINY = Size(
    num_envs=4,
    big_envs=None,
    iterations=2,
    tasks=(WALK_TASK,),
    pairs=1,
    budgets={"cuda_tests": 30.0, "throughput": 180.0, "rsl_rl_ratio": 60.0, "learning": 10.0},
    test_args=("tests/learning/test_precision.py", "-k", "cuda"),
    cold_s=120.0,
    reuse=True,
)
"""CI's rehearsal on the CPU: every stage's plumbing at the smallest size, in four processes. The budgets hold a cold
Warp cache and no bytecode on the 2-core host, measured 2026-12-06 (cold / warm Warp cache): a 12 / 12 s,
b 80 / 22 s, c 22 / 22 s, d 2 / 0 s; about twice that, for a loaded host."""
PHYSICS = "physics=newton_mjwarp"
"""Every run's physics: the GPU default, named so that a CPU rehearsal takes the same path (not MuJoCo-C)."""


class StageError(RuntimeError):
    """A stage that failed in part: its message and the figures it has."""

    def __init__(self, message: str, figures: dict[str, Any]) -> None:
        super().__init__(message)
        self.figures = figures


class Run:
    """The result being built, the log, and the clock."""

    def __init__(self, out: Path, device: str, size: Size, deadline_s: float, runs: Path | None = None) -> None:
        self.out, self.device, self.size = out, device, size
        self.runs = runs if runs is not None else default_runs()
        if self.runs.resolve().is_relative_to(out.resolve()):
            raise UserError(f"--runs: must be outside --out ({out}: only JSON and logs come back), got {self.runs}")
        self.end = time.monotonic() + deadline_s
        self.result: dict[str, Any] = {"device": device, "deadline_s": deadline_s, "stages": {}}
        self.first: dict[str, Any] | None = None  # stage b's run of the first task, for a reusing size
        self.cold = True  # no training run has finished: Warp's kernel cache may be empty
        out.mkdir(parents=True, exist_ok=True)
        self.log = (out / "gpu_sim.log").open("w")

    def left(self) -> float:
        """Seconds to the deadline."""
        return self.end - time.monotonic()

    def child(self, cmd: list[str], budget: float, env: dict[str, str] | None = None) -> tuple[int, str, float]:
        """Run ``cmd`` for at most ``budget`` seconds (and not past the deadline): SIGINT at the end (redline's
        runs stop cleanly on it), SIGKILL 20 s later. Returns (exit status, output, seconds); 124 when stopped."""
        limit = max(1.0, min(budget, self.left()))
        self.log.write(f"$ {' '.join(cmd)}   # budget {limit:.0f} s\n")
        self.log.flush()
        start = time.monotonic()
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, **(env or {})}
        )
        try:
            out, _ = proc.communicate(timeout=limit)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            try:
                out, _ = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            rc = 124
        seconds = time.monotonic() - start
        tail = "\n".join(out.strip().splitlines()[-8:])
        self.log.write(f"  -> rc {rc} in {seconds:.1f} s\n{tail}\n")
        self.log.flush()
        return rc, out, seconds

    def redline(self, *args: str) -> list[str]:
        """A ``redline`` command line run by this interpreter."""
        return [sys.executable, "-m", "redline.cli", *args]

    def train(self, task: str, num_envs: int, iterations: int, budget: float, *extra: str) -> dict[str, Any]:
        """``redline train`` on ``task``; its figures from ``metrics.jsonl`` (:func:`train_figures`)."""
        root = self.runs / f"{task}-{num_envs}-{time.monotonic_ns()}"
        cmd = self.redline(
            "train", "--task", task, "--num_envs", str(num_envs), "--device", self.device, "--seed", "0",
            "--max_iterations", str(iterations), "--log_root", str(root), *extra, PHYSICS,
        )  # fmt: skip
        rc, out, seconds = self.child(cmd, budget)
        self.cold = False
        runs = sorted(root.glob("*/*/metrics.jsonl"))
        if not runs:
            raise RuntimeError(f"redline train {task} wrote no metrics (rc {rc}): {_last_line(out)}")
        return {"rc": rc, "seconds": seconds, "run": str(runs[-1].parent), **train_figures(runs[-1])}

    def stage(self, name: str, fn: Callable[[float], dict[str, Any]]) -> None:
        """Run stage ``name`` with its budget; its figures, or its error, and its seconds go in the result."""
        budget = min(self.size.budgets[name], self.left())
        start = time.monotonic()
        if budget < 5:
            row: dict[str, Any] = {"ok": False, "error": "skipped: the deadline came first"}
        else:
            try:
                row = {"ok": True, **fn(budget)}
            except StageError as exc:  # partly done: its figures kept
                row = {"ok": False, "error": str(exc), **exc.figures}
            except Exception as exc:  # a failing stage is recorded, and the next one runs
                row = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        row["seconds"] = time.monotonic() - start
        self.result["stages"][name] = row
        self.log.write(f"== {name}: {'ok' if row['ok'] else row['error']} ({row['seconds']:.0f} s)\n")
        self.log.flush()


def train_figures(metrics: Path) -> dict[str, Any]:
    """A run's throughput figures: the median ``sps`` [env steps/s] and iteration time [s] over its iterations after
    the first (all when there is one), the mean time split [s], and the last iteration's MFU, GPU utilisation [%]
    and bottleneck verdict."""
    records = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    if not records:
        raise RuntimeError(f"{metrics} holds no iteration")
    timed = records[1:] or records
    last = records[-1]
    split = {k: statistics.fmean(r[k] for r in timed) for k in ("env_s", "inference_s", "gae_s", "update_s") if
             all(r.get(k) is not None for r in timed)}  # fmt: skip
    return {
        "iterations": len(records),
        "sps": statistics.median(r["sps"] for r in timed),
        "iteration_s": statistics.median(r["collect_s"] + r["learn_s"] for r in timed),
        "split_s": split,
        **{k: last.get(k) for k in ("mfu", "gpu_util", "gpu_mem_gb", "bottleneck", "next_action", "precision")},
    }


def cuda_tests(run: Run, budget: float) -> dict[str, Any]:
    """Stage a: pytest on :attr:`Size.test_args`; the counts pytest's summary line gives."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not extended", *run.size.test_args]
    rc, out, _ = run.child(cmd, budget)
    summary = _last_line(out)
    counts = {w: int(n) for n, w in (p.split()[:2] for p in summary.strip("= ").split(" in ")[0].split(", ")
                                     if p.split()[0].isdigit())}  # fmt: skip
    if rc != 0:  # 5: pytest collected nothing, which is no pass
        raise RuntimeError(f"pytest rc {rc}: {summary}")
    return {"rc": rc, "summary": summary, "counts": counts}


def throughput(run: Run, budget: float) -> dict[str, Any]:
    """Stage b: each task's training figures, the first task's env-only bench and host syncs per env step."""
    end = time.monotonic() + budget
    size, first = run.size, run.size.tasks[0]
    tasks: dict[str, Any] = {}
    jobs = [(task, size.num_envs) for task in size.tasks] + ([(first, size.big_envs)] if size.big_envs else [])
    cold = min(size.cold_s, budget / 2) if run.cold else 0.0  # the first run compiles Warp's kernels
    share = (budget - cold) / (len(jobs) + (0 if size.reuse else 3))
    for i, (task, num_envs) in enumerate(jobs):
        limit = min(share + (cold if i == 0 else 0.0), end - time.monotonic())
        try:
            tasks[f"{task}@{num_envs}"] = run.train(task, num_envs, size.iterations, limit)
        except Exception as exc:
            tasks[f"{task}@{num_envs}"] = {"error": f"{type(exc).__name__}: {exc}"}
    run.first = tasks[f"{first}@{size.num_envs}"]
    result: dict[str, Any] = {"tasks": tasks}
    if not size.reuse:
        cmd = run.redline("bench", "env", "--task", first, "--num_envs", str(size.num_envs), "--device", run.device)
        rc, out, _ = run.child([*cmd, "--physics", PHYSICS.split("=")[1], "--json"], max(5.0, share))
        result["bench_env"] = _json_line(out) if rc == 0 else {"error": f"rc {rc}: {_last_line(out)}"}
    if run.device.startswith("cuda"):
        cmd = [sys.executable, "-m", "tools.gpu.gpu_sim", "--syncs", first, "--num_envs", str(size.num_envs)]
        rc, out, _ = run.child(cmd, max(5.0, end - time.monotonic()))
        result["syncs"] = _json_line(out) if rc == 0 else {"error": f"rc {rc}: {_last_line(out)}"}
    else:
        result["syncs"] = {"reason": "no CUDA device: nothing to count"}
    failed = [k for k, v in [*tasks.items(), *result.items()] if isinstance(v, dict) and "error" in v]
    if failed:
        raise StageError(f"failed: {', '.join(failed)}", result)
    return result


def rsl_rl_ratio(run: Run, budget: float) -> dict[str, Any]:
    """Stage c: the first task with each learner in turn (redline first, then rsl_rl; :attr:`Size.pairs` times);
    the ratio of rsl_rl's median iteration time to redline's, per pair (> 1: redline is faster)."""
    size, task = run.size, run.size.tasks[0]
    share = budget / (2 * size.pairs)
    rows: dict[str, list[dict[str, Any]]] = {"redline": [], "rsl_rl": []}
    for pair in range(size.pairs):
        for learner in rows:
            if size.reuse and pair == 0 and learner == "redline" and run.first and "error" not in run.first:
                rows[learner].append(run.first)  # stage b's run, the same command
                continue
            rows[learner].append(run.train(task, size.num_envs, size.iterations, share, "--learner", learner))
    ratios = [b["iteration_s"] / a["iteration_s"] for a, b in zip(rows["redline"], rows["rsl_rl"], strict=True)]
    return {"task": task, "num_envs": size.num_envs, "runs": rows, "rsl_rl_over_redline": ratios}


def learning(run: Run, budget: float) -> dict[str, Any]:
    """Stage d: :data:`WALK_TASK` trained until the budget ends, then its walking time by docs/go1.md."""
    if run.size.reuse and run.first and "run" in run.first and run.size.tasks[0] == WALK_TASK:
        figures = run.first  # CI's size: the criterion's plumbing on stage b's run (nothing walks in 2 iterations)
    else:
        figures = run.train(WALK_TASK, run.size.num_envs, 100_000, budget)
    walk = _walk_time_module().walk_time(Path(figures["run"]))
    return {"task": WALK_TASK, "num_envs": run.size.num_envs, "train": figures, "walk": walk}


STAGES: dict[str, Callable[[Run, float], dict[str, Any]]] = {
    "cuda_tests": cuda_tests,
    "throughput": throughput,
    "rsl_rl_ratio": rsl_rl_ratio,
    "learning": learning,
}
"""The stages in order of value (issue 38, item 3 a-d)."""


def verdict(result: dict[str, Any]) -> str:
    """One line: which stages passed, the first task's training env steps/s, the rsl_rl ratio and the walk."""
    stages = result["stages"]
    ok = [n for n, s in stages.items() if s["ok"]]
    parts = [f"gpu_sim {result['device']}: {len(ok)}/{len(STAGES)} stages ok"]
    first = next(iter(stages.get("throughput", {}).get("tasks", {}).items()), None)
    if first and "sps" in first[1]:
        parts.append(f"{first[0]} {first[1]['sps']:,.0f} env steps/s ({first[1].get('bottleneck')})")
    ratios = stages.get("rsl_rl_ratio", {}).get("rsl_rl_over_redline")
    if ratios:
        parts.append(f"rsl_rl/redline iteration time {statistics.median(ratios):.2f}x")
    walk = stages.get("learning", {}).get("walk")
    if walk:
        state = "never walked" if walk["censored"] else "walked"
        parts.append(f"Go1 {state} at {walk['minutes']:.1f} min, {walk['env_steps'] / 1e6:.1f} M env steps")
    failed = [n for n in stages if n not in ok]
    return "; ".join(parts) + (f"; failed: {', '.join(failed)}" if failed else "")


def count_env_syncs(task: str, num_envs: int, device: str, steps: int = 5) -> dict[str, Any]:
    """Host syncs of one ``env.step`` of ``task`` (random actions) on a CUDA ``device``, after ``steps`` warm-up
    steps: the mean over ``steps`` counted steps."""
    # heavy: torch, not before the CLI has parsed
    import torch

    # heavy: torch (bench.gpu imports it at its top); this module stays light for its workers
    from redline.bench.gpu import count_syncs

    env_cfg, _ = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", [])
    env_cfg.scene.num_envs = num_envs
    env_cfg.seed = 0
    with isaaclab_env(task, env_cfg, device) as env:
        env.reset()
        actions = torch.zeros(num_envs, env.unwrapped.single_action_space.shape[0], device=device)
        for _ in range(steps):
            env.step(actions)
        counts = [count_syncs(lambda: env.step(actions)) for _ in range(steps)]
    return {"task": task, "num_envs": num_envs, "per_env_step": statistics.fmean(counts), "counts": counts}


def _walk_time_module() -> Any:
    """``scripts/walk_time.py`` of the working tree (the check runs from the repo root)."""
    path = Path("scripts") / "walk_time.py"
    if not path.is_file():
        raise RuntimeError(f"{path} not found: run from the repository root")
    spec = importlib.util.spec_from_file_location("walk_time", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _json_line(out: str) -> dict[str, Any]:
    """The last line of ``out`` that parses as a JSON object (a bench's ``--json`` output)."""
    for line in reversed(out.strip().splitlines()):
        if line.startswith(("{", "[")):
            value = json.loads(line)
            return value[0] if isinstance(value, list) and len(value) == 1 else value
    raise RuntimeError(f"no JSON in the output: {_last_line(out)}")


def _last_line(out: str) -> str:
    lines = out.strip().splitlines()
    return lines[-1] if lines else "no output"


def default_runs() -> Path:
    """Where the runs' folders go unless ``--runs`` says: ``redline-gpu-sim-runs`` in the temporary folder."""
    return Path(tempfile.gettempdir()) / "redline-gpu-sim-runs"


def check(
    out: Path,
    device: str,
    tiny: bool,
    deadline_s: float,
    stages: tuple[str, ...] = tuple(STAGES),
    runs: Path | None = None,
) -> dict:
    """Run ``stages`` in order within ``deadline_s`` seconds, the runs' folders under ``runs``
    (:func:`default_runs` when None); write ``gpu_sim.json`` into ``out``; the result."""
    run = Run(out, device, TINY if tiny else GPU, deadline_s, runs)
    run.result["size"] = dataclasses.asdict(run.size)
    run.result["runs"] = str(run.runs)
    try:
        for name in stages:
            run.stage(name, functools.partial(STAGES[name], run))
        run.result["verdict"] = verdict(run.result)
    finally:
        run.log.close()
        (out / "gpu_sim.json").write_text(json.dumps(run.result, indent=1) + "\n")
    return run.result


def _stage_list(text: str) -> tuple[str, ...]:
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    bad = [n for n in names if n not in STAGES]
    if bad or not names:
        raise UserError(f"--stages: comma-separated names from {', '.join(STAGES)}, got '{text}'")
    return names


def main(argv: list[str] | None = None) -> int:
    """``python -m tools.gpu.gpu_sim``: the check; bad input is one line and exit 2."""
    parser = argparse.ArgumentParser(prog="python -m tools.gpu.gpu_sim", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "gpu_sim_out"), help="($OUT)")
    parser.add_argument("--device", default=None, help="cuda | cpu (default: cuda if available)")
    parser.add_argument("--tiny", action="store_true", help="CI's size: every stage, about a minute on the CPU")
    parser.add_argument("--deadline", type=float, default=420.0, help="seconds for all stages (420)")
    parser.add_argument("--stages", default=",".join(STAGES), help="comma-separated stages (all, in value order)")
    parser.add_argument("--runs", type=Path, default=None, help="the runs' folders, outside --out ($TMPDIR/...)")
    parser.add_argument("--syncs", metavar="TASK", help=argparse.SUPPRESS)  # the child of stage b's sync count
    parser.add_argument("--num_envs", type=int, default=GPU.num_envs, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        stages = _stage_list(args.stages)
        if args.deadline <= 0:
            raise UserError(f"--deadline: must be positive seconds, got {args.deadline}")
        # heavy: torch, not before the CLI has parsed
        import torch

        device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if args.syncs:
            print(json.dumps(count_env_syncs(args.syncs, args.num_envs, device)))
            return 0
        result = check(args.out, device, args.tiny, args.deadline, stages, args.runs)
    except UserError as exc:
        print(f"gpu_sim: error: {exc}", file=sys.stderr)
        return exc.exit_status
    print(result["verdict"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
