"""Elastic restarts under torchrun: workers that torchrun starts again after a failure continue the same run.

Under ``torchrun --max-restarts N`` a failed worker makes the agents stop and restart every worker of the job, with
``TORCHELASTIC_RESTART_COUNT`` one higher and the same ``TORCHELASTIC_RUN_ID``. The first attempt's rank 0 writes the
run id into its run folder's record (:mod:`redline.outputs.run_search`); on a restart rank 0 finds that folder, the
run resumes from its newest intact checkpoint, keeps writing there, and runs only the iterations left. Nothing is
added to the command line.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping


@dataclasses.dataclass(frozen=True)
class Attempt:
    """This worker's attempt of a torchrun job."""

    run_id: str
    """``TORCHELASTIC_RUN_ID``: ``--rdzv_id`` (multi-node) or a fresh id per ``--standalone`` launch."""
    restart: int
    """``TORCHELASTIC_RESTART_COUNT``: 0 for the first attempt, +1 for each restart."""

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] = os.environ) -> Attempt | None:
        """The attempt torchrun describes in ``environ``; None outside torchrun (or with unreadable variables)."""
        run_id, count = environ.get("TORCHELASTIC_RUN_ID"), environ.get("TORCHELASTIC_RESTART_COUNT", "0")
        if not run_id or not count.isdigit():
            return None
        return cls(run_id, int(count))

    @property
    def restarted(self) -> bool:
        """A restart (not the first attempt)."""
        return self.restart > 0
