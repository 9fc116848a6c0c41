"""``redline train``'s launch, decided once: how many processes, how many envs each, whether torchrun starts them,
and the memory check; the rest reads the :class:`LaunchPlan`.

``--nproc N`` starts N local processes under torchrun (``--num_envs`` is then per process, as in Isaac Lab);
``REDLINE_NPROC`` gives ``--nproc``'s default. On the CPU without either, the cores are filled by themselves
(:func:`auto_nproc`): one process per core, the command's env count (there a total) split evenly over them, each
process with one core's threads. Measured on 2 cores (docs/performance.md): one MuJoCo-C thread per process in its
own process beats two threads in one process, because everything outside the physics (observations, rewards,
resets, inference, the update) then runs on both cores too. With ``per_env`` seeding the run is the same experiment
as one process with all envs. ``--distributed`` (a torchrun worker) trains as one rank of the group
(:mod:`redline.commands.process_group`).

The workers' command line is written from the workers' options (:func:`redline.options.to_argv`), never edited
from the launching command's argv.
"""

from __future__ import annotations

import dataclasses
import os
import sys

from redline.commands import spawn
from redline.envs.memory import check_env_count, ranks_on_host
from redline.errors import UserError
from redline.host import usable_cores
from redline.options import ALGORITHMS, TrainOptions, agent_overrides, to_argv
from redline.runners.stop import StopRequest

NPROC_ENV = "REDLINE_NPROC"
"""Environment variable giving ``--nproc``'s default (e.g. 1 where a container's cores are shared)."""

