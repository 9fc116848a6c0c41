"""``redline train``: build a task's environment and train it with the selected learner."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from redline.commands import preflight, process_group
from redline.commands.process_group import DistContext
from redline.commands.train_resume import RESUME_NEVER, ResumePlan, plan_resume
from redline.envs.prepare import PreparedEnv, runner_cfg_dict
from redline.envs.simulator import isaaclab_env
from redline.errors import ExpectedExit, OutputError, UserError
from redline.media.training_clips import TrainingVideo
from redline.options import TrainOptions
from redline.outputs import elastic, run_record
from redline.outputs.checkpoints import load_checkpoint
from redline.outputs.folders import new_run_dir, remove_if_empty_run
from redline.outputs.metrics import read_records
from redline.outputs.summary import summary_lines
from redline.runners.make import RunnerRequest, make_runner
from redline.runners.peer_stop import PeerStops
from redline.runners.stop import STARTUP, Stopped, StopRequest
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
    ctx = process_group.init(opts.run.device, opts.dist_timeout) if opts.distributed else None
    if ctx is not None:  # a rank stopped outside the loop stops every rank (redline.runners.peer_stop)
        stop.join_group(PeerStops.of_process_group())
    try:
        return _train(opts, ctx, stop)
    except Stopped:
        raise
    except Exception:
        stop.follow_peers()  # a collective failed because a signalled rank exited: exit as it did
        raise
    finally:
        if ctx is not None:
            stop.leave_group()
            process_group.shutdown()


def _train(opts: TrainOptions, ctx: DistContext | None, stop: StopRequest) -> Path | None:
    prepared = preflight.prepare(opts, ctx)
    device, env_cfg, agent_cfg = prepared.device, prepared.env_cfg, prepared.agent_cfg
    main = ctx is None or ctx.rank == 0
    learner_cfg = preflight.learner_cfg(opts, agent_cfg)  # a config error surfaces before the simulator starts
    fingerprint = run_fingerprint(opts, prepared, 1 if ctx is None else ctx.world_size)
    plan = plan_resume(opts.resume, opts.run.log_root / agent_cfg.experiment_name, ctx, fingerprint)
    resume_path = plan.checkpoint
    checkpoint = None if resume_path is None else load_checkpoint(resume_path, device, "--resume")
    start = -1 if checkpoint is None else int(checkpoint["iter"])
    agent_cfg.max_iterations = plan.iterations(None if checkpoint is None else start, agent_cfg.max_iterations)
    process_group.barrier()  # every rank has its checkpoint before rank 0 creates the new run folder
    run_dir = lock = None
    if main:
        run_dir = _open_run_dir(opts, plan, fingerprint, start, agent_cfg)
        lock = run_record.RunLock(run_dir)  # the same command started again meanwhile starts a run of its own
    stop.run_dir = run_dir  # a signal before the first checkpoint removes it
    env_cfg.log_dir = str(run_dir) if run_dir is not None else None
    try:
        elapsed = _run(opts, prepared, learner_cfg, checkpoint, resume_path, run_dir, ctx, stop)
    except ExpectedExit as exc:
        if not isinstance(exc, Stopped):
            remove_if_empty_run(run_dir)  # bad input found late, a full disk before the first save: no empty run
        raise
    finally:
        if lock is not None:
            lock.release()
    if run_dir is None:
        return None
    records = read_records(run_dir / "metrics.jsonl")
    last = records[-1] if records else {}
    for line in summary_lines(prepared.task, run_dir, records, elapsed):
        print(f"[redline] {line}", flush=True)
    if "bottleneck" in last:
        split = ", ".join(f"{k.removesuffix('_s')} {last[k]:.3f} s" for k in PHASES if last.get(k) is not None)
        print(f"[redline] last iteration: {split}; {last['bottleneck']}: try {last['next_action']}", flush=True)
    return run_dir


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


def _run(
    opts: TrainOptions,
    prepared: PreparedEnv,
    learner_cfg: Any,
    checkpoint: dict[str, Any] | None,
    resume_path: Path | None,
    run_dir: Path | None,
    ctx: DistContext | None,
    stop: StopRequest,
) -> float:
    """Build the env and train on it; returns the training seconds."""
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab.utils.io import dump_yaml
    from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper

    task, device, env_cfg, agent_cfg = prepared.task, prepared.device, prepared.env_cfg, prepared.agent_cfg
    if run_dir is not None:
        ranks = "" if ctx is None else f" x {ctx.world_size} ranks ({ctx.backend})"
        print(
            f"[redline] training {task}: {env_cfg.scene.num_envs} envs{ranks} on {device}, seed {opts.run.seed}, "
            f"{agent_cfg.max_iterations} iterations, learner {opts.learner} -> {run_dir}",
            flush=True,
        )
        params = run_dir / "params"
        try:
            dump_yaml(str(params / "env.yaml"), env_cfg)
            dump_yaml(str(params / "agent.yaml"), agent_cfg)
            if checkpoint is not None:
                dump_yaml(
                    str(params / "resume.yaml"), {"resumed_from": str(resume_path), "iteration": checkpoint["iter"]}
                )
        except OSError as exc:
            raise OutputError.writing("params", exc.filename or params, exc) from None
    with isaaclab_env(task, env_cfg) as env:
        video = None
        if opts.video and run_dir is not None:  # rank 0 records; below rsl_rl's wrapper, where Isaac Lab puts it
            env = video = TrainingVideo(env, run_dir / "videos" / "train", opts.video_length, opts.video_interval)
        clips = None if video is None else video.take_finished
        vec_env = RslRlVecEnvWrapper(env, clip_actions=agent_cfg.clip_actions)
        request = RunnerRequest(
            train_cfg=runner_cfg_dict(agent_cfg),
            run_dir=run_dir,
            device=device,
            seed=opts.run.seed,
            save_interval=agent_cfg.save_interval,
            learner_cfg=learner_cfg,
            dist_timeout_s=None if ctx is None else ctx.timeout_s,
            profile=opts.profile,
            videos=clips,
        )
        start = time.perf_counter()
        try:
            runner = make_runner(opts.learner, vec_env, request)
            if checkpoint is not None:
                _load(runner.restore, checkpoint, resume_path, task)
            runner.learn(agent_cfg.max_iterations, agent_cfg.init_at_random_ep_len, stop)
        finally:
            if video is not None:
                video.finish_clip()  # a clip cut short by the end of training is still a playable file
        return time.perf_counter() - start


def _load(load: Any, checkpoint: dict[str, Any], path: Path | None, task: str) -> None:
    """``load(checkpoint)``; a checkpoint whose networks do not fit the task is a one-line :class:`UserError`."""
    try:
        load(checkpoint)
    except (RuntimeError, KeyError, ValueError) as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[-1].strip()[:200]
        raise UserError(f"--resume: '{path}' does not fit task {task} ({detail})") from exc
