"""Run folders made by hand for the resume tests: a record and checkpoints of given iterations."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch

from redline.outputs.run_search import RECORD, RunRecord


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


def write_record(run_dir: Path, record: RunRecord) -> None:
    """``run_dir/redline_run.json`` as a run folder's creation writes it (:func:`redline.outputs.run_folder.opened`)."""
    (run_dir / RECORD).write_text(json.dumps(dataclasses.asdict(record)) + "\n")
