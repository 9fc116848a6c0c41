"""SIGTERM / Ctrl-C: the iteration in progress finishes, a checkpoint is written, exit status 128 + signal."""

from __future__ import annotations

import datetime
import os
import signal
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from redline.bench.shapes import DummyVecEnv
from redline.outputs.checkpoints import load_checkpoint
from redline.runners.redline_runner import RedlineRunner
from redline.runners.stop import Stopped, StopRequest
from tests.learning.distributed_support import free_port
from tests.runners import startup_stop_support, stop_support


def _runner(run_dir: Path) -> RedlineRunner:
    return RedlineRunner(DummyVecEnv(num_envs=8, seed=0), stop_support.CFG, run_dir, "cpu", seed=0, save_interval=100)


def test_sigterm_saves_the_iteration_in_progress_and_resumes_after_it(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    runner.learn(2)  # model_1 (the last)
    with StopRequest().installed() as stop, pytest.raises(Stopped) as stopped:
        os.kill(os.getpid(), signal.SIGTERM)  # arrives before the next iteration ends
        runner.learn(50, stop=stop)
    assert stopped.value.exit_status == 143 and stopped.value.iteration == 2
    assert stopped.value.checkpoint == tmp_path / "model_2.pt"
    assert load_checkpoint(tmp_path / "model_2.pt")["iter"] == 2  # nothing lost: save_interval was 100
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is gone after the block
    resumed = _runner(tmp_path / "resumed")
    resumed.load(load_checkpoint(tmp_path / "model_2.pt"))
    resumed.learn(1)
    assert (tmp_path / "resumed" / "model_3.pt").is_file()


def test_a_second_ctrl_c_interrupts_at_once() -> None:
    with StopRequest().installed() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.signum == signal.SIGINT  # the first only asks
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)


def test_ranks_agree_to_stop_when_one_got_the_signal(tmp_path: Path) -> None:
    """Rank 1 alone received SIGTERM: both ranks stop after the same iteration, rank 0 writes its checkpoint."""
    ctx = mp.get_context("spawn")
    port = free_port()
    procs = [ctx.Process(target=stop_support.run, args=(r, port, tmp_path)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
    for p in procs:
        p.kill()
    assert [(tmp_path / f"rank{r}.txt").read_text() for r in range(2)] == ["stopped 0 143", "stopped 0 143"]
    assert torch.load(tmp_path / "model_0.pt", weights_only=True)["iter"] == 0


def test_a_rank_signalled_alone_during_start_up_stops_every_rank_at_once(tmp_path: Path) -> None:
    """Under several ranks a SIGTERM to one rank before training ends every rank within seconds, 143 each, one line
    each, and the run folder (no checkpoint yet) is removed. The signalled rank 0 is blocked in a gloo barrier (a C
    call: Python runs no handler until it returns), rank 1 in Python code and never signalled; the store is the
    test's, as torchrun's agent hosts it. Before: rank 0 stayed in the barrier until the 60 s timeout, rank 1 ran on."""
    store = dist.TCPStore("127.0.0.1", 0, 2, True, timeout=datetime.timedelta(seconds=60), wait_for_workers=False)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=startup_stop_support.wait_in_start_up, args=(r, store.port, tmp_path)) for r in (0, 1)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + 180
    while not all((tmp_path / f"ready{r}").exists() for r in (0, 1)) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # rank 0 is inside the barrier
    start = time.monotonic()
    os.kill(procs[0].pid, signal.SIGTERM)
    for p in procs:
        p.join(10)
    seconds = time.monotonic() - start
    for p in procs:
        p.kill()
    errors = [(tmp_path / f"stderr{r}.txt").read_text() for r in (0, 1)]
    assert [p.exitcode for p in procs] == [143, 143] and seconds < 5.0, (seconds, errors)
    assert errors == [
        f"redline train: stopped by SIGTERM during start-up; removed the run folder {tmp_path / 'run'} (no checkpoint "
        "yet)\n",
        "redline train: stopped by SIGTERM (sent to rank 0) during start-up\n",
    ]
    assert not (tmp_path / "run").exists()
