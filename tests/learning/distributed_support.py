"""Workers for the data-parallel learner tests: each runs in its own process (gloo on CPU) and writes its result."""

from __future__ import annotations

import dataclasses
import datetime
import os
import signal
import socket
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from redline.bench.shapes import DummyVecEnv
from redline.learning import PPO, PPOConfig
from redline.learning.distributed import Communicator, RankLostError
from redline.learning.rollout import train_iteration
from redline.seeding import Domain
from tests.learning.learning_support import SMALL

TIMEOUT_S = 20.0
"""The process group's timeout [s]."""
GLOBAL_ENVS = 12
NUM_ACTIONS = 2
CFG = PPOConfig(
    num_steps_per_env=8,
    num_learning_epochs=2,
    num_mini_batches=3,  # does not divide T: minibatch shares differ between ranks
    micro_batches=2,
    precision="fp32",
    value_normalization=True,
    actor=dataclasses.replace(SMALL, obs_normalization=True),
    critic=dataclasses.replace(SMALL, obs_normalization=True, obs_groups=("policy", "critic")),
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def join_gloo(rank: int, world: int, port: int) -> Communicator | None:
    """In a spawned rank: one thread, and (world > 1) the gloo process group and its communicator (None: alone)."""
    torch.set_num_threads(1)
    if world == 1:
        return None
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=TIMEOUT_S),
    )
    return Communicator.from_process_group("cpu", timeout_s=TIMEOUT_S)


def spawn_ranks(target: Callable[..., None], world: int, args: tuple, out: Path, timeout: float) -> list[Any]:
    """Run ``target(rank, world, port, out, *args)`` on ``world`` spawned processes within ``timeout`` [s] in all
    (start-up imports take most of it on a loaded 2-core machine); returns each rank's ``out/rank<r>.pt`` (None if
    it wrote none)."""
    port = free_port()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=target, args=(r, world, port, out, *args)) for r in range(world)]
    for proc in procs:
        proc.start()
    deadline = time.monotonic() + timeout
    for proc in procs:
        proc.join(max(deadline - time.monotonic(), 0.1))
    hung = [r for r, proc in enumerate(procs) if proc.is_alive()]
    for proc in procs:
        proc.kill()
    assert not hung, f"ranks {hung} still running after {timeout} s"
    return [torch.load(out / f"rank{r}.pt") if (out / f"rank{r}.pt").exists() else None for r in range(world)]


def run(rank: int, world: int, port: int, out: Path, iterations: int, mode: str, cfg: PPOConfig = CFG) -> None:
    """Train ``iterations`` on this rank's share of :data:`GLOBAL_ENVS` envs; write params and metrics to ``out``.

    ``mode``: ``plain``; ``nan`` (rank 1's third loss is NaN); ``kill`` (rank 1 dies during its second iteration).
    """
    comm = join_gloo(rank, world, port)
    n = GLOBAL_ENVS // world
    env = DummyVecEnv(num_envs=n, num_obs=4, seed=1, critic_obs=True, per_env_seed=5, env_id_offset=rank * n)
    torch.manual_seed(100 + rank)  # different initial weights per rank: the broadcast must fix them
    alg = PPO.from_env(env, cfg, seed=3, comm=comm)
    streams = env.streams
    assert streams is not None
    alg.action_noise = lambda: streams.normal(None, (NUM_ACTIONS,), domain=Domain.POLICY)
    if mode == "nan" and rank == 1:
        _poison_third_loss(alg)
    result: dict[str, Any] = {"skipped": [], "calls": [], "setup_calls": alg.comm.take_stats()[0]}
    try:
        start = time.monotonic()
        obs = env.get_observations()
        for it in range(iterations):
            if mode == "kill" and rank == 1 and it == 1:
                (out / "killed_at").write_text(repr(time.time()))
                os.kill(os.getpid(), signal.SIGKILL)
            obs, metrics = train_iteration(alg, env, obs)
            result["skipped"].append(int(metrics["skipped_steps"]))
            result["calls"].append(alg.comm.take_stats()[0])
        alg.check_replicas()
        result["train_s"] = time.monotonic() - start
        result["params"] = alg.optimizer.flat_param.clone()
        result["obs_norm_mean"] = alg.actor.obs_normalizer._mean.clone()
        result["value_norm"] = torch.stack((alg.value_normalizer.mean, alg.value_normalizer.var))
    except RankLostError as exc:
        result["error"], result["error_at"] = str(exc), time.time()
    except Exception:
        result["error"] = traceback.format_exc()
    torch.save(result, out / f"rank{rank}.pt")
    if world > 1 and "error" not in result:
        dist.destroy_process_group()


def _poison_third_loss(alg: PPO) -> None:
    calls = {"n": 0}
    loss_fn = alg.loss

    def loss(batch: Any, advantages: Any = None) -> Any:
        calls["n"] += 1
        value, metrics = loss_fn(batch, advantages)
        return (value * float("nan"), metrics) if calls["n"] == 3 else (value, metrics)

    alg.loss = loss  # type: ignore[method-assign]
