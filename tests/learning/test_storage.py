"""Rollout storage: in-place writes, the flat view, minibatch permutations and micro-batch splits."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from redline.learning.storage import RolloutStorage

T, N, A = 3, 4, 2


def _storage() -> RolloutStorage:
    obs = TensorDict({"policy": torch.zeros(N, 5), "critic": torch.zeros(N, 6)}, batch_size=[N])
    return RolloutStorage(T, N, obs, ["policy", "critic", "policy"], A, "cpu")


def _policy_fields(v: float) -> dict[str, torch.Tensor]:
    return {
        "actions": torch.full((N, A), v),
        "action_mean": torch.full((N, A), v + 0.1),
        "action_std": torch.full((N, A), v + 0.2),
        "log_probs": torch.full((N,), v + 0.3),
        "values": torch.full((N,), v + 0.4),
    }


def test_layout() -> None:
    st = _storage()
    assert st.data.batch_size == torch.Size([T, N])
    assert set(st.data["obs"].keys()) == {"policy", "critic"}
    assert st.data["obs", "critic"].shape == (T, N, 6)
    assert st.data["actions"].shape == (T, N, A)
    assert st.data["terminated"].dtype == st.data["truncated"].dtype == torch.bool
    assert st.flat.batch_size == torch.Size([T * N])
    assert {"rewards", "terminated", "truncated"}.isdisjoint(set(st.train_view.keys()))
    assert "advantages" in set(st.train_view.keys())


def test_records_in_place_and_advances() -> None:
    st = _storage()
    leaf = st.data["values"]
    for t in range(T):
        obs = TensorDict({"policy": torch.full((N, 5), float(t)), "critic": torch.full((N, 6), -t)}, batch_size=[N])
        st.record_policy(obs, **_policy_fields(float(t)))
        st.record_env(torch.full((N,), 10.0 + t), torch.tensor([t == 1] * N), torch.tensor([t == 2] * N))
    assert st.full
    assert st.data["values"] is leaf  # same buffer, written in place
    assert torch.equal(st.data["obs", "policy"][2], torch.full((N, 5), 2.0))
    assert torch.equal(st.data["values"][:, 0], torch.tensor([0.4, 1.4, 2.4]))
    assert torch.equal(st.data["rewards"][:, 3], torch.tensor([10.0, 11.0, 12.0]))
    assert st.data["terminated"][1].all() and not st.data["terminated"][2].any()
    assert st.data["truncated"][2].all()
    # the flat view and the training view share the buffers: row t*N + n is step t, env n
    assert st.flat["values"][2 * N + 1].item() == pytest.approx(2.4)
    assert st.train_view["log_probs"][N].item() == pytest.approx(1.3)
    with pytest.raises(RuntimeError, match="full"):
        st.record_policy(obs, **_policy_fields(0.0))
    st.clear()
    assert st.step == 0 and not st.full


def _storage_of(t: int, n: int) -> RolloutStorage:
    return RolloutStorage(t, n, TensorDict({"policy": torch.zeros(n, 2)}, batch_size=[n]), ["policy"], A, "cpu")


def test_minibatch_indices_are_a_permutation_per_epoch() -> None:
    st = _storage()
    g = torch.Generator().manual_seed(3)
    first = st.minibatch_indices(4, g)
    assert [idx.shape for idx, _ in first] == [(3,)] * 4 and [w for _, w in first] == [1.0] * 4
    assert torch.equal(torch.cat([idx for idx, _ in first]).sort().values, torch.arange(12))
    second = st.minibatch_indices(4, g)
    assert not all(torch.equal(a, b) for (a, _), (b, _) in zip(first, second, strict=True))  # fresh each epoch
    again = st.minibatch_indices(4, torch.Generator().manual_seed(3))
    assert all(torch.equal(a, b) for (a, _), (b, _) in zip(first, again, strict=True))  # reproducible
    # 12 samples in 5 minibatches of 2: the remainder (2 samples) sits out, indices stay unique
    five = st.minibatch_indices(5, g)
    assert [idx.numel() for idx, _ in five] == [2] * 5 and torch.cat([i for i, _ in five]).unique().numel() == 10
    with pytest.raises(ValueError, match="exceeds"):
        st.minibatch_indices(13, g)


def test_each_minibatch_holds_steps_of_every_env_when_the_count_divides_the_rollout() -> None:
    t, n = 8, 5
    for idx, _ in _storage_of(t, n).minibatch_indices(4, torch.Generator().manual_seed(0)):
        envs = idx % n
        assert torch.equal(torch.bincount(envs, minlength=n), torch.full((n,), t // 4))


@pytest.mark.parametrize(("splits", "num_mini_batches"), [((5, 3), 4), ((2, 2, 4), 3), ((1, 6, 1), 5), ((4, 4), 7)])
def test_ranks_minibatches_are_their_share_of_the_single_process_minibatches(
    splits: tuple[int, ...], num_mini_batches: int
) -> None:
    """Rank r's minibatch m, mapped to (step, global env), is exactly the single process's minibatch m restricted
    to rank r's envs; the weights are the shares' fractions of the global minibatch."""
    t, g = 6, sum(splits)
    whole = _storage_of(t, g).minibatch_indices(num_mini_batches, torch.Generator().manual_seed(7))
    offset = 0
    parts: list[list[tuple[torch.Tensor, float]]] = []
    for n in splits:
        parts.append(_storage_of(t, n).minibatch_indices(num_mini_batches, torch.Generator().manual_seed(7), offset, g))
        offset += n
    assert all(weight == 1.0 for _, weight in whole)
    _assert_rank_shares(whole, parts, splits)
    with pytest.raises(ValueError, match="do not fit"):
        _storage_of(t, 4).minibatch_indices(2, torch.Generator(), env_offset=5, global_num_envs=8)


def test_micro_batches_cover_the_minibatch_with_weights_summing_to_one() -> None:
    idx = torch.arange(10)
    parts = RolloutStorage.micro_batches(idx, 4)
    assert [p.numel() for p, _ in parts] == [3, 3, 2, 2]
    assert [w for _, w in parts] == [0.3, 0.3, 0.2, 0.2]
    assert torch.equal(torch.cat([p for p, _ in parts]), idx)
    assert RolloutStorage.micro_batches(idx, 1)[0][1] == 1.0
    with pytest.raises(ValueError, match="micro_batches"):
        RolloutStorage.micro_batches(idx, 11)


def test_uniform_minibatches_are_a_seeded_permutation_like_rsl_rl() -> None:
    st = _storage_of(8, 5)  # 40 transitions, 4 minibatches of 10
    parts = st.minibatch_indices(4, torch.Generator().manual_seed(3), stratified=False)
    assert [w for _, w in parts] == [1.0] * 4
    assert torch.equal(torch.cat([idx for idx, _ in parts]).sort().values, torch.arange(40))
    # rsl_rl's draw: one randperm of the T * N flat indices, cut into consecutive slices
    perm = torch.randperm(40, generator=torch.Generator().manual_seed(3))
    assert all(torch.equal(idx, perm[10 * m : 10 * (m + 1)]) for m, (idx, _) in enumerate(parts))
    # not stratified: some minibatch holds an env more (or less) often than T / M = 2 times
    counts = [torch.bincount(idx % 5, minlength=5) for idx, _ in parts]
    assert any(not torch.equal(c, torch.full((5,), 2)) for c in counts)


@pytest.mark.parametrize("splits", [(5, 3), (2, 2, 4), (1, 6, 1)])
def test_ranks_uniform_minibatches_are_their_share_of_the_single_process_ones(splits: tuple[int, ...]) -> None:
    t, g, num_mini_batches = 6, sum(splits), 4
    whole = _storage_of(t, g).minibatch_indices(num_mini_batches, torch.Generator().manual_seed(7), stratified=False)
    offset, parts = 0, []
    for n in splits:
        gen = torch.Generator().manual_seed(7)
        parts.append(_storage_of(t, n).minibatch_indices(num_mini_batches, gen, offset, g, stratified=False))
        offset += n
    _assert_rank_shares(whole, parts, splits)


def _assert_rank_shares(whole: list, parts: list, splits: tuple[int, ...]) -> None:
    """Every single-process minibatch is the union of the ranks' shares, each weighted by its size."""
    g = sum(splits)
    for m, (idx, _) in enumerate(whole):
        offset, union = 0, []
        for n, rank_parts in zip(splits, parts, strict=True):
            local, w = rank_parts[m]
            assert w == local.numel() / idx.numel()
            union.append((local // n) * g + offset + local % n)  # (step, local env) -> single-process flat index
            offset += n
        assert torch.equal(torch.cat(union).sort().values, idx.sort().values)
