"""Does a velocity-tracking checkpoint walk? Its deterministic policy over many whole episodes, docs/go1.md's figures.

    python scripts/walk_eval.py CHECKPOINT [--task Redline-Velocity-Flat-Go1] [--num_envs 128] [--steps 1001] [--seed 7]

Training logs judge walking from the episodes that happened to end in a 10-iteration window: ~250 episodes for PPO's
1024 envs x 24 steps, but only a handful for SAC's 256 envs x 4 steps (and none while every env is mid-episode, when
the last reset's values stand). This plays a checkpoint as ``redline play`` does (the task's ``-Play`` twin: no
observation noise, no pushes; the policy's deterministic action) from fresh envs, for ``--steps`` env steps, and scores
every episode that ended with ``scripts/walk_time.py``'s three figures: the mean over those episodes of Isaac Lab's
per-episode xy and yaw-rate tracking errors, and the share that reached the time-out. One checkpoint per process, so
that every checkpoint meets the same commands (the same ``--seed``: redline's per-env streams). Prints one line and
whether the figures meet the criterion.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch

from redline.commands.play import load_policy
from redline.envs.prepare import prepare_env
from redline.envs.simulator import isaaclab_env
from redline.options import ALGORITHMS, RunOptions
from redline.outputs.checkpoints import load_checkpoint
from walk_time import ERR_XY, ERR_YAW, walked

LOG_XY, LOG_YAW = (key.removeprefix("episode/") for key in (ERR_XY, ERR_YAW))
"""The keys of the env's ``extras["log"]``: at a step with resets, the means over the envs reset there."""


def score(vec_env: Any, policy: Any, steps: int) -> dict[str, float]:
    """Play ``steps`` steps; the walking figures over the episodes that ended, and their count. The time-out share is
    the share of the ended episodes whose step set ``extras["time_outs"]`` (Isaac Lab's ``Episode_Termination`` log
    is the share of all envs whose last episode ended that way, a running state, not a per-episode count)."""
    sums = {"err_xy": 0.0, "err_yaw": 0.0, "timeouts": 0.0, "episodes": 0.0}
    obs = vec_env.get_observations()
    with torch.inference_mode():
        for _ in range(steps):
            obs, _rewards, dones, extras = vec_env.step(policy(obs))
            done = dones.reshape(-1) != 0
            ended = int(done.count_nonzero())
            if ended:
                log = extras["log"]
                sums["err_xy"] += float(log[LOG_XY]) * ended  # the means over this step's ended episodes
                sums["err_yaw"] += float(log[LOG_YAW]) * ended
                sums["timeouts"] += int((done & (extras["time_outs"].reshape(-1) != 0)).count_nonzero())
                sums["episodes"] += ended
    n = max(sums["episodes"], 1.0)
    return {"err_xy": sums["err_xy"] / n, "err_yaw": sums["err_yaw"] / n, "timeouts": sums["timeouts"] / n,
            "episodes": sums["episodes"]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path, help="a model_<it>.pt (PPO or SAC)")
    parser.add_argument("--task", default="Redline-Velocity-Flat-Go1")
    parser.add_argument("--num_envs", type=int, default=128)
    parser.add_argument("--steps", type=int, default=1001, help="env steps (1001: one whole 20 s episode per env)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    checkpoint = load_checkpoint(args.checkpoint)
    algorithm = str(checkpoint.get("algorithm", "ppo"))
    run = RunOptions(task=args.task, num_envs=args.num_envs, device="cpu", seed=args.seed)
    prepared = prepare_env(run, play=True, agent_entry_point=ALGORITHMS[algorithm])

    from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper  # heavy: only once the simulator is needed

    with isaaclab_env(prepared.task, prepared.env_cfg) as env:
        vec_env: Any = RslRlVecEnvWrapper(env, clip_actions=prepared.agent_cfg.clip_actions)
        _, policy = load_policy(algorithm, vec_env, prepared.agent_cfg, checkpoint, "cpu")
        figures = score(vec_env, policy, args.steps)
    verdict = "walks" if walked(figures) else "does not walk"
    print(f"{args.checkpoint}: {algorithm}, {figures['episodes']:.0f} episodes: err xy {figures['err_xy']:.3f} m/s, "
          f"yaw {figures['err_yaw']:.3f} rad/s, time-outs {figures['timeouts']:.0%}: {verdict}")  # fmt: skip


if __name__ == "__main__":
    main()
