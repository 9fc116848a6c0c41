"""One training run on the simulator: its env built, the params written, the runner made (and restored from the
checkpoint it continues), and the iterations run."""

from __future__ import annotations

import time

from redline.commands.preflight import TrainSetup
from redline.commands.process_group import DistContext
from redline.commands.train_resume import RunStart
from redline.envs.prepare import runner_cfg_dict
from redline.envs.simulator import isaaclab_env
from redline.errors import OutputError, UserError
from redline.media.training_clips import TrainingVideo
from redline.options import TrainOptions
from redline.runners.make import RunnerRequest, make_runner
from redline.runners.stop import StopRequest


def run_training(
    opts: TrainOptions, setup: TrainSetup, start: RunStart, ctx: DistContext | None, stop: StopRequest
) -> float:
    """Build the env and train on it; returns the training seconds (:func:`redline.commands.train.train`)."""
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab.utils.io import dump_yaml
    from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper

    prepared, checkpoint, run_dir = setup.env, start.checkpoint, start.run_dir
    task, device, env_cfg, agent_cfg = prepared.task, prepared.device, prepared.env_cfg, prepared.agent_cfg
    if run_dir is not None:
        ranks = "" if ctx is None else f" x {ctx.world_size} ranks ({ctx.backend})"
        print(
            f"[redline] training {task}: {env_cfg.scene.num_envs} envs{ranks} on {device}, seed {opts.run.seed}, "
            f"{start.iterations} iterations, learner {opts.learner} -> {run_dir}",
            flush=True,
        )
        params = run_dir / "params"
        try:
            dump_yaml(str(params / "env.yaml"), env_cfg)
            dump_yaml(str(params / "agent.yaml"), agent_cfg)
            if checkpoint is not None:
                dump_yaml(
                    str(params / "resume.yaml"), {"resumed_from": str(start.path), "iteration": checkpoint["iter"]}
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
            learner_cfg=setup.learner_cfg,
            dist_timeout_s=None if ctx is None else ctx.timeout_s,
            profile=opts.profile,
            videos=clips,
        )
        began = time.perf_counter()
        try:
            runner = make_runner(opts.learner, vec_env, request)
            try:
                if checkpoint is not None:
                    runner.restore(checkpoint)
            except (RuntimeError, KeyError, ValueError) as exc:  # networks of another shape, another scene
                detail = (str(exc).strip().splitlines() or [type(exc).__name__])[-1].strip()[:200]
                raise UserError(f"--resume: '{start.path}' does not fit task {task} ({detail})") from exc
            runner.learn(start.iterations, agent_cfg.init_at_random_ep_len, stop)
        finally:
            if video is not None:
                video.finish_clip()  # a clip cut short by the end of training is still a playable file
        return time.perf_counter() - began
