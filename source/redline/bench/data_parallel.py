"""``redline bench distributed``: the redline learner on 1 and on N ranks, same global batch, no simulator.

Each rank is a spawned process (gloo on CPU, NCCL on CUDA GPUs, one GPU per rank) training its share of a
:class:`redline.bench.shapes.DummyVecEnv` batch with per-env streams. Reported per world size: seconds per
iteration (median of the timed ones, after one warm-up), the share spent inside collectives, and the number of
collectives per iteration and per minibatch. Strong scaling (same global batch) by default; ``weak`` keeps each
rank's batch (the GPU case: every GPU runs its own 4096 envs).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import socket
import statistics
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from redline.bench.shapes import SHAPES, DummyVecEnv, rsl_rl_cfg
from redline.bench.timing import device_sync, timed
from redline.device import cuda_count, rank_device, resolve_device
from redline.errors import UserError
from redline.learning import PPO, PPOConfig
from redline.learning.distributed import Communicator
from redline.learning.rollout import train_iteration
from redline.options import positive_int
from redline.seeding import Domain


@dataclasses.dataclass(frozen=True)
class DistBenchOptions:
    """What ``redline bench distributed`` measures."""

    nproc: int = 2
    """Ranks of the multi-process run (compared with 1 rank)."""
    shape: str = "tiny"
    """A :data:`redline.bench.shapes.SHAPES` name; ``num_envs`` is the global batch."""
    num_envs: int | None = None
    """Global envs (None: the shape's)."""
    iterations: int = 3
    """Timed iterations (after one warm-up)."""
    device: str = "cpu"
    """``cpu`` (gloo) or ``cuda`` (NCCL, ``cuda:RANK``)."""
    weak: bool = False
    """Weak scaling: every rank keeps ``num_envs`` envs (default: strong, the global batch is split)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(rank: int, world: int, port: int, opts: DistBenchOptions, threads: int, queue: Any) -> None:
    torch.set_num_threads(threads)
    device = rank_device(opts.device, rank)
    cuda = device != "cpu"
    comm = None
    if world > 1:
        init = f"tcp://127.0.0.1:{port}"
        dist.init_process_group(
            "nccl" if cuda else "gloo",
            init_method=init,
            rank=rank,
            world_size=world,
            timeout=datetime.timedelta(seconds=60),
        )
        comm = Communicator.from_process_group(device, 60.0)
    shape: dict[str, Any] = SHAPES[opts.shape]
    total = opts.num_envs or shape["num_envs"]
    n = total if opts.weak else total // world
    env = DummyVecEnv(
        num_envs=n,
        num_obs=shape["num_obs"],
        num_actions=shape["num_actions"],
        device=device,
        per_env_seed=0,
        env_id_offset=rank * n,
    )
    cfg = PPOConfig.from_rsl_rl(rsl_rl_cfg(shape, bf16=False), precision="fp32")
    torch.manual_seed(0)
    alg = PPO.from_env(env, cfg, device=device, seed=0, comm=comm)
    streams = env.streams
    assert streams is not None
    alg.action_noise = lambda: streams.normal(None, (shape["num_actions"],), domain=Domain.POLICY)
    obs = env.get_observations()
    obs, _ = train_iteration(alg, env, obs)  # warm-up
    alg.comm.take_stats()
    times, comm_s, calls = [], [], []
    state = {"obs": obs}

    def iteration() -> None:
        state["obs"], _ = train_iteration(alg, env, state["obs"])

    for _ in range(opts.iterations):
        times.append(timed(iteration, device_sync(device)))
        c, s = alg.comm.take_stats()
        calls.append(c)
        comm_s.append(s)
    if rank == 0:
        queue.put(
            {
                "world_size": world,
                "envs_per_rank": n,
                "s_per_iteration": statistics.median(times),
                "collective_s": statistics.median(comm_s),
                "collectives_per_iteration": statistics.median(calls),
                "threads_per_rank": threads,
                # the rollout statistics' all-gather, and the observation normalisers' when they are on
                "other_collectives": 1 + int(cfg.actor.obs_normalization or cfg.critic.obs_normalization),
            }
        )
    if world > 1:
        dist.destroy_process_group()


def _run(world: int, opts: DistBenchOptions) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    cores = os.cpu_count() or 1
    threads = max(1, cores // world)  # the ranks share the machine's cores
    port = _free_port()
    procs = [ctx.Process(target=_worker, args=(r, world, port, opts, threads, queue)) for r in range(world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    failed = [r for r, p in enumerate(procs) if p.exitcode != 0]
    if failed:
        raise RuntimeError(f"bench distributed: ranks {failed} failed")
    return queue.get(timeout=10)


def bench_distributed(opts: DistBenchOptions) -> dict[str, Any]:
    """Run the learner on 1 rank and on ``opts.nproc`` ranks; returns both results and the comparison."""
    if opts.shape not in SHAPES:
        raise UserError(f"--shape: unknown shape '{opts.shape}' (valid: {', '.join(SHAPES)})")
    if opts.device.startswith("cuda") and opts.nproc > (gpus := cuda_count()):
        raise UserError(f"--nproc: {opts.nproc} ranks but {gpus} CUDA GPU(s)")
    total = int(opts.num_envs or SHAPES[opts.shape]["num_envs"])  # type: ignore[call-overload]
    if not opts.weak and total % opts.nproc:
        raise UserError(f"--num_envs: {total} global envs do not split evenly over --nproc {opts.nproc}")
    one, many = _run(1, opts), _run(opts.nproc, opts)
    minibatches = 5 * 4  # epochs x minibatches of the benchmark's PPO schedule (bench.shapes.rsl_rl_cfg)
    speedup = one["s_per_iteration"] / many["s_per_iteration"]
    ideal = 1.0 if opts.weak else float(opts.nproc)  # weak: same time per iteration; strong: nproc x faster
    return {
        "shape": opts.shape,
        "global_envs": total * (opts.nproc if opts.weak else 1),
        "device": opts.device,
        "scaling": "weak" if opts.weak else "strong",
        "one": one,
        "many": many,
        "gradient_collectives_per_minibatch": (many["collectives_per_iteration"] - many["other_collectives"])
        / minibatches,
        "speedup": speedup,
        "efficiency": speedup / ideal,
    }


def show(result: dict[str, Any]) -> None:
    """Human-readable summary of :func:`bench_distributed`."""
    one, many = result["one"], result["many"]
    print(f"redline bench distributed: shape {result['shape']}, {result['scaling']} scaling, {result['device']}")
    for r in (one, many):
        print(
            f"  {r['world_size']} rank(s) x {r['envs_per_rank']} envs ({r['threads_per_rank']} threads each): "
            f"{r['s_per_iteration']:.3f} s/iteration, {r['collective_s']:.3f} s in "
            f"{r['collectives_per_iteration']:.0f} collectives"
        )
    print(
        f"  gradient all-reduces per minibatch: {result['gradient_collectives_per_minibatch']:.2f} (target 1); "
        f"speedup {result['speedup']:.2f}x, scaling efficiency {100 * result['efficiency']:.0f} %"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``redline bench distributed``'s own options."""
    parser.add_argument("--nproc", type=positive_int, default=2, help="ranks compared with 1 (2)")
    parser.add_argument("--shape", choices=list(SHAPES), default="tiny", help=f"{' | '.join(SHAPES)} (tiny)")
    parser.add_argument("--num_envs", type=positive_int, help="global envs (the shape's)")
    parser.add_argument("--iterations", type=positive_int, default=3, help="timed iterations (3)")
    parser.add_argument("--weak", action="store_true", help="each rank keeps --num_envs (weak scaling)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    """``redline bench distributed``."""
    device = resolve_device(args.device)
    return bench_distributed(
        DistBenchOptions(args.nproc, args.shape, args.num_envs, args.iterations, device, args.weak)
    )
