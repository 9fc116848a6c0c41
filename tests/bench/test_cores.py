"""``redline bench cores``'s figures from a run's records (the subprocess runs are benchmarks, not tests)."""

import pytest

from redline.bench.cores import rates


def _record(env_steps: int, sps: float, collect_s: float) -> dict:
    return {"env_steps": env_steps, "sps": sps, "collect_s": collect_s}


def test_rates_leave_the_first_iteration_out_and_take_medians():
    records = [
        _record(1000, 1.0, 100.0),  # the first iteration (allocation, kernel loading): ignored
        _record(2000, 10.0, 0.5),  # 1000 steps in 0.5 s of collection
        _record(3000, 30.0, 0.25),
        _record(4000, 20.0, 1.0),
    ]
    got = rates(records)
    assert got["sps"] == 20.0
    assert got["rollout_sps"] == 2000.0  # median of 2000, 4000, 1000


def test_rates_need_two_iterations():
    with pytest.raises(ValueError, match="two iterations"):
        rates([_record(1000, 1.0, 1.0)])
