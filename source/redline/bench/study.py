"""``redline bench train``: a learning study of the redline learner against rsl_rl 5.5.1 on real tasks.

For every task and seed both learners train in their own process (``redline train --learner ...``) on the same env
config, physics, agent config, precision and seed (:func:`learner_settings` says what reaches which learner;
``study.json`` records it under ``applied``); the order alternates seed by seed (redline first on even positions,
rsl_rl first on odd ones), so drifts in machine load hit both alike. Each finished run's summary is written to the
study folder at once (atomically), so an interrupted study resumes with ``--resume`` and runs only what is missing.

Per run, from its ``metrics.jsonl`` and the reward key ``mean_reward`` (for both learners the mean return of the last
100 finished episodes, rsl_rl's statistic): env steps and wall time to the first iteration at the task's target,
final return, and the normalised area under the learning curve. A run that never reaches the target is *censored*:
it counts as not reached and is never dropped; in the IQM, its CI and P(improvement) its time to target is the run's
total (a lower bound on the true time), as ``study.json`` states. Across seeds, per task and learner: the IQM with a
95 % percentile bootstrap CI, and the probability that a redline run beats an rsl_rl run
(:mod:`redline.bench.study_stats`).

Study folder layout::

    study.json                           options, statistics and every run's summary
    study.png                            learning curves: IQM over seeds with a bootstrap CI band, both learners
    runs/<task>/<learner>/seed<k>.json   one finished run: its command, summary and learning curve
    train/<task>/seed<k>/<learner>/      the run's own folder (metrics.jsonl, train.log)
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from redline import options
from redline.atomic import write_atomic
from redline.bench.ablate import parse_fields
from redline.bench.plot import plot_study
from redline.bench.study_stats import CENSORING, METRICS, REWARD_KEY, compare, summarize_learner, summarize_run
from redline.envs.registry import PRESET_KEYS
from redline.errors import UserError
from redline.outputs.metrics import read_records
from redline.outputs.summary import REWARD_TARGETS

LEARNER = "redline"
OPPONENTS = ("rsl_rl", "none")
"""``--vs`` choices; ``none`` runs the redline learner alone (an ablation to hold against an earlier study)."""
DEFAULT_TARGETS = REWARD_TARGETS
"""Target mean return per task when ``--target`` does not name it (the tasks' own, as ``redline train`` reports)."""
DEFAULT_MAX_ITERATIONS = 100
"""Iterations per run for a task ``--max_iterations`` does not name."""
COMPARED_PRECISION = "fp32"
"""The one precision of a comparison with rsl_rl: rsl_rl's bf16 (``use_mixed_precision``) autocasts its whole forward
pass and loss, redline's keeps fp32 islands, so a bf16 study would compare two precision policies, not two learners."""
NOT_FOR_A_COMPARISON = {
    "agent.algorithm.use_mixed_precision": "the precision of a comparison is fp32 for both (--precision)",
    "agent.torch_compile_mode": "the redline learner ignores it (it captures its own step): rsl_rl alone would change",
    "agent.check_for_nan": "the redline learner ignores it (its NaN guard replaces it): rsl_rl alone would change",
}
"""Agent overrides refused with ``--vs rsl_rl``: each would reach one learner only, or both unequally."""


@dataclasses.dataclass(frozen=True)
class StudyOptions:
    """What ``redline bench train`` runs."""

    tasks: tuple[str, ...] = ("Redline-Cartpole",)
    """Registered task ids."""
    seeds: tuple[int, ...] = (42, 43, 44)
    """Seeds; each runs every learner on every task."""
    targets: Mapping[str, float] = dataclasses.field(default_factory=lambda: dict(DEFAULT_TARGETS))
    """Target mean return per task (every task needs one)."""
    vs: str = "rsl_rl"
    """The other learner, one of :data:`OPPONENTS`."""
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    """Learning iterations per run of a task ``task_iterations`` does not name [iterations]."""
    task_iterations: Mapping[str, int] = dataclasses.field(default_factory=dict)
    """Learning iterations per run of the tasks named here [iterations] (``--max_iterations TASK=N``)."""
    out: Path = Path("logs/bench_train")
    """The study folder."""
    resume: bool = False
    """Keep the finished runs in ``out`` whose command matches this study's, run only the missing ones."""
    device: str | None = None
    """``cpu`` / ``cuda`` / ``cuda:N`` (None: ``redline train``'s default)."""
    precision: str | None = None
    """The redline learner's ``--precision``; with ``vs="rsl_rl"`` only ``fp32`` (None means it), which rsl_rl runs
    too; with ``vs="none"`` None leaves it to the task's agent config."""
    num_envs: int | None = None
    """Envs per run (None: the task's default for the device)."""
    overrides: tuple[str, ...] = ()
    """``env.*``, ``agent.*`` and preset (``physics=...``) overrides, for every learner of the study (the agent config
    is the one both learners read); :data:`NOT_FOR_A_COMPARISON` is refused with ``vs="rsl_rl"``."""
    learner_config: tuple[str, ...] = ()
    """``FIELD=VALUE`` of the redline learner's PPOConfig (ablation switches; :mod:`redline.bench.ablate`); redline
    only, by design, and recorded as a difference in ``study.json``."""
    algorithm: str = "ppo"
    """The redline learner's ``--algorithm`` (a key of :data:`redline.options.ALGORITHMS`); ``sac`` and ``td3``
    only alone (``vs="none"``), compared with a PPO study by ``scripts/compare_studies.py``."""
    bootstrap_reps: int = 2000
    """Bootstrap resamples per confidence interval."""

    def __post_init__(self) -> None:
        if self.vs not in OPPONENTS:
            raise UserError(f"--vs: unknown learner '{self.vs}' (valid: {', '.join(OPPONENTS)})")
        if not self.tasks:
            raise UserError("--tasks: name at least one task")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise UserError(f"--seeds: expected distinct seeds, got {list(self.seeds)}")
        missing = [t for t in self.tasks if t not in self.targets]
        if missing:
            raise UserError(f"--target: no target for {', '.join(missing)} (e.g. --target {missing[0]}=4.9)")
        for task in self.tasks:
            if self.iterations(task) < 1:
                raise UserError(f"--max_iterations: must be >= 1, got {self.iterations(task)} for {task}")
        if self.algorithm not in options.ALGORITHMS:
            raise UserError(f"--algorithm: unknown '{self.algorithm}' (valid: {', '.join(options.ALGORITHMS)})")
        if self.algorithm != "ppo" and self.vs != "none":
            raise UserError(f"--algorithm {self.algorithm}: only with --vs none (rsl_rl has PPO alone)")
        if self.algorithm != "ppo" and self.learner_config:
            raise UserError(
                f"--learner-config: PPOConfig fields, not for --algorithm {self.algorithm} (use --override)"
            )
        fields = parse_fields(self.learner_config)  # a misspelt field fails here, not after the first runs
        if self.vs == "rsl_rl" and "precision" in fields:
            raise UserError("--learner-config precision: the precision of a comparison is --precision's (fp32)")
        for token in self.overrides:
            key = token.partition("=")[0]
            if "=" not in token or not (key.startswith(("env.", "agent.")) or key in PRESET_KEYS):
                raise UserError(
                    f"--override: '{token}' is not env.<field>=<value>, agent.<field>=<value> or "
                    f"{'|'.join(PRESET_KEYS)}=<preset>"
                )
            if self.vs == "rsl_rl" and key in NOT_FOR_A_COMPARISON:
                raise UserError(f"--override: {key} with --vs rsl_rl: {NOT_FOR_A_COMPARISON[key]} (or use --vs none)")
        if self.vs == "rsl_rl" and self.precision not in (None, COMPARED_PRECISION):
            raise UserError(
                f"--precision {self.precision}: rsl_rl runs {COMPARED_PRECISION} in a comparison (valid with --vs "
                f"rsl_rl: {COMPARED_PRECISION}; other precisions with --vs none)"
            )

    def iterations(self, task: str) -> int:
        """Learning iterations per run of ``task``."""
        return self.task_iterations.get(task, self.max_iterations)

    @property
    def learners(self) -> tuple[str, ...]:
        """The learners this study trains."""
        return (LEARNER,) if self.vs == "none" else (LEARNER, self.vs)


# ---------------------------------------------------------------------------------------------------------------------
# One run


def learner_settings(opts: StudyOptions, learner: str) -> dict[str, Any]:
    """What of the study's options reaches ``learner``'s runs (``study.json``'s ``applied``).

    Returns:
        ``precision`` (None: the agent config's), ``overrides`` (the ``redline train`` tokens, in order) and
        ``learner_config`` (PPOConfig fields; redline only). Against rsl_rl both run fp32: redline by
        ``--precision fp32``, rsl_rl by ``agent.algorithm.use_mixed_precision=false`` (rsl_rl ignores
        ``--precision``; the token holds even for a task whose agent config turns mixed precision on).
    """
    compared = opts.vs == "rsl_rl"
    precision = COMPARED_PRECISION if compared else opts.precision
    overrides = list(opts.overrides)
    if learner != LEARNER:
        overrides.append("agent.algorithm.use_mixed_precision=false")
    config = list(opts.learner_config) if learner == LEARNER else []
    return {"precision": precision, "overrides": overrides, "learner_config": config}


def train_command(opts: StudyOptions, task: str, learner: str, seed: int) -> list[str]:
    """The ``redline train`` arguments of one run (without the interpreter and the log folder), from
    :func:`learner_settings`; with a ``learner_config``, :mod:`redline.bench.ablate`'s ``FIELD=VALUE ... --`` in
    front."""
    settings = learner_settings(opts, learner)
    argv = ["train", "--task", task, "--learner", learner, "--seed", str(seed)]
    argv += ["--max_iterations", str(opts.iterations(task)), "--run_name", learner]
    if opts.num_envs is not None:
        argv += ["--num_envs", str(opts.num_envs)]
    if opts.device is not None:
        argv += ["--device", opts.device]
    if learner == LEARNER and settings["precision"] is not None:
        argv += ["--precision", settings["precision"]]
    if opts.algorithm != "ppo":
        argv += ["--algorithm", opts.algorithm]
    argv += ["agent.save_interval=1000000", *settings["overrides"]]  # checkpoints only at the end
    if settings["learner_config"]:
        argv = [*settings["learner_config"], "--", *argv]
    return argv


def write_json_atomic(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically (:func:`redline.atomic.write_atomic`: never a half-written
    file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=1) + "\n")


def run_path(out: Path, task: str, learner: str, seed: int) -> Path:
    """Where one finished run's record lives in the study folder."""
    return out / "runs" / task / learner / f"seed{seed}.json"


def load_finished(out: Path, task: str, learner: str, seed: int, command: list[str]) -> dict[str, Any] | None:
    """The finished run's record if the study folder holds one made by ``command``, else None."""
    path = run_path(out, task, learner, seed)
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    return record if record.get("command") == command else None


def _train_once(opts: StudyOptions, task: str, learner: str, seed: int) -> dict[str, Any]:
    """Train one run in a subprocess; returns its record (``command`` and :func:`summarize_run`'s summary)."""
    command = train_command(opts, task, learner, seed)
    log_root = opts.out / "train" / task / f"seed{seed}" / learner
    if log_root.exists():
        shutil.rmtree(log_root)  # a run interrupted before it finished: start it over
    log_root.mkdir(parents=True)
    started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    with open(log_root / "train.log", "w") as log:
        module = "redline.bench.ablate" if "--" in command else "redline.cli"
        argv = [sys.executable, "-m", module, *command, "--log_root", str(log_root)]
        proc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        lines = (log_root / "train.log").read_text().strip().splitlines() or ["(no output)"]
        raise UserError(f"bench train: {task} {learner} seed {seed} failed: {lines[-1]} (log: {log_root}/train.log)")
    (metrics,) = log_root.glob("*/*/metrics.jsonl")
    records = read_records(metrics)  # a cut-short last line (a killed run) is skipped, as `redline report` does
    return {
        "task": task,
        "learner": learner,
        "seed": seed,
        "command": command,
        "started": started,
        "run_dir": str(metrics.parent),
        **summarize_run(records, opts.targets[task]),
    }


# ---------------------------------------------------------------------------------------------------------------------
# Across seeds


def analyse(opts: StudyOptions, runs: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """The study's result (``study.json``) from its runs: ``runs[task][learner]`` = run records."""
    tasks: dict[str, Any] = {}
    for task in opts.tasks:
        by = runs[task]
        entry: dict[str, Any] = {
            "target": opts.targets[task],
            "learners": {name: summarize_learner(by[name], opts.bootstrap_reps) for name in opts.learners},
            "runs": {name: [{k: v for k, v in r.items() if k != "curve"} for r in by[name]] for name in opts.learners},
        }
        if opts.vs != "none":
            entry["p_improvement"] = compare(by[LEARNER], by[opts.vs], opts.bootstrap_reps)
        tasks[task] = entry
    options = {f.name: getattr(opts, f.name) for f in dataclasses.fields(opts)}
    options.update(out=str(opts.out), targets=dict(opts.targets))
    differences = []  # deliberate, recorded: an ablation of redline's own switches against rsl_rl's runs
    if opts.learner_config and opts.vs != "none":
        differences.append(f"learner_config {' '.join(opts.learner_config)}: the redline learner only")
    result: dict[str, Any] = {
        "options": options,
        "reward_key": REWARD_KEY,
        "statistics": (
            "IQM = scipy.stats.trim_mean(x, 0.25) over seeds; ci95 = 95 % percentile bootstrap over seeds "
            f"({opts.bootstrap_reps} resamples, numpy seed 0, stratified by task); p_improvement = P(redline run "
            "better than a run of the other learner), Mann-Whitney U / (n m), ties 1/2; lower is better for "
            "*_to_target"
        ),
        "censoring": CENSORING,
        "auc": "mean of the learning curve over env steps (trapezoid), in return units",
        "applied": {name: learner_settings(opts, name) for name in opts.learners},
        "differences": differences,
        "tasks": tasks,
    }
    if len(opts.tasks) > 1 and opts.vs != "none":
        result["p_improvement_mean_over_tasks"] = {
            m: float(np.mean([tasks[t]["p_improvement"][m]["p"] for t in opts.tasks]))
            for m in METRICS
            if all(tasks[t]["p_improvement"][m] is not None for t in opts.tasks)
        }
    return result


# ---------------------------------------------------------------------------------------------------------------------
# The study


def study_plan(opts: StudyOptions) -> list[tuple[str, int, str]]:
    """``(task, seed, learner)`` in run order: seed by seed, the learners' order alternating between seeds."""
    plan = []
    for task in opts.tasks:
        for i, seed in enumerate(opts.seeds):
            order = opts.learners if i % 2 == 0 else tuple(reversed(opts.learners))
            plan += [(task, seed, learner) for learner in order]
    return plan


def run_study(opts: StudyOptions, train_fn: Any = None) -> dict[str, Any]:
    """Run (or resume) the study, write ``study.json`` and ``study.png`` into ``opts.out``; returns the result.

    Args:
        opts: the study.
        train_fn: ``(opts, task, learner, seed) -> record`` (default: train in a subprocess); tests pass a fake.
            A record needs ``command`` (:func:`train_command`'s) to be kept by a resume.
    """
    train_fn = _train_once if train_fn is None else train_fn
    if not opts.resume and (opts.out / "runs").exists() and any((opts.out / "runs").rglob("*.json")):
        raise UserError(f"--out: {opts.out} already holds runs; pass --resume to continue it, or choose a new folder")
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {t: {name: [] for name in opts.learners} for t in opts.tasks}
    plan = study_plan(opts)
    for n, (task, seed, learner) in enumerate(plan, 1):
        record = load_finished(opts.out, task, learner, seed, train_command(opts, task, learner, seed))
        kept = record is not None
        if record is None:
            record = train_fn(opts, task, learner, seed)
            write_json_atomic(run_path(opts.out, task, learner, seed), record)  # kept even if a later run fails
        runs[task][learner].append(record)
        to = f"it {record['iteration']}, {record['wall_s_to_target']:.1f} s" if record["reached"] else "not reached"
        note = " (kept)" if kept else ""
        print(f"[bench train] {n}/{len(plan)} {task} {learner} seed {seed}: {to}{note}", file=sys.stderr, flush=True)
    for by in runs.values():
        for recs in by.values():
            recs.sort(key=lambda r: opts.seeds.index(r["seed"]))
    result = analyse(opts, runs)
    write_json_atomic(opts.out / "study.json", result)

    plot_study(opts, runs, opts.out / "study.png")
    result["plot"] = str(opts.out / "study.png")
    return result


# ---------------------------------------------------------------------------------------------------------------------
# Command line


def _target(text: str) -> tuple[str, float]:
    """``TASK=RETURN`` -> ``(task, return)`` (an argparse type)."""
    task, _, value = text.rpartition("=")
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not task or not np.isfinite(number):
        raise argparse.ArgumentTypeError(f"expected TASK=RETURN (e.g. Redline-Cartpole=4.9), got '{text}'")
    return task, number


def _iterations(text: str) -> tuple[str, int]:
    """``N`` (every task; returned as ``("", N)``) or ``TASK=N`` (an argparse type)."""
    task, _, value = text.rpartition("=")
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected N or TASK=N with N >= 1 (e.g. Redline-Ant=300), got '{text}'")
    return task, number


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``redline bench train``'s options (the CLI adds ``--json`` and ``--device``)."""
    parser.add_argument("--tasks", default="Redline-Cartpole", help="comma-separated task ids (Redline-Cartpole)")
    parser.add_argument("--seeds", type=options.positive_int, default=3, help="seeds seed, seed+1, ... (3)")
    parser.add_argument("--seed", type=options.seed, default=42, help="first seed (42)")
    parser.add_argument("--seed-list", default=None, help="comma-separated seeds (instead of --seeds/--seed)")
    parser.add_argument("--vs", default="rsl_rl", help="the other learner: rsl_rl | none (redline alone)")
    parser.add_argument(
        "--max_iterations",
        type=_iterations,
        action="append",
        default=[],
        help=f"iterations per run: N for every task, or TASK=N per task ({DEFAULT_MAX_ITERATIONS})",
    )
    parser.add_argument(
        "--target", type=_target, action="append", default=[], help="TASK=RETURN, per task (Redline-Cartpole=4.9)"
    )
    parser.add_argument("--out", default=None, help="study folder (logs/bench_train/<date>)")
    parser.add_argument("--resume", action="store_true", help="keep the finished runs in --out, run the rest")
    parser.add_argument("--num_envs", type=int, default=None, help="envs per run (the task's default)")
    parser.add_argument(
        "--precision", default=None, help="fp32 (both learners; with --vs none also auto | bf16, the agent config's)"
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        help="both learners: env.x=y / agent.x=y / physics=<preset> (repeatable)",
    )
    parser.add_argument(
        "--algorithm",
        default="ppo",
        help="the redline learner's: ppo | sac | td3 (the off-policy two with --vs none) (ppo)",
    )
    parser.add_argument(
        "--learner-config",
        action="append",
        default=[],
        help="redline learner only: PPOConfig FIELD=VALUE, e.g. reshuffle_each_epoch=false (repeatable; ablations)",
    )


def options_from_args(args: argparse.Namespace) -> StudyOptions:
    """:class:`StudyOptions` from the parsed command line."""
    if args.seed_list:
        try:
            seeds = tuple(int(s) for s in args.seed_list.split(",") if s.strip())
        except ValueError:
            raise UserError(f"--seed-list: expected comma-separated integers, got '{args.seed_list}'") from None
    else:
        if args.seeds < 1:
            raise UserError(f"--seeds: must be >= 1, got {args.seeds}")
        seeds = tuple(range(args.seed, args.seed + args.seeds))
    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    return StudyOptions(
        tasks=tuple(t.strip() for t in args.tasks.split(",") if t.strip()),
        seeds=seeds,
        targets={**DEFAULT_TARGETS, **dict(args.target)},
        vs=args.vs,
        max_iterations=next((n for task, n in reversed(args.max_iterations) if not task), DEFAULT_MAX_ITERATIONS),
        task_iterations={task: n for task, n in args.max_iterations if task},
        out=Path(args.out) if args.out else Path("logs/bench_train") / stamp,
        resume=args.resume,
        device=getattr(args, "device", None),
        precision=args.precision,
        num_envs=args.num_envs,
        overrides=tuple(args.override),
        learner_config=tuple(args.learner_config),
        algorithm=args.algorithm,
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the study the parsed arguments describe; returns ``study.json``'s content."""
    return run_study(options_from_args(args))


def _fmt(entry: dict[str, Any] | None, scale: float = 1.0, digits: int = 1) -> str:
    if entry is None:
        return "n/a"
    low, high = entry["ci95"]
    return f"{entry['iqm'] / scale:.{digits}f} [{low / scale:.{digits}f}, {high / scale:.{digits}f}]"


def show(result: dict[str, Any]) -> None:
    """Print the study's table: IQM [95 % CI] per learner and task, and P(improvement)."""
    print(f"redline bench train: {result['options']['out']} (reward key '{result['reward_key']}')")
    for task, entry in result["tasks"].items():
        print(f"\n{task}, target {entry['target']}: IQM [95 % CI] over seeds; censored runs count at their total")
        print(
            f"  {'learner':8s} {'reached':>8s}  {'env steps to target (k)':>26s}  {'wall s to target':>22s}  ", end=""
        )
        print(f"{'final return':>24s}  {'AUC':>24s}")
        for name, s in entry["learners"].items():
            reached = f"{s['reached']}/{s['runs']}"
            print(f"  {name:8s} {reached:>8s}  {_fmt(s['env_steps_to_target'], 1e3):>26s}  ", end="")
            print(f"{_fmt(s['wall_s_to_target']):>22s}  {_fmt(s['final_reward'], digits=3):>24s}  ", end="")
            print(f"{_fmt(s['auc'], digits=3):>24s}")
        for metric, p in (entry.get("p_improvement") or {}).items():
            if p is not None:
                print(f"  P(redline better) {metric}: {p['p']:.2f} [{p['ci95'][0]:.2f}, {p['ci95'][1]:.2f}]")
    if "plot" in result:
        print(f"\nplot: {result['plot']}")


if __name__ == "__main__":  # until the CLI wires it: python -m redline.bench.study --tasks ... --out ...
    _parser = argparse.ArgumentParser(prog="python -m redline.bench.study")
    add_arguments(_parser)
    _parser.add_argument("--device", default=None, help="cpu | cuda | cuda:N")
    _parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    _args = _parser.parse_args()
    try:
        _result = run(_args)
    except UserError as e:
        sys.exit(f"error: {e}")
    print(json.dumps(_result)) if _args.json else show(_result)
