"""``redline train``'s checks before the simulator starts: the options against the task's final configs (the learner,
the logger, the rollout's shape, this host's memory, the log folder), in the launching process and again in each
rank."""

from __future__ import annotations

import dataclasses

from redline.commands.process_group import DistContext
from redline.envs.memory import check_run, ranks_on_host, rollout_shape
from redline.envs.prepare import PreparedEnv, physics_preset, prepare_env, runner_cfg_dict
from redline.errors import UserError
from redline.learning.config import PPOConfig
from redline.learning.limits import check_rollout
from redline.learning.sac import SACConfig
from redline.options import ALGORITHMS, OFF_POLICY, TrainOptions, agent_overrides
from redline.outputs.checkpoints import load_checkpoint
from redline.outputs.folders import check_writable
from redline.outputs.run_search import RESUME_NEVER, resolve_checkpoint
from redline.runners.make import LEARNERS
from redline.runners.writers import check_logger, set_logger
from redline.validation import check_choice


@dataclasses.dataclass(frozen=True)
class TrainSetup:
    """A run's configs, checked: what each rank builds its env and its learner from."""

    env: PreparedEnv
    """The task's configs with the options applied (:func:`redline.envs.prepare.prepare_env`)."""
    learner_cfg: PPOConfig | SACConfig | None
    """The redline learner's config from the agent config (None for ``--learner rsl_rl``)."""


def prepare(opts: TrainOptions, ctx: DistContext | None = None) -> TrainSetup:
    """Validate ``opts`` and return the task's configs with them applied and the learner's config: a config error
    surfaces here, before the simulator starts.

    Args:
        opts: the options.
        ctx: this rank's place in a process group (None: a single process). Each rank gets ``num_envs`` envs whose
            global ids start at ``rank * num_envs``; where the seed goes on each rank:
            :func:`redline.seeding.plan.seed_plan`.
    """
    check_choice("--learner", opts.learner, LEARNERS, "learner")  # --precision, --profile: TrainOptions checks them
    run = opts.run if ctx is None else dataclasses.replace(opts.run, device=ctx.device)
    run = agent_overrides(opts.algorithm, run)  # --algorithm td3: the off-policy config's variant
    prepared = prepare_env(run, rank=0 if ctx is None else ctx.rank, agent_entry_point=ALGORITHMS[opts.algorithm])
    env_cfg, agent_cfg = prepared.env_cfg, prepared.agent_cfg
    if opts.distributed_or_nproc and opts.learner == "rsl_rl" and prepared.device == "cpu":
        raise UserError("--learner: rsl_rl's multi-process training needs CUDA (NCCL); on CPU use --learner redline")
    if opts.max_iterations is not None:
        agent_cfg.max_iterations = opts.max_iterations
    logger = opts.logger if opts.logger is not None else agent_cfg.logger
    check_logger(logger, "--logger" if opts.logger is not None else "agent.logger")  # package, credentials
    set_logger(agent_cfg, opts.logger, opts.log_project_name)
    world = ctx.world_size if ctx is not None else (opts.nproc or 1)
    # minibatches against the rollout: the redline learner partitions all ranks' transitions, rsl_rl each rank's
    envs = env_cfg.scene.num_envs * (world if opts.learner == "redline" else 1)
    sac = None
    if opts.algorithm in OFF_POLICY:  # the agent's fields, and the batch against the whole replay buffer
        sac = SACConfig.from_rsl_rl(runner_cfg_dict(agent_cfg), capture=opts.capture, **_precision(opts.precision))
        sac.check_envs(env_cfg.scene.num_envs * world)
    else:
        check_rollout(agent_cfg.num_steps_per_env, envs, agent_cfg.algorithm.num_mini_batches)
    if not opts.no_memory_check:
        ranks = opts.nproc or (ranks_on_host() if ctx is not None else 1)
        physics = physics_preset(prepared.task, prepared.device, opts.run.overrides)
        check_run(prepared.task, physics, prepared.device, rollout_shape(env_cfg, agent_cfg), ranks)
    if ctx is None or ctx.rank == 0:  # created and test-written before the simulator starts
        check_writable(opts.run.log_root / agent_cfg.experiment_name, "--log_root")
    learner: PPOConfig | SACConfig | None = None
    if opts.learner == "redline":
        learner = sac or PPOConfig.from_rsl_rl(
            runner_cfg_dict(agent_cfg), precision=opts.precision, capture=opts.capture
        )
    return TrainSetup(prepared, learner)


def _precision(precision: str | None) -> dict[str, str]:
    """``--precision`` as a learner config override (none: the agent config's)."""
    return {} if precision is None else {"precision": precision}


def check_launch(opts: TrainOptions) -> None:
    """Validate a multi-process run's options in the launching process, before torchrun starts the ranks."""
    experiment_dir = opts.run.log_root / prepare(opts).env.agent_cfg.experiment_name
    if opts.resume not in (None, RESUME_NEVER):  # a checkpoint that cannot be resumed (NaN weights, ...) fails here
        load_checkpoint(resolve_checkpoint(opts.resume, experiment_dir), "cpu", "--resume")
