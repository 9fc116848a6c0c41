"""Where a ``redline train`` run starts from: ``--resume``, or, for workers torchrun restarted, their own run.

In a multi-process run rank 0 decides and every rank gets its answer (one ``broadcast_object_list``), so a checkpoint
saved meanwhile cannot make ranks load different iterations. Elastic restarts (:mod:`redline.outputs.elastic`): a
restarted worker group continues the first attempt's run folder from its newest intact checkpoint and stops at the
iteration the first attempt was to reach; before any checkpoint exists it starts over in that folder.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from redline.commands.process_group import DistContext
from redline.errors import UserError
from redline.outputs import elastic
from redline.outputs.checkpoints import checkpoints_in, resolve_checkpoint


@dataclasses.dataclass(frozen=True)
class ResumePlan:
    """What a run continues from."""

    checkpoint: Path | None = None
    """The checkpoint to load (None: start fresh)."""
    run_dir: Path | None = None
    """An existing run folder to keep writing in (an elastic restart); None: rank 0 creates a new one."""
    last_iteration: int | None = None
    """The iteration the run ends at (an elastic restart: the first attempt's plan); None: ``max_iterations`` after
    the checkpoint's."""

    def iterations(self, checkpoint_iteration: int | None, max_iterations: int) -> int:
        """Iterations this attempt runs after ``checkpoint_iteration`` (None: none loaded)."""
        if self.last_iteration is None:
            return max_iterations
        start = -1 if checkpoint_iteration is None else checkpoint_iteration
        return max(self.last_iteration - start, 0)


def plan_resume(spec: str | None, experiment_dir: Path, ctx: DistContext | None) -> ResumePlan:
    """The :class:`ResumePlan` of ``--resume spec`` (None: not given), the same on every rank.

    Raises:
        UserError: ``spec`` names no readable checkpoint (on every rank, with the same message).
    """
    if ctx is None:
        return ResumePlan(None if spec is None else resolve_checkpoint(spec, experiment_dir))
    import torch
    import torch.distributed as dist

    attempt = elastic.Attempt.from_environ()
    if attempt is not None:
        # a restart on any node restarts every node, but only the agents that saw a worker fail count it (the
        # others restart for the changed membership): the highest count is the job's
        count = torch.tensor([attempt.restart], device=ctx.device)
        dist.all_reduce(count, op=dist.ReduceOp.MAX)
        attempt = dataclasses.replace(attempt, restart=int(count.item()))
    answer: list[Any] = [None]
    if ctx.rank == 0:
        try:
            answer[0] = _plan(spec, experiment_dir, attempt)
        except UserError as exc:
            answer[0] = exc  # every rank raises the same one-line error
    dist.broadcast_object_list(answer, src=0)
    if isinstance(answer[0], UserError):
        raise answer[0]
    return answer[0]


def _plan(spec: str | None, experiment_dir: Path, attempt: elastic.Attempt | None) -> ResumePlan:
    found = elastic.find_run(experiment_dir, attempt.run_id) if attempt is not None and attempt.restarted else None
    if found is None:
        return ResumePlan(None if spec is None else resolve_checkpoint(spec, experiment_dir))
    run_dir, last = found
    if checkpoints_in(run_dir):
        return ResumePlan(resolve_checkpoint(str(run_dir), experiment_dir), run_dir, last)
    return ResumePlan(None if spec is None else resolve_checkpoint(spec, experiment_dir), run_dir, last)
