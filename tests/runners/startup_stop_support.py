"""A rank of the start-up stop test: only torch.distributed and the stop machinery (spawned ranks import this
module, and a light one keeps the test at seconds on a busy core)."""

from __future__ import annotations

import datetime
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist

from redline.runners.peer_stop import PeerStops
from redline.runners.stop import STARTUP, StopRequest


def wait_in_start_up(rank: int, store_port: int, out: Path) -> None:
    """Rank ``rank`` of 2 in start-up: rank 0 blocked in a gloo barrier rank 1 never joins, rank 1 in Python code.

    stderr goes to ``out/stderr<rank>.txt``; ``out/ready<rank>`` says the rank is waiting; rank 0 has a run folder
    ``out/run`` without a checkpoint. The test signals one rank; the process exits from the stop machinery or hangs.
    """
    os.dup2(os.open(out / f"stderr{rank}.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=60)
    store = dist.TCPStore("127.0.0.1", store_port, 2, False, timeout=timeout)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=2, timeout=timeout)
    stop = StopRequest(STARTUP)
    with stop.installed():
        stop.join_group(PeerStops.of_process_group())
        if rank == 0:
            stop.run_dir = out / "run"
            stop.run_dir.mkdir()
        (out / f"ready{rank}").touch()
        if rank == 0:
            dist.barrier()  # a C call that returns only when rank 1 joins, or after the 60 s timeout
        while True:
            time.sleep(0.05)
