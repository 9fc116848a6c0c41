"""Where a ``redline train`` run starts (:func:`start_run`): the resume plan agreed by every rank
(:func:`redline.outputs.run_search.plan_resume`: ``--resume``, an unfinished run of the same command, a torchrun
restart, or nothing), its checkpoint loaded, and rank 0's run folder opened (:mod:`redline.outputs.run_folder`).

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
from redline.errors import UserError
from redline.options import TrainOptions
from redline.outputs import elastic, run_folder, run_search
from redline.outputs.checkpoints import load_checkpoint
from redline.runners.stop import StopRequest


@dataclasses.dataclass(frozen=True)
class RunStart:
    """Where a run starts (:func:`start_run`)."""

    checkpoint: dict[str, Any] | None
    """The loaded checkpoint it continues from (None: a fresh start)."""
    path: Path | None
    """That checkpoint's file."""
    run_dir: Path | None
    """The run folder rank 0 writes in (None on the other ranks, which write no files)."""
    iterations: int
    """Iterations this attempt runs, after the checkpoint's (the agent config keeps the run's
    ``max_iterations``, which ``params/agent.yaml`` records)."""


@contextlib.contextmanager
def start_run(
    opts: TrainOptions, prepared: PreparedEnv, ctx: DistContext | None, stop: StopRequest
) -> Iterator[RunStart]:
    """The run ``opts`` start, for the body of a ``with``: the checkpoint it continues (:func:`agreed_plan`) loaded
    on every rank, the iterations left to run, and rank 0's run folder opened
    and locked (the same command started again meanwhile starts a run of its own) until the body ends
    (:func:`redline.outputs.run_folder.opened`)."""
    agent_cfg = prepared.agent_cfg
    plan, new = agreed_plan(opts, prepared, ctx)
    checkpoint = None if plan.checkpoint is None else load_checkpoint(plan.checkpoint, prepared.device, "--resume")
    start = -1 if checkpoint is None else int(checkpoint["iter"])
    iterations = plan.iterations(None if checkpoint is None else start, agent_cfg.max_iterations)
    process_group.barrier()  # every rank has its checkpoint before rank 0 creates the new run folder
    with run_folder.opened(plan, start, iterations, new) as run_dir:
        stop.run_dir = run_dir  # a signal before the first checkpoint removes it
        prepared.env_cfg.log_dir = str(run_dir) if run_dir is not None else None
        yield RunStart(checkpoint, plan.checkpoint, run_dir, iterations)


def agreed_plan(
    opts: TrainOptions, prepared: PreparedEnv, ctx: DistContext | None
) -> tuple[run_search.ResumePlan, run_folder.NewRun | None]:
    """The resume plan of ``opts`` (:func:`redline.outputs.run_search.plan_resume`), the same on every rank, and —
    on rank 0, which writes the files — where a new run folder goes.

    Raises:
        UserError: ``--resume`` names no readable checkpoint (on every rank, with the same message).
    """
    attempt = elastic.Attempt.from_environ() if ctx is not None else None
    if ctx is not None and attempt is not None:
        # a restart on any node restarts every node, but only the agents that saw a worker fail count it (the
        # others restart for the changed membership): the highest count is the job's
        count = torch.tensor([attempt.restart], device=ctx.device)
        dist.all_reduce(count, op=dist.ReduceOp.MAX)
        attempt = dataclasses.replace(attempt, restart=int(count.item()))
    answer: list[Any] = [None]
    new = None
    if ctx is None or ctx.rank == 0:
        options = experiment_options(opts, prepared, 1 if ctx is None else ctx.world_size)
        command = run_search.fingerprint(options)
        experiment = prepared.agent_cfg.experiment_name
        run_id = None if attempt is None else attempt.run_id
        new = run_folder.NewRun(opts.run.log_root, experiment, opts.run_name, command, run_id)
        try:
            answer[0] = run_search.plan_resume(opts.resume, opts.run.log_root / experiment, attempt, command)
        except UserError as exc:
            answer[0] = exc  # every rank raises the same one-line error
    if ctx is not None:
        dist.broadcast_object_list(answer, src=0)
    if isinstance(answer[0], UserError):
        raise answer[0]
    return answer[0], new


def experiment_options(opts: TrainOptions, prepared: PreparedEnv, world: int) -> dict[str, Any]:
    """The options that define the experiment ``opts`` run, which its fingerprint hashes
    (:func:`redline.outputs.run_search.fingerprint`): the same command run again has them, on any process count (the
    env count is the total); output-only options (logger, video, profile, timeouts) and ``--resume`` are left out."""
    overrides = [t for t in opts.run.overrides if not t.startswith("env.scene.num_envs=")]  # the total counts instead
    return {
        "task": prepared.task,
        "num_envs": prepared.env_cfg.scene.num_envs * world,
        "device": prepared.device.partition(":")[0],
        "seed": opts.run.seed,
        "seeding": opts.run.seeding,
        "max_iterations": prepared.agent_cfg.max_iterations,
        "learner": opts.learner,
        **({"algorithm": opts.algorithm} if opts.algorithm != "ppo" else {}),  # PPO runs keep their fingerprints
        "precision": opts.precision,
        "capture": opts.capture,
        "run_name": opts.run_name,
        "overrides": overrides,
    }
