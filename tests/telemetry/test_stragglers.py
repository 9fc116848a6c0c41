"""``redline.telemetry.stragglers``: the rank holding the others back is named with the reason its figures give."""

from __future__ import annotations

import pytest

from redline.telemetry.stragglers import straggler


def _rank(env: float, update: float = 0.2, wait: float = 0.0, cpu: float | None = None) -> dict[str, float]:
    wall = env + 0.05 + update + wait
    return {
        "env_s": env,
        "inference_s": 0.05,
        "update_s": update,
        "wait_s": wait,
        "cpu_s": wall - wait if cpu is None else cpu,
        "wall_s": wall,
    }


def test_even_ranks_have_no_straggler() -> None:
    assert straggler([_rank(1.0, wait=0.02), _rank(1.05, wait=0.0)]) is None
    assert straggler([_rank(1.0)]) is None


def test_a_rank_starved_of_cpu_time_is_a_busy_core() -> None:
    """Rank 1 worked 1.75 s but its process got 0.9 s of CPU: another process held its core."""
    text = straggler([_rank(1.0, wait=0.5), _rank(1.5, cpu=0.9)], threads=1)
    assert text is not None and text.startswith("rank 1 works 1.750 s per iteration vs 1.250 s for the others")
    assert "a busy core (it got 51 % of its 1 thread(s)' time" in text


def test_a_rank_with_its_cores_to_itself_has_an_uneven_share_named_by_phase() -> None:
    text = straggler([_rank(1.0, wait=0.6), _rank(1.0, update=0.8), _rank(1.0, wait=0.6)], threads=1)
    assert text is not None and text.startswith("rank 1 works")
    assert text.endswith("an uneven share (update 0.800 s on a core it had to itself)")


@pytest.mark.parametrize("threads", [None, 2])
def test_cpu_time_is_judged_per_thread_and_not_at_all_on_a_gpu(threads: int | None) -> None:
    """Two threads working 1.75 s need 3.5 s of CPU: 1.75 s is half, a busy core; a GPU rank's CPU time means
    nothing, so the reason is the phase."""
    text = straggler([_rank(1.0, wait=0.5), _rank(1.5)], threads=threads)
    assert text is not None
    assert ("busy core" in text) == (threads == 2) and ("uneven share (env" in text) == (threads is None)
