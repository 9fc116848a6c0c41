"""``redline bench cores``'s figures from a run's records (the subprocess runs are benchmarks, not tests)."""

import pytest

from redline.bench.cores import of_raw, rates


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


def test_of_raw_divides_each_round_by_its_own_raw_rate():
    # raw doubled between the rounds, the mode's rate with it: the share is the same in both
    assert of_raw([5.0, 10.0], [10.0, 20.0]) == 0.5
    assert of_raw([6.0, 10.0, 3.0], [10.0, 20.0, 10.0]) == 0.5  # median of 0.6, 0.5, 0.3


def test_of_raw_needs_one_raw_rate_per_round():
    with pytest.raises(ValueError, match="one raw rate per round"):
        of_raw([1.0, 2.0], [1.0])
