"""A rank of the stop-agreement test: trains on a synthetic env; only rank 1 has received SIGTERM."""

from __future__ import annotations

import datetime
import signal
from pathlib import Path

import torch
import torch.distributed as dist

from redline.bench.shapes import DummyVecEnv
from redline.learning import ModelConfig, PPOConfig
from redline.learning.distributed import Communicator
from redline.runners.redline_runner import RedlineRunner
from redline.runners.stop import Stopped, StopRequest

CFG = PPOConfig(
    num_steps_per_env=4,
    num_learning_epochs=1,
    num_mini_batches=2,
    precision="fp32",
    actor=ModelConfig(hidden_dims=(8,)),
    critic=ModelConfig(hidden_dims=(8,)),
)


def run(rank: int, port: int, out: Path) -> None:
    """Rank ``rank`` of 2: rank 1's flag is set before its first iteration; every rank writes where it stopped."""
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=60)
    )
    comm = Communicator.from_process_group("cpu", timeout_s=60.0)
    env = DummyVecEnv(num_envs=4, seed=1)
    runner = RedlineRunner(env, CFG, out if rank == 0 else None, "cpu", seed=0, save_interval=100, comm=comm)
    stop = StopRequest()
    if rank == 1:
        stop.signum = signal.SIGTERM
    try:
        runner.learn(5, stop=stop)
        result = "finished"
    except Stopped as exc:
        result = f"stopped {exc.iteration} {exc.exit_status}"
    (out / f"rank{rank}.txt").write_text(result)
    dist.destroy_process_group()
