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


def test_minibatch_indices_are_a_permutation_per_epoch() -> None:
    st = _storage()
    g = torch.Generator().manual_seed(3)
    first = st.minibatch_indices(4, g)
    assert first.shape == (4, 3)
    assert torch.equal(first.flatten().sort().values, torch.arange(12))
    second = st.minibatch_indices(4, g)
    assert not torch.equal(first, second)  # a fresh permutation each epoch
    assert torch.equal(first, st.minibatch_indices(4, torch.Generator().manual_seed(3)))  # reproducible
    # 12 samples in 5 minibatches of 2: the remainder (2 samples) sits out, indices stay unique
    five = st.minibatch_indices(5, g)
    assert five.shape == (5, 2) and five.flatten().unique().numel() == 10
    with pytest.raises(ValueError, match="exceeds"):
        st.minibatch_indices(13, g)


def test_micro_batches_cover_the_minibatch_with_weights_summing_to_one() -> None:
    idx = torch.arange(10)
    parts = RolloutStorage.micro_batches(idx, 4)
    assert [p.numel() for p, _ in parts] == [3, 3, 2, 2]
    assert [w for _, w in parts] == [0.3, 0.3, 0.2, 0.2]
    assert torch.equal(torch.cat([p for p, _ in parts]), idx)
    assert RolloutStorage.micro_batches(idx, 1)[0][1] == 1.0
    with pytest.raises(ValueError, match="micro_batches"):
        RolloutStorage.micro_batches(idx, 11)
