"""The ``redline`` command: ``list``, ``train``, ``play``, ``bench``, ``report``, ``assets``.

Arguments are checked before Isaac Lab is imported, so a typo costs milliseconds, not the simulator's
start-up. Bad input prints one line, ``redline <command>: error: <field>: <what is valid>``, and exits 2.
Anything after the options in ``key=value`` form is a Hydra-style config override (``env.scene.num_envs=128``,
``agent.algorithm.learning_rate=3e-4``), as in Isaac Lab's scripts.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from redline import __version__, options
from redline.caches import build_assets, check_caches
from redline.commands import lifeline
from redline.commands.launch import launch_train
from redline.commands.report import report
from redline.envs.registry import PLAY_SUFFIX, redline_task_ids
from redline.errors import ExpectedExit, OutputError, UserError
from redline.host import tune_allocator
from redline.options import Parser, PlayOptions, RunOptions, TrainOptions
from redline.runners.stop import STARTUP, StopRequest

BENCHES = {
    "learner": ("redline.bench.learner", "redline vs rsl_rl PPO on a synthetic env, timed in alternation"),
    "env": ("redline.bench.env", "a task's env steps/s alone, with policy inference, and while training"),
    "train": ("redline.bench.study", "redline vs rsl_rl on real tasks over seeds: time to a target, IQM [CI]"),
    "distributed": ("redline.bench.data_parallel", "the redline learner on 1 vs --nproc ranks, same global batch"),
    "seeding": ("redline.bench.seeding", "per-reset cost of each seeding strategy"),
    "physics": ("redline.bench.physics", "MuJoCo-Warp vs MuJoCo-C (physics=mujoco_cpu) env steps/s on the CPU"),
    "steps": ("redline.bench.steps", "where one training env step's time goes, phase by phase (CPU)"),
    "cores": ("redline.bench.cores", "the default CPU training command vs one process, beside raw mujoco.rollout"),
    "gpu": ("redline.bench.gpu", "the GPU acceptance run (syncs, captured update, Philox); --pack builds its bundle"),
}
"""``redline bench <name>``: the module that implements it (``add_arguments``, ``run``, ``show``) and its summary."""


def _bench_named(argv: Sequence[str]) -> str | None:
    """The bench ``argv`` selects (``redline bench <name> ...``), or None."""
    tokens = list(argv)
    if "bench" not in tokens:
        return None
    rest = tokens[tokens.index("bench") + 1 :]
    return rest[0] if rest and rest[0] in BENCHES else None


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The ``redline`` parser; of the benches, only the one ``argv`` selects gets its options (and is imported)."""
    parser = Parser(prog="redline", description="Train Isaac Lab robot policies with the hardware at its limit.")
    parser.add_argument("--version", action="version", version=f"redline {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    sub.add_parser("list", help="list the registered Redline-* tasks")

    train = sub.add_parser(
        "train",
        help="train a task with PPO (default) or off-policy SAC (--algorithm sac)",
        epilog="Trailing key=value tokens are Hydra overrides.",
    )
    options.add_arguments(train, TrainOptions)

    play = sub.add_parser(
        "play", help="play a checkpoint headless and export it", epilog="Trailing key=value tokens are Hydra overrides."
    )
    options.add_arguments(play, PlayOptions)

    bench = sub.add_parser("bench", help="benchmarks whose output docs/performance.md records (not timed tests)")
    benches = bench.add_subparsers(dest="bench", required=True, parser_class=Parser)
    chosen = _bench_named(argv)
    for name, (module, summary) in BENCHES.items():
        b = benches.add_parser(name, help=summary, description=summary)
        if name != chosen:
            continue  # only the chosen bench's module is imported (they import torch)
        importlib.import_module(module).add_arguments(b)
        b.add_argument("--device", default=None, help=options.help_of(RunOptions, "device"))
        b.add_argument("--json", action="store_true", help="print the result as one JSON object")

    report = sub.add_parser("report", help="plot a run's metrics.jsonl and summarise it; compare two runs")
    report.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help="one or two run folders")
    report.add_argument("--out", type=Path, default=None, help="where the PNGs go (default: RUN_DIR/report)")

    assets = sub.add_parser(
        "assets",
        help="build the local asset root and print its path "
        "(export ISAACSIM_ASSET_ROOT=$(redline assets) serves Isaac Lab's stock tasks)",
    )
    assets.add_argument("--root", type=Path, default=None, help="where to build it (default: ~/.cache/redline/...)")
    return parser


