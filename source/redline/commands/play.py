"""``redline play``: run a trained policy headless (or in a viewer), print episode statistics, export it (TorchScript +
ONNX), and record an mp4 on request."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from redline.envs import registry
from redline.envs.prepare import prepare_env, runner_cfg_dict
from redline.envs.simulator import isaaclab_env
from redline.errors import OutputError, UserError
from redline.learning.rollout import rollout
from redline.learning.sac import SAC, SACConfig
from redline.media import video
from redline.media.export import export_policy
from redline.media.video import MAX_TILES, VIDEO_FPS
from redline.options import ALGORITHMS, PlayOptions
from redline.outputs.checkpoints import load_checkpoint
from redline.outputs.run_search import checkpoints_in, resolve_checkpoint


@dataclasses.dataclass
class EpisodeStats:
    """Returns and lengths of the episodes that finished while playing."""

    returns: list[float] = dataclasses.field(default_factory=list)
    lengths: list[int] = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        if not self.returns:
            return "no episode finished (run more --steps)"
        n = len(self.returns)
        return (
            f"{n} episodes: mean return {sum(self.returns) / n:.3f} (min {min(self.returns):.3f}, "
            f"max {max(self.returns):.3f}), mean length {sum(self.lengths) / n:.1f}"
        )


VIEWERS = {"newton": "newton_gl", "kit": "kit"}
"""``--viz`` values and the Isaac Lab visualizer each opens."""


def _latest_checkpoint(opts: PlayOptions) -> Path:
    """``--checkpoint latest``: the newest run's last checkpoint over the task's experiments of every algorithm
    (PPO's folder and SAC's, each named by its agent config); run folders are named by their start time."""
    task = registry.resolve_task_id(opts.run.task)
    folders = []
    for entry in ALGORITHMS.values():
        with contextlib.suppress(UserError):  # a task without that algorithm's agent
            folders.append(opts.run.log_root / registry.load_cfgs(task, entry, [])[1].experiment_name)
    runs = [
        (run.name, folder) for folder in folders for run in folder.glob("*") if run.is_dir() and checkpoints_in(run)
    ]
    return resolve_checkpoint("latest", max(runs)[1] if runs else folders[0])


RUN_AGENT_KEYS = ("obs_groups", "actor", "critic", "algorithm")
"""The parts of a run's saved agent config (``params/agent.yaml``) that shape its networks: play takes them from the
run rather than from the task's registered agent config, so a run trained with other widths plays."""


def use_run_agent_cfg(agent_cfg: Any, ckpt_path: Path) -> bool:
    """Overwrite ``agent_cfg``'s :data:`RUN_AGENT_KEYS` with those of the run that wrote ``ckpt_path``
    (``<run>/params/agent.yaml``, as ``redline train`` saves it). Returns whether it did: False when the checkpoint
    has no such file beside it (the registry's config stands); a file that does not fit the task's agent config is
    said in one line and ignored."""
    saved = ckpt_path.parent / "params" / "agent.yaml"
    if not saved.is_file():
        return False
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab.utils.io import load_yaml

    try:
        run_cfg = load_yaml(str(saved))
        parts = {k: run_cfg[k] for k in RUN_AGENT_KEYS if k in run_cfg}
        updated = agent_cfg.copy()  # all or nothing: a key that does not fit leaves agent_cfg as it was
        updated.from_dict(parts)
    except Exception as exc:  # PyYAML's errors (a corrupt file); configclass's KeyError / ValueError (a foreign one)
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:200]
        print(f"[redline] warning: {saved} ignored, the task's agent config builds the policy ({detail})", flush=True)
        return False
    for key in parts:
        setattr(agent_cfg, key, getattr(updated, key))
    return True


def load_policy(
    algorithm: str, vec_env: Any, agent_cfg: Any, checkpoint: dict[str, Any], device: str
) -> tuple[Any, Callable[[Any], torch.Tensor]]:
    """``(exportable actor, inference policy)`` of ``checkpoint``'s weights: PPO through rsl_rl's runner (as stock
    play), SAC through :class:`~redline.learning.sac.SAC` (its deterministic ``scale * tanh(mean)``; built with a
    one-transition replay, as play never trains)."""
    train_cfg = runner_cfg_dict(agent_cfg)
    if algorithm == "sac":
        cfg = SACConfig.from_rsl_rl(train_cfg, buffer_size_per_env=1, batch_size=1)
        sac = SAC.from_env(vec_env, cfg, device=device)
        weights = {k: checkpoint[k] for k in ("actor_state_dict", "critic_state_dict")}  # no replay, no optimizer
        sac.load_state_dict(weights, strict=True)
        return sac.get_policy(), sac.act_inference
    # heavy: rsl_rl's runner
    from rsl_rl.runners import OnPolicyRunner

    runner = OnPolicyRunner(vec_env, train_cfg, log_dir=None, device=device)
    runner.alg.load(checkpoint, None, strict=True)
    return runner.alg.get_policy(), runner.get_inference_policy(device)


def check_viewer(viz: str | None) -> str | None:
    """The Isaac Lab visualizer type for ``--viz``, or a :class:`UserError` saying why it cannot open here."""
    if viz is None:
        return None
    if viz not in VIEWERS:
        raise UserError(f"--viz: unknown viewer '{viz}' (valid: {', '.join(VIEWERS)})")
    if viz == "newton" and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise UserError("--viz newton: no display (DISPLAY is not set); use --video to record an mp4 headless")
    if viz == "kit" and importlib.util.find_spec("isaacsim") is None:
        raise UserError("--viz kit: Isaac Sim is not installed (use --viz newton with a display, or --video)")
    return VIEWERS[viz]


