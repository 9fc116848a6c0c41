"""Where a run's seed goes (:func:`redline.seeding.plan.seed_plan`): the rules each destination used to write itself."""

from __future__ import annotations

import pytest

from redline.seeding.plan import seed_plan


@pytest.mark.parametrize("rank", [0, 1, 3])
def test_each_destination_gets_its_rank_rule(rank: int) -> None:
    seeds = seed_plan(42, rank, envs_per_rank=256)
    assert seeds.env == 42 + rank  # Isaac Lab's generator: distinct per global rank
    assert seeds.env_id_offset == 256 * rank  # the per-env streams' global ids continue across ranks
    assert (seeds.streams, seeds.agent, seeds.torch, seeds.minibatch) == (42, 42, 42, 42)  # the same on every rank
    assert seeds.noise == (42 + 0x9E3779B97F4A7C15 * (rank + 1)) % 2**63


def test_the_ranks_action_noise_seeds_differ() -> None:
    assert len({seed_plan(7, rank).noise for rank in range(64)}) == 64