MIN_ENVS_PER_RANK = 256
"""Fewest envs per process the automatic arrangement gives a rank. Measured on 2 cores (docs/performance.md,
2026-12-03): the Go1 with 1024 envs ran 1.19x faster as 2 x 512 (quiet; 2.2x with the cores contended), Cartpole
with 256 slower as 2 x 128 (each process pays the whole per-step overhead of Isaac Lab and the per-minibatch
all-reduce for half the envs)."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class LaunchPlan:
    """How ``redline train`` runs: computed once by :func:`plan_launch`, read by everything after it."""

    nproc: int
    """Processes that train (1: this process trains by itself)."""
    torchrun: bool
    """torchrun starts the ``nproc`` processes (False: this process trains, alone or as a torchrun worker)."""
    automatic: bool
    """``nproc`` was chosen to fill the CPU's cores (the command's env count was the total), not asked for."""
    options: TrainOptions
    """The options each training process runs with: ``run.num_envs`` per process; for torchrun's workers
    ``distributed`` and no ``nproc``."""
    memory_checked: bool
    """The env count alone was checked against this host's memory (before Isaac Lab is imported); the full check
    on the final configs follows in :func:`redline.commands.preflight.prepare` (both off with ``--no_memory_check``)."""

    @property
    def worker_argv(self) -> list[str]:
        """The ``redline`` arguments each torchrun worker gets (``train ... --distributed``)."""
        return ["train", *to_argv(self.options)]


def auto_nproc(total_envs: int, cores: int, min_envs: int = MIN_ENVS_PER_RANK) -> int:
    """Processes for a CPU run of ``total_envs`` envs on ``cores`` cores: the most ranks, at most one per core, that
    split the envs evenly with at least ``min_envs`` each; 1 when no such split exists."""
    for nproc in range(cores, 1, -1):
        if total_envs % nproc == 0 and total_envs // nproc >= min_envs:
            return nproc
    return 1


def nproc_from_environment() -> int | None:
    """:data:`NPROC_ENV` as a process count (None: unset); a bad value is a one-line :class:`UserError`."""
    text = os.environ.get(NPROC_ENV, "")
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise UserError(f"{NPROC_ENV}: must be a positive integer, got '{text}'")
    return int(text)


def _check_env_count(opts: TrainOptions) -> bool:
    """The env count alone against the host's memory (:func:`redline.envs.memory.check_env_count`): milliseconds,
    before Isaac Lab is imported; True when a count was given and checked."""
    run = opts.run
    counts = [run.num_envs] if run.num_envs is not None else []
    tokens = (t.partition("=") for t in run.overrides)
    counts += [int(v) for k, _, v in tokens if k == "env.scene.num_envs" and v.isdigit()]
    if opts.no_memory_check or not counts:
        return False
    check_env_count(run.task, counts[0], opts.nproc or (ranks_on_host() if opts.distributed else 1))
    return True


def plan_launch(opts: TrainOptions) -> LaunchPlan:
    """Decide how ``opts`` run: bad input fails here, once, before any rank starts.

    Raises:
        UserError: ``--nproc`` with ``--distributed``, a bad ``REDLINE_NPROC``, envs too many for this host's memory,
            or any option :func:`redline.commands.preflight.check_launch` refuses.
    """
    if opts.nproc is not None and opts.distributed:
        raise UserError("--nproc: starts torchrun itself; drop --distributed (that is for torchrun's workers)")
    checked = _check_env_count(opts)  # milliseconds: before Isaac Lab is imported
    if opts.distributed:
        return LaunchPlan(nproc=1, torchrun=False, automatic=False, options=opts, memory_checked=checked)
    nproc = opts.nproc if opts.nproc is not None else nproc_from_environment()
    automatic = nproc is None
    if nproc is None:
        nproc, opts = _arrangement(opts)
    if nproc == 1:
        single = dataclasses.replace(opts, nproc=None)
        return LaunchPlan(nproc=1, torchrun=False, automatic=automatic, options=single, memory_checked=checked)
    from redline.commands import preflight  # heavy (torch, Isaac Lab's configs): after the quick checks

    preflight.check_launch(dataclasses.replace(opts, nproc=nproc))  # bad input fails here once, not in every rank
    worker = dataclasses.replace(opts, nproc=None, distributed=True)
    return LaunchPlan(nproc=nproc, torchrun=True, automatic=automatic, options=worker, memory_checked=checked)


def _arrangement(opts: TrainOptions) -> tuple[int, TrainOptions]:
    """``(processes, options per process)`` that fill this host's cores for a run given without a process count:
    one process for a GPU run, the rsl_rl learner (its multi-process path needs NCCL), or an env count that does not
    split (:func:`auto_nproc`); ``opts.run.num_envs`` (or the task's default) is the total."""
    if opts.learner != "redline":
        return 1, opts
    from redline.envs.prepare import prepare_env  # heavy (Isaac Lab's configs): after the quick checks

    # the device and the total; the options are checked per process (check_launch)
    prepared = prepare_env(agent_overrides(opts.algorithm, opts.run), agent_entry_point=ALGORITHMS[opts.algorithm])
    if prepared.device != "cpu":
        return 1, opts
    total = prepared.env_cfg.scene.num_envs
    nproc = auto_nproc(total, usable_cores())
    if nproc == 1:
        return 1, opts
    per_rank = total // nproc
    overrides = tuple(t for t in opts.run.overrides if t.partition("=")[0] != "env.scene.num_envs")
    run = dataclasses.replace(opts.run, num_envs=per_rank, overrides=overrides)  # the total, split
    return nproc, dataclasses.replace(opts, run=run)


def launch_train(opts: TrainOptions, stop: StopRequest | None = None) -> int:
    """``redline train``: plan the launch, then train in this process or start torchrun; returns the exit status."""
    plan = plan_launch(opts)
    if plan.automatic and plan.torchrun:
        per_rank = plan.options.run.num_envs
        print(f"[redline] {plan.nproc} processes x {per_rank} envs, one per core (--nproc 1: one)", file=sys.stderr)
    if not plan.torchrun:
        from redline.commands import train  # heavy (torch, Isaac Lab); looked up here so tests can replace train

        train.train(plan.options, stop)
        return 0
    return spawn.run_torchrun(plan.nproc, plan.worker_argv, plan.options.run.device)
