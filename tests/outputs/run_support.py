"""Run folders made by hand for the resume tests: a record and checkpoints of given iterations."""

from __future__ import annotations

from pathlib import Path

import torch

from redline.outputs.run_folder import write_record
from redline.outputs.run_search import RunRecord


def make_run(exp: Path, name: str, record: RunRecord | None, saved: tuple[int, ...] = ()) -> Path:
    """``exp/name`` with ``record`` (None: none, as before records existed) and a checkpoint per iteration in
    ``saved``."""
    run = exp / name
    run.mkdir(parents=True)
    if record is not None:
        write_record(run, record)
    for it in saved:
        torch.save({"actor_state_dict": {}, "critic_state_dict": {}, "iter": it}, run / f"model_{it}.pt")
    return run
