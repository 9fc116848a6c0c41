"""Where a ``redline train`` run starts (``redline.commands.train_resume``): the iterations a continued run has left,
with the run's own total kept in the agent config that ``params/agent.yaml`` records."""

from __future__ import annotations

from pathlib import Path

import torch

from redline.commands.preflight import prepare
from redline.commands.train_resume import start_run
from redline.options import RunOptions, TrainOptions
from redline.runners.stop import STARTUP, StopRequest


def test_a_continued_run_runs_what_is_left_and_keeps_its_total(tmp_path: Path) -> None:
    opts = TrainOptions(run=RunOptions(task="Redline-Cartpole", device="cpu", log_root=tmp_path), max_iterations=5)
    stop = StopRequest(STARTUP)
    first = prepare(opts).env
    with start_run(opts, first, None, stop) as start:
        assert start.checkpoint is None and start.run_dir is not None
        # killed after saving iteration 1
        torch.save({"actor_state_dict": {}, "critic_state_dict": {}, "iter": 1}, start.run_dir / "model_1.pt")
    again = prepare(opts).env  # the same command again: it continues that run
    with start_run(opts, again, None, stop) as continued:
        assert continued.run_dir == start.run_dir and continued.checkpoint is not None
        assert again.agent_cfg.max_iterations == 5  # what params/agent.yaml records: the run's total, not 3
        assert continued.iterations == 3  # iterations 2, 3, 4
