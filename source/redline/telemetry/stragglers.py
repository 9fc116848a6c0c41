"""Which rank holds the others back, and why: a pure function of every rank's per-iteration times.

In data-parallel training every rank waits, inside the gradient all-reduce, for the slowest rank's rollout and
backward pass; the wait shows up on the fast ranks as collective time. Each rank measures its own work (env
stepping, inference, update: seconds of wall time outside the collectives), its wait inside the collectives, and the
CPU time its process got over the iteration. A rank whose work exceeds the others' by more than
:data:`STRAGGLER_SLACK` is named, with the reason its own figures give: it got less CPU time than its threads could
use (a core shared with another process), or its env stepping or its update took longer on the same core share (an
uneven share of work: more resets, harder envs).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

RANK_KEYS = ("env_s", "inference_s", "update_s", "wait_s", "cpu_s", "wall_s")
"""Per-rank figures of one iteration [s]: env stepping, inference and storage, the update (collectives excluded),
time inside collectives, the process's CPU time (all threads), and the iteration's wall time."""

STRAGGLER_SLACK = 0.10
"""A rank whose work (env + inference + update) exceeds the median of the other ranks' by more than this fraction is
a straggler."""

BUSY_CORE_SHARE = 0.85
"""Below this fraction of its threads' capacity while working, a rank's cores were shared with other processes."""


def straggler(ranks: Sequence[Mapping[str, float]], threads: int | None = 1) -> str | None:
    """Name the straggling rank and why, or None when every rank works within :data:`STRAGGLER_SLACK` of the others.

    Args:
        ranks: one mapping of :data:`RANK_KEYS` per rank, in rank order.
        threads: threads each rank may keep busy (its share of the cores); None: the ranks' CPU time says nothing
            (GPU ranks wait for their device), so no busy-core reason is given.
    """
    if len(ranks) < 2:
        return None
    work = [r["env_s"] + r["inference_s"] + r["update_s"] for r in ranks]
    slow = max(range(len(ranks)), key=work.__getitem__)
    others = [w for i, w in enumerate(work) if i != slow]
    typical = statistics.median(others)
    if work[slow] <= (1 + STRAGGLER_SLACK) * typical:
        return None
    r = ranks[slow]
    lead = f"rank {slow} works {work[slow]:.3f} s per iteration vs {typical:.3f} s for the others"
    share = 1.0 if threads is None else r["cpu_s"] / max(threads * (r["wall_s"] - r["wait_s"]), 1e-9)  # CPU / work
    if share < BUSY_CORE_SHARE:
        return f"{lead}: a busy core (it got {100 * share:.0f} % of its {threads} thread(s)' time; another process)"
    phase = max(
        ("env_s", "inference_s", "update_s"), key=lambda k: r[k] - statistics.median(o[k] for o in _rest(ranks, slow))
    )
    return f"{lead}: an uneven share ({phase.removesuffix('_s')} {r[phase]:.3f} s on a core it had to itself)"


def _rest(ranks: Sequence[Mapping[str, float]], skip: int) -> list[Mapping[str, float]]:
    return [r for i, r in enumerate(ranks) if i != skip]
