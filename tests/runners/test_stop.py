"""SIGTERM / Ctrl-C: the iteration in progress finishes, a checkpoint is written, exit status 128 + signal."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from redline.learning.testing import DummyVecEnv
from redline.outputs.checkpoints import load_checkpoint
from redline.runners.redline import RedlineRunner
from redline.runners.stop import Stopped, StopRequest
from tests.learning.distributed_support import free_port
from tests.runners import stop_support


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
