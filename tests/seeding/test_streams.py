"""Per-env streams: partition invariance, reproducibility, statistical quality, state round trip, bad input."""

from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

from redline.errors import UserError
from redline.seeding import Domain, EnvStreams, parse_strategy


def _streams(n: int, offset: int = 0, seed: int = 42, strategy: str = "per_env") -> EnvStreams:
    s = EnvStreams(strategy, seed, n, "cpu", env_id_offset=offset)
    s.begin_episode()
    return s


def test_draws_do_not_depend_on_partition_or_reset_order() -> None:
    one = _streams(8)
    ranks = [_streams(4, offset=0), _streams(4, offset=4)]  # 2 "ranks" x 4 envs = the same 8 global envs
    a = one.uniform(None, (3,))
    b = torch.cat([r.uniform(None, (3,)) for r in ranks])
    assert torch.equal(a, b)
    # env 5 resets alone (episode 1) in one run, together with others in reverse order in another
    one.begin_episode([5])
    ranks[1].begin_episode([3, 2, 1])  # global 7, 6, 5
    assert torch.equal(one.uniform([5], (2,)), ranks[1].uniform([1], (2,)))
    assert torch.equal(one.uniform([5], (2,)), ranks[1].uniform([1], (2,)))  # second draw too


def test_the_learner_domain_is_separate() -> None:
    s, t = _streams(4), _streams(4)
    s.uniform(None, (5,), domain=Domain.POLICY)  # the learner draws first in one run only
    assert torch.equal(s.uniform(None, (2,)), t.uniform(None, (2,)))


def test_same_seed_same_stream_other_seed_other_stream() -> None:
    assert torch.equal(_streams(16).normal(None, (4,)), _streams(16).normal(None, (4,)))
    assert not torch.equal(_streams(16).normal(None, (4,)), _streams(16, seed=43).normal(None, (4,)))
    assert not torch.equal(_streams(16).uniform(None, (4,)), _streams(16, strategy="eval").uniform(None, (4,)))


def test_episodes_and_successive_draws_differ() -> None:
    s = _streams(2)
    first, second = s.uniform(None, (4,)), s.uniform(None, (4,))
    s.begin_episode()
    third = s.uniform(None, (4,))
    assert not torch.equal(first, second) and not torch.equal(first, third)


def test_shared_matches_isaaclab_sample_uniform() -> None:
    from isaaclab.utils.math import sample_uniform

    torch.manual_seed(3)
    ours = _streams(6, strategy="shared").uniform(None, (1,), -0.5, 0.25)
    torch.manual_seed(3)
    assert torch.equal(ours, sample_uniform(-0.5, 0.25, (6, 1), "cpu"))


def test_uniformity_ks_on_a_million_draws() -> None:
    u = _streams(10_000).uniform(None, (100,)).flatten().double().numpy()
    assert u.size == 1_000_000
    assert stats.kstest(u, "uniform").pvalue > 1e-3


def test_neighbouring_env_streams_are_uncorrelated() -> None:
    n = 1_000_000
    u = _streams(2, offset=12345).uniform(None, (n,))
    r = torch.corrcoef(u.double())[0, 1].abs().item()
    assert r < 4 / math.sqrt(n)
    z = _streams(1000).normal(None, (1000,))  # 1000 neighbouring envs
    lag1 = torch.corrcoef(torch.stack((z[:-1].flatten(), z[1:].flatten())))[0, 1].abs().item()
    assert lag1 < 4 / math.sqrt(z[1:].numel())
    assert abs(z.mean().item()) < 4 / 1000 and abs(z.std().item() - 1) < 0.01


def test_no_two_identical_streams_among_a_million_env_rank_pairs() -> None:
    # 1000 ranks x 1000 envs per rank: each (env id, rank) is one global id
    first = torch.cat([_streams(1000, offset=rank * 1000).words(None, 2) for rank in range(1000)])
    packed = (first[:, 0] << 32) | first[:, 1]
    assert packed.unique().numel() == 1_000_000


def test_state_round_trip_continues_the_streams() -> None:
    s = _streams(4, offset=10)
    s.uniform(None, (3,))
    s.begin_episode([1])
    state = s.state_dict()
    expected = s.uniform(None, (2,))
    t = EnvStreams("per_env", 42, 4, "cpu", env_id_offset=10)
    t.load_state_dict(state)
    assert torch.equal(t.uniform(None, (2,)), expected)


@pytest.mark.parametrize("seed", [-1, 1.5, "7", True, 2**63])
def test_bad_seed(seed: object) -> None:
    with pytest.raises(UserError, match="seed: must be a non-negative integer"):
        EnvStreams("per_env", seed, 1, "cpu")  # type: ignore[arg-type]


def test_unknown_strategy_lists_the_valid_ones() -> None:
    with pytest.raises(UserError, match=r"unknown strategy 'perenv' \(valid: shared, per_env, eval\)"):
        parse_strategy("perenv")
