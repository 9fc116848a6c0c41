"""``redline train``: build a task's environment and train it with the selected learner."""

from __future__ import annotations

from pathlib import Path

from redline.commands import preflight, process_group
from redline.commands.train_loop import run_training
from redline.commands.train_resume import start_run
from redline.options import TrainOptions
from redline.outputs.metrics import read_records
from redline.outputs.summary import summary_lines
from redline.runners.stop import STARTUP, StopRequest
from redline.telemetry.verdict import PHASES


def train(opts: TrainOptions, stop: StopRequest | None = None) -> Path | None:
    """Train and return the run folder (checkpoints, ``params/``, ``metrics.jsonl``, TensorBoard events); None on
    ranks other than 0 of a multi-process run (they write no files).

    Args:
        opts: the options.
        stop: the stop request whose handlers are installed (the CLI installs one first thing); None: one is
            installed here. Until the training loop starts a signal ends the process at once
            (:mod:`redline.runners.stop`).
    """
    if stop is None:
        stop = StopRequest(STARTUP)
        with stop.installed():
            return train(opts, stop)
    with process_group.joined(opts.distributed, opts.run.device, opts.dist_timeout, stop) as ctx:
        setup = preflight.prepare(opts, ctx)  # a config error surfaces before the simulator starts
        with start_run(opts, setup.env, ctx, stop) as start:
            elapsed = run_training(opts, setup, start, ctx, stop)
    if start.run_dir is None:
        return None
    records = read_records(start.run_dir / "metrics.jsonl")
    last = records[-1] if records else {}
    first = 0 if start.checkpoint is None else int(start.checkpoint["iter"]) + 1
    for line in summary_lines(setup.env.task, start.run_dir, records, elapsed, first_iteration=first):
        print(f"[redline] {line}", flush=True)
    if "bottleneck" in last:
        split = ", ".join(f"{k.removesuffix('_s')} {last[k]:.3f} s" for k in PHASES if last.get(k) is not None)
        print(f"[redline] last iteration: {split}; {last['bottleneck']}: try {last['next_action']}", flush=True)
    return start.run_dir