def play(opts: PlayOptions) -> tuple[Path, EpisodeStats]:
    """Play ``opts.steps`` steps and return ``(export folder, episode stats)``; the checkpoint names its algorithm
    (a SAC run's ``"algorithm": "sac"``; none: PPO), whose agent config builds the policy, with the networks of the
    run's own ``params/agent.yaml`` where the checkpoint has one beside it (:func:`use_run_agent_cfg`)."""

    visualizer = check_viewer(opts.viz)
    # a path: loaded before paying for the simulator's imports
    latest = opts.checkpoint == "latest"
    ckpt_path = _latest_checkpoint(opts) if latest else resolve_checkpoint(opts.checkpoint, None)
    checkpoint = load_checkpoint(ckpt_path)
    algorithm = str(checkpoint.get("algorithm", "ppo"))
    if algorithm not in ALGORITHMS:
        raise UserError(f"--checkpoint: '{ckpt_path}' names algorithm '{algorithm}' (valid: {', '.join(ALGORITHMS)})")
    video_envs = None
    if opts.video:
        video_envs = MAX_TILES  # every env is ray-traced; more would only cost time
    prepared = prepare_env(opts.run, play=True, default_num_envs=video_envs, agent_entry_point=ALGORITHMS[algorithm])
    env_task, device, env_cfg, agent_cfg = prepared.task, prepared.device, prepared.env_cfg, prepared.agent_cfg
    if use_run_agent_cfg(agent_cfg, ckpt_path):
        print(f"[redline] networks as in {ckpt_path.parent / 'params' / 'agent.yaml'}", flush=True)

    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper

    print(f"[redline] playing {env_task} with {ckpt_path} ({env_cfg.scene.num_envs} envs on {device})", flush=True)
    export_dir = ckpt_path.parent / "exported" / ckpt_path.stem  # one folder per checkpoint: model_<it>/
    with isaaclab_env(env_task, env_cfg, visualizer=visualizer) as env:
        vec_env = RslRlVecEnvWrapper(env, clip_actions=agent_cfg.clip_actions)
        try:
            actor, policy = load_policy(algorithm, vec_env, agent_cfg, checkpoint, device)
        except RuntimeError as exc:
            detail = str(exc).strip().splitlines()[-1].strip()
            raise UserError(f"--checkpoint: '{ckpt_path}' does not fit task {env_task} ({detail})") from exc
        export_policy(actor, export_dir)
        if opts.video:
            stats = _rollout_recorded(
                vec_env, policy, opts.steps, ckpt_path.parent / "videos" / f"play_{ckpt_path.stem}.mp4"
            )
        else:
            stats = play_episodes(vec_env, policy, opts.steps)
    print(f"[redline] {stats.summary()}", flush=True)
    print(f"[redline] exported {export_dir / 'policy.pt'} and {export_dir / 'policy.onnx'}", flush=True)
    return export_dir, stats


def _rollout_recorded(vec_env: Any, policy: Any, steps: int, path: Path) -> EpisodeStats:
    """Play and record ``path`` (:class:`~redline.media.video.NewtonVideoRecorder` renders and encodes it).

    The video is what ``--video`` asked for, so it is essential: a file that cannot be written (a full disk, a folder
    that vanished) is an :class:`OutputError` naming it (exit 74), and the cut mp4, unplayable without its index, is
    removed; the export written before is kept.
    """
    every = max(1, round(1.0 / (VIDEO_FPS * vec_env.unwrapped.step_dt)))
    try:
        recorder = video.NewtonVideoRecorder(path, fps=round(1.0 / (every * vec_env.unwrapped.step_dt)))

        def capture(step: int) -> None:
            if step % every == every - 1:
                recorder.capture()

        try:
            stats = play_episodes(vec_env, policy, steps, capture)
        except BaseException:
            with contextlib.suppress(Exception):
                recorder.close()
            raise
        recorder.close()
    except OSError as exc:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        raise OutputError.writing("video", path, exc, "the export is kept") from None
    print(f"[redline] video: {path} ({recorder.frames} frames, {recorder.tiles} envs)", flush=True)
    return stats


def play_episodes(
    vec_env: Any, policy: Any, steps: int, after_step: Callable[[int], None] | None = None
) -> EpisodeStats:
    """Step ``vec_env`` with ``policy`` for ``steps`` steps through the one rollout loop
    (:func:`redline.learning.rollout.rollout`), printing each finished episode; ``after_step(i)`` is called after
    step ``i``."""
    stats = EpisodeStats()
    n = vec_env.num_envs
    ret = torch.zeros(n, device=vec_env.device)
    length = torch.zeros(n, dtype=torch.long, device=vec_env.device)
    count = [0]

    def record(_obs: Any, rewards: torch.Tensor, dones: torch.Tensor, _extras: dict) -> None:
        if after_step is not None:
            after_step(count[0])
        count[0] += 1
        ret.add_(rewards)
        length.add_(1)
        for env_id in dones.nonzero().flatten().tolist():  # play reads every step: it prints each episode
            stats.returns.append(float(ret[env_id]))
            stats.lengths.append(int(length[env_id]))
            print(
                f"[redline] episode {len(stats.returns):>4} (env {env_id:>3}): return {stats.returns[-1]:8.3f}, "
                f"length {stats.lengths[-1]}",
                flush=True,
            )
        ret[dones.bool()] = 0
        length[dones.bool()] = 0

    rollout(vec_env, vec_env.get_observations(), steps, policy, record, finish=lambda _obs: None)
    return stats