def _run(args: argparse.Namespace, extra: list[str], stop: StopRequest | None = None) -> int:
    if extra and args.command not in ("train", "play"):  # only train and play take key=value overrides
        raise UserError(f"unrecognized arguments: {' '.join(extra)}")
    if args.command == "list":
        return _list()
    if args.command == "assets":
        root = build_assets(args.root)
        print(
            f"[redline] local asset root ready; for Isaac Lab's stock tasks: export ISAACSIM_ASSET_ROOT={root}",
            file=sys.stderr,
        )
        print(root)
        return 0
    if args.command == "report":
        text, paths = report(args.run_dirs, args.out)
        print(text)
        print(f"[redline] wrote {len(paths)} plots to {paths[0].parent}", file=sys.stderr)
        return 0
    if args.command == "bench":
        result, show = _bench(args)
        if args.json:
            plain = dataclasses.is_dataclass(result) and not isinstance(result, type)
            print(json.dumps(dataclasses.asdict(result) if plain else result))
        else:
            show(result)
        return 0
    if args.command in ("train", "play"):
        check_caches()  # Warp's kernel cache and the asset root, before Isaac Lab is imported (redline.caches)
    if args.command == "train":
        return launch_train(options.from_arguments(TrainOptions, args, extra), stop)
    if args.command == "play":
        from redline.commands.play import play  # heavy (torch, Isaac Lab): after parsing

        play(options.from_arguments(PlayOptions, args, extra))
        return 0
    raise AssertionError(args.command)


def _bench(args: argparse.Namespace) -> tuple[Any, Callable[[Any], None]]:
    """Run the benchmark ``args.bench`` names; returns its result and the function that prints it for people."""
    module = importlib.import_module(BENCHES[args.bench][0])
    return module.run(args), module.show


def _list() -> int:
    # heavy: gymnasium (~0.3 s), not before the CLI has parsed
    import gymnasium as gym

    ids = redline_task_ids()
    width = max(len(t) for t in ids)
    print(f"{'task':<{width}}  env config")
    for task in ids:
        entry = gym.spec(task).kwargs["env_cfg_entry_point"]
        kind = "play" if task.endswith(PLAY_SUFFIX) else "train"
        print(f"{task:<{width}}  {entry}  ({kind})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``redline`` console script; returns the exit status.

    Run as the program (``argv`` None: the console script, ``python -m redline.cli``) it freezes the garbage
    collector's objects before returning, so the interpreter's shutdown skips its full collections over the million
    objects Isaac Lab, USD and torch leave (seconds on a small CPU); the process's memory goes back to the
    system either way. A caller that passes ``argv`` keeps a collectable heap.
    """
    try:
        return _entry(list(sys.argv[1:] if argv is None else argv), program=argv is None)
    finally:
        if argv is None:
            gc.freeze()


def _entry(argv: list[str], program: bool) -> int:
    try:
        os.getcwd()  # a shell whose folder was deleted: torch's MKL then fails to load with a FATAL ERROR line
    except FileNotFoundError:
        print("redline: error: the working directory no longer exists; cd to an existing folder", file=sys.stderr)
        return 2
    if "--distributed" in argv:  # c10d logs C++ stack frames with its errors; redline names the failure in one line
        os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "FATAL")
        lifeline.watch(lifeline.exit_now)  # under --nproc: end at once if the launching command is killed
    command = next((a for a in argv if a in {"list", "train", "play", "assets", "bench", "report"}), None)
    if command == "train" and "--distributed" not in argv:  # a rank keeps its launcher's, which it inherited
        lifeline.mark_launch(program)  # metrics.jsonl's since_launch_s counts from here
    prog = f"redline {command}" if command else "redline"
    # first thing: a stop signal during start-up ends the run at once, in one line (redline.runners.stop)
    stop = StopRequest(STARTUP, prog) if command == "train" else None
    with stop.installed() if stop is not None else contextlib.nullcontext():
        return _main(argv, command, prog, stop)


def _main(argv: list[str], command: str | None, prog: str, stop: StopRequest | None) -> int:
    try:
        if command in ("train", "play", "bench"):
            tune_allocator()  # before the first large tensor: freed CPU tensors are reused, not unmapped (redline.host)
        args, extra = build_parser(argv).parse_known_args(argv)
        return _run(args, extra, stop)
    except ExpectedExit as exc:  # bad input (2), an unwritable output (74), a stop signal (128 + signal)
        error = "error: " if isinstance(exc, UserError | OutputError) else ""
        print(f"{prog}: {error}{exc}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
