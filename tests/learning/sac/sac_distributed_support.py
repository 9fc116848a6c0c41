"""The worker of the data-parallel SAC test: each rank runs in its own process (gloo on CPU) and writes its result."""

from __future__ import annotations

import dataclasses
import traceback
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from redline.learning.sac import SAC
from tests.learning.distributed_support import join_gloo
from tests.learning.sac.sac_support import ReachEnv, env_noise, run_iteration, tiny_cfg

GLOBAL_ENVS = 8
CFG = tiny_cfg(batch_size=60, max_grad_norm=0.5, updates_per_step=2, policy_frequency=3, learning_starts=4)
"""60 samples over 8 envs: uneven shares (8 each for global envs 0-3, 7 for 4-7); clipping; updates from the
second iteration on."""


def run(rank: int, world: int, port: int, out: Path, iterations: int, variant: str = "sac") -> None:
    """Train ``iterations`` of ``variant`` on this rank's share of :data:`GLOBAL_ENVS`; write the parameters to
    ``out``."""
    comm = join_gloo(rank, world, port)
    result: dict[str, Any] = {"calls": []}
    try:
        n = GLOBAL_ENVS // world
        env = ReachEnv(n, env_id_offset=rank * n)
        alg = SAC.from_env(env, dataclasses.replace(CFG, variant=variant), seed=3, comm=comm)
        alg.action_noise = env_noise(env)
        alg.comm.take_stats()
        obs = env.get_observations()
        for _ in range(iterations):
            obs, metrics = run_iteration(alg, env, obs)
            result["calls"].append(alg.comm.take_stats()[0])
        alg.check_replicas()
        result["params"] = torch.cat([alg.flat.flat_param, *(p.reshape(-1) for p in alg.target_qs.parameters())])
        result["obs_norm_mean"] = alg.actor.obs_normalizer._mean.clone()
        result["metrics"] = {k: float(v) for k, v in metrics.items()}
    except Exception:
        result["error"] = traceback.format_exc()
    torch.save(result, out / f"rank{rank}.pt")
    if world > 1 and "error" not in result:
        dist.destroy_process_group()
