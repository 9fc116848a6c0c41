"""NaN guard bookkeeping: first non-finite quantity, per-iteration counts, the consecutive-iteration limit."""

from __future__ import annotations

import pytest
import torch

from redline.learning.guard import NanGuard, NonFiniteError

T_, F_ = True, False


def test_records_first_quantity_and_counts_steps() -> None:
    guard = NanGuard(max_consecutive=3, device="cpu")
    ok = guard.check(torch.tensor([F_, F_, F_]), first="observations")
    assert ok.item() and guard.first_bad.item() == 0
    # loss fine, actor gradient bad, critic gradient bad: the actor gradient comes first
    ok = guard.check(torch.tensor([F_, T_, T_]), first="loss")
    assert not ok.item()
    guard.count_step(ok)
    guard.count_step(torch.tensor(True))
    # a later bad quantity does not overwrite the first one
    guard.check(torch.tensor([T_, F_, F_]), first="loss")
    assert guard.end_iteration() == 1
    assert guard.streak_quantity == "actor gradient" and guard.consecutive == 1
    assert guard.skipped.item() == 0 and guard.first_bad.item() == 0  # device counters reset


def test_raises_after_consecutive_iterations_and_resets_on_a_clean_one() -> None:
    guard = NanGuard(max_consecutive=2, device="cpu")

    def iteration(bad: bool) -> int:
        ok = guard.check(torch.tensor([F_, bad, F_]), first="observations")  # "rewards"
        guard.count_step(ok)
        return guard.end_iteration()

    assert iteration(True) == 1
    assert iteration(False) == 0 and guard.consecutive == 0 and guard.streak_quantity is None
    assert iteration(True) == 1
    with pytest.raises(NonFiniteError, match=r"2 consecutive iterations.*the rewards") as err:
        iteration(True)
    assert err.value.quantity == "rewards"
    assert guard.total_skipped == 3


def test_state_round_trip() -> None:
    guard = NanGuard(max_consecutive=5, device="cpu")
    guard.check(torch.tensor([T_]), first="critic gradient")
    guard.count_step(torch.tensor(False))
    guard.end_iteration()
    other = NanGuard(max_consecutive=5, device="cpu")
    other.load_state_dict(guard.state_dict())
    assert (
        other.state_dict()
        == guard.state_dict()
        == {
            "consecutive": 1,
            "streak_quantity": "critic gradient",
            "streak_skipped": 1,
            "total_skipped": 1,
        }
    )


def test_overflowing_learning_rate_stops_training_naming_the_weights() -> None:
    """lr 3e38 (finite, so the config accepts it): every step would overflow the weights; each is undone, the
    weights stay finite, and after max_consecutive_skips iterations training stops naming them."""
    from redline.bench.shapes import DummyVecEnv
    from redline.learning import PPO
    from redline.learning.rollout import train_iteration
    from tests.learning.learning_support import small_cfg

    env = DummyVecEnv(num_envs=16, seed=0)
    torch.manual_seed(0)
    alg = PPO.from_env(env, small_cfg(learning_rate=3e38, schedule="fixed", max_consecutive_skips=2), seed=0)
    obs = env.get_observations()
    obs, _ = train_iteration(alg, env, obs)
    with pytest.raises(NonFiniteError, match="the first non-finite quantity was the updated weights"):
        train_iteration(alg, env, obs)
    assert torch.isfinite(alg.optimizer.flat_param).all()


def test_observation_statistics_that_would_overflow_are_not_merged() -> None:
    from rsl_rl.modules import EmpiricalNormalization

    from redline.learning.models import update_obs_normalizer
    from redline.learning.moments import batch_moments

    norm = EmpiricalNormalization(shape=3)
    norm.train()
    update_obs_normalizer(norm, batch_moments(torch.randn(32, 3), dim=0), torch.tensor(True))
    before = (norm._mean.clone(), norm._var.clone(), norm.count.clone())
    huge = torch.full((8, 3), 1e20) * torch.arange(8).reshape(-1, 1)
    assert not update_obs_normalizer(norm, batch_moments(huge, dim=0), torch.tensor(True)).item()
    assert all(torch.equal(a, b) for a, b in zip(before, (norm._mean, norm._var, norm.count), strict=True))
