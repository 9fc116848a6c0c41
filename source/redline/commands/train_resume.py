"""Where a ``redline train`` run starts from — ``--resume``, an unfinished run of the same command, or nothing — and
the run folder it writes in (:func:`start_run`).

An interrupted run is continued *as the same run*: in its own folder (the ``metrics.jsonl`` records past the
checkpoint dropped), from its newest intact checkpoint, to the iteration it was to end at
(:mod:`redline.outputs.run_record`). Three ways lead there:

- the same command again, no flag added (a container restarted by its orchestrator, a killed shell): the newest
  unfinished run whose record has this command's fingerprint is continued (``--resume never`` starts a new run);
- ``--resume latest`` / a run folder / that run's newest checkpoint, for a run of the same command that did not finish;
- an elastic restart under ``torchrun --max-restarts N``: the job's own folder (by torchrun's run id), even before
  its first checkpoint (it then starts over there).

Anything else given to ``--resume`` — a finished run, an older checkpoint, a run of another command — starts a new
run folder from that checkpoint and runs ``max_iterations`` more, as rsl_rl's ``--resume`` does.

In a multi-process run rank 0 decides and every rank gets its answer (one ``broadcast_object_list``), so a checkpoint
saved meanwhile cannot make ranks load different iterations.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from redline.commands import process_group
from redline.commands.process_group import DistContext
from redline.envs.prepare import PreparedEnv
from redline.errors import ExpectedExit, OutputError, UserError
from redline.options import TrainOptions
from redline.outputs import elastic, run_record
from redline.outputs.checkpoints import load_checkpoint, resolve_checkpoint
from redline.outputs.folders import new_run_dir, remove_if_empty_run
from redline.runners.stop import Stopped, StopRequest

RESUME_NEVER = "never"
"""``--resume never``: start a new run even where an unfinished run of the same command exists."""


@dataclasses.dataclass(frozen=True)
class ResumePlan:
    """What a run continues from."""

    checkpoint: Path | None = None
    """The checkpoint to load (None: start fresh)."""
    run_dir: Path | None = None
    """An existing run folder to keep writing in (an interrupted run continued); None: rank 0 creates a new one."""
    last_iteration: int | None = None
    """The iteration the continued run ends at (its record's); None: ``max_iterations`` after the checkpoint's."""
    found_by: str = "resume"
    """How the continued run was found: ``"resume"`` (``--resume``), ``"restart"`` (torchrun restarted the workers)
    or ``"same command"`` (an unfinished run of the same command, without ``--resume``)."""

    def iterations(self, checkpoint_iteration: int | None, max_iterations: int) -> int:
        """Iterations this attempt runs after ``checkpoint_iteration`` (None: none loaded)."""
        if self.last_iteration is None:
            return max_iterations
        start = -1 if checkpoint_iteration is None else checkpoint_iteration
        return max(self.last_iteration - start, 0)


def plan_resume(spec: str | None, experiment_dir: Path, ctx: DistContext | None, fingerprint: str) -> ResumePlan:
    """The :class:`ResumePlan` of ``--resume spec`` (None: not given) for a command of ``fingerprint``
    (:func:`redline.outputs.run_record.fingerprint`), the same on every rank.

    Raises:
        UserError: ``spec`` names no readable checkpoint (on every rank, with the same message).
    """
    attempt = elastic.Attempt.from_environ() if ctx is not None else None
    if ctx is None:
        return _plan(spec, experiment_dir, None, fingerprint)

    if attempt is not None:
        # a restart on any node restarts every node, but only the agents that saw a worker fail count it (the
        # others restart for the changed membership): the highest count is the job's
        count = torch.tensor([attempt.restart], device=ctx.device)
        dist.all_reduce(count, op=dist.ReduceOp.MAX)
        attempt = dataclasses.replace(attempt, restart=int(count.item()))
    answer: list[Any] = [None]
    if ctx.rank == 0:
        try:
            answer[0] = _plan(spec, experiment_dir, attempt, fingerprint)
        except UserError as exc:
            answer[0] = exc  # every rank raises the same one-line error
    dist.broadcast_object_list(answer, src=0)
    if isinstance(answer[0], UserError):
        raise answer[0]
    return answer[0]


def _plan(spec: str | None, experiment_dir: Path, attempt: elastic.Attempt | None, fingerprint: str) -> ResumePlan:
    if attempt is not None and attempt.restarted:
        run_dir = run_record.find_run(experiment_dir, run_id=attempt.run_id)
        record = None if run_dir is None else run_record.read_record(run_dir)
        if run_dir is not None and record is not None:
            checkpoint = run_record.last_checkpoint(run_dir)
            if checkpoint is None and spec not in (None, RESUME_NEVER):  # failed before its first checkpoint:
                checkpoint = resolve_checkpoint(spec, experiment_dir)  # start over in the same folder
            return ResumePlan(checkpoint, run_dir, record.last_iteration, found_by="restart")
    if spec == RESUME_NEVER:
        return ResumePlan()
    if spec is None:
        run_dir = run_record.find_run(experiment_dir, fingerprint=fingerprint)
        record = None if run_dir is None else run_record.read_record(run_dir)
        if run_dir is None or record is None:
            return ResumePlan()
        return ResumePlan(run_record.last_checkpoint(run_dir), run_dir, record.last_iteration, found_by="same command")
    checkpoint = resolve_checkpoint(spec, experiment_dir)
    run_dir = checkpoint.parent
    record = run_record.read_record(run_dir)
    same_run = (
        record is not None
        and record.fingerprint == fingerprint
        and not run_record.finished(run_dir, record)
        and run_record.last_checkpoint(run_dir) == checkpoint
    )
    if record is not None and same_run:
        return ResumePlan(checkpoint, run_dir, record.last_iteration)
    return ResumePlan(checkpoint)


@dataclasses.dataclass(frozen=True)
class RunStart:
    """Where a run starts (:func:`start_run`)."""

    checkpoint: dict[str, Any] | None
    """The loaded checkpoint it continues from (None: a fresh start)."""
    path: Path | None
    """That checkpoint's file."""
    run_dir: Path | None
    """The run folder rank 0 writes in (None on the other ranks, which write no files)."""


@contextlib.contextmanager
def start_run(
    opts: TrainOptions, prepared: PreparedEnv, ctx: DistContext | None, stop: StopRequest
) -> Iterator[RunStart]:
    """The run ``opts`` start, for the body of a ``with``: the checkpoint it continues (:func:`plan_resume`) loaded
    on every rank, ``prepared.agent_cfg.max_iterations`` set to the iterations left, and rank 0's run folder opened
    and locked (the same command started again meanwhile starts a run of its own). A run stopped by bad input found
    late or a full disk before its first checkpoint leaves no empty folder."""
    agent_cfg = prepared.agent_cfg
    fingerprint = run_fingerprint(opts, prepared, 1 if ctx is None else ctx.world_size)
    plan = plan_resume(opts.resume, opts.run.log_root / agent_cfg.experiment_name, ctx, fingerprint)
    checkpoint = None if plan.checkpoint is None else load_checkpoint(plan.checkpoint, prepared.device, "--resume")
    start = -1 if checkpoint is None else int(checkpoint["iter"])
    agent_cfg.max_iterations = plan.iterations(None if checkpoint is None else start, agent_cfg.max_iterations)
    process_group.barrier()  # every rank has its checkpoint before rank 0 creates the new run folder
    run_dir = lock = None
    if ctx is None or ctx.rank == 0:
        run_dir = _open_run_dir(opts, plan, fingerprint, start, agent_cfg)
        lock = run_record.RunLock(run_dir)
    stop.run_dir = run_dir  # a signal before the first checkpoint removes it
    prepared.env_cfg.log_dir = str(run_dir) if run_dir is not None else None
    try:
        yield RunStart(checkpoint, plan.checkpoint, run_dir)
    except ExpectedExit as exc:
        if not isinstance(exc, Stopped):
            remove_if_empty_run(run_dir)  # bad input found late, a full disk before the first save: no empty run
        raise
    finally:
        if lock is not None:
            lock.release()


def run_fingerprint(opts: TrainOptions, prepared: PreparedEnv, world: int) -> str:
    """The fingerprint of the experiment ``opts`` define (:func:`redline.outputs.run_record.fingerprint`): the same
    command run again has it, on any process count (the env count is the total); output-only options (logger,
    video, profile, timeouts) and ``--resume`` are left out."""
    overrides = [t for t in opts.run.overrides if not t.startswith("env.scene.num_envs=")]  # the total counts instead
    return run_record.fingerprint(
        {
            "task": prepared.task,
            "num_envs": prepared.env_cfg.scene.num_envs * world,
            "device": prepared.device.partition(":")[0],
            "seed": opts.run.seed,
            "seeding": opts.run.seeding,
            "max_iterations": prepared.agent_cfg.max_iterations,
            "learner": opts.learner,
            "precision": opts.precision,
            "capture": opts.capture,
            "run_name": opts.run_name,
            "overrides": overrides,
        }
    )


def _open_run_dir(opts: TrainOptions, plan: ResumePlan, fingerprint: str, start: int, agent_cfg: Any) -> Path:
    """The run folder rank 0 writes in: the interrupted run ``plan`` continues (its metrics after iteration
    ``start`` dropped), or a new one with its record (:mod:`redline.outputs.run_record`)."""
    if plan.run_dir is not None:
        run_record.trim_metrics(plan.run_dir, start)
        how = {
            "restart": "torchrun restarted the workers: continuing",
            "same command": "continuing this command's unfinished run",
        }.get(plan.found_by, "continuing the interrupted run")
        where = f"after iteration {start}" if start >= 0 else "from the start (it saved no checkpoint)"
        never = f" (--resume {RESUME_NEVER}: start a new run instead)" if plan.found_by == "same command" else ""
        end = start + agent_cfg.max_iterations
        print(f"[redline] {how} {plan.run_dir} {where}, to iteration {end}{never}", flush=True)
        return plan.run_dir
    if plan.checkpoint is not None:
        print(
            f"[redline] resuming from {plan.checkpoint} (iteration {start}) in a new run: "
            f"{agent_cfg.max_iterations} more iterations",
            flush=True,
        )
    run_dir = new_run_dir(opts.run.log_root, agent_cfg.experiment_name, opts.run_name)
    attempt = elastic.Attempt.from_environ() if opts.distributed else None
    run_id = None if attempt is None else attempt.run_id
    record = run_record.RunRecord(fingerprint, start + agent_cfg.max_iterations, run_id)
    try:
        run_record.write_record(run_dir, record)
    except OSError as exc:
        raise OutputError.writing("run folder", run_dir / run_record.RECORD, exc) from None
    return run_dir
