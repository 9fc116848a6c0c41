"""Running value-target statistics: exact merge, guarded by the finite flag, invertible."""

from __future__ import annotations

import torch

from redline.learning.value_norm import ValueNormalizer

OK, BAD = torch.tensor(True), torch.tensor(False)


def test_merge_equals_statistics_of_everything_seen() -> None:
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(40, generator=g) * 3 + 5, torch.randn(24, generator=g) * 0.5 - 1
    vn = ValueNormalizer(enabled=True)
    vn.update(a, OK)
    vn.update(b, OK)
    var, mean = torch.var_mean(torch.cat((a, b)), correction=0)
    assert torch.allclose(vn.mean, mean, atol=1e-5) and torch.allclose(vn.var, var, atol=1e-4)
    assert vn.count.item() == 64


def test_not_ok_leaves_statistics_unchanged() -> None:
    vn = ValueNormalizer(enabled=True)
    vn.update(torch.tensor([1.0, 3.0]), OK)
    before = {k: v.clone() for k, v in vn.state_dict().items()}
    vn.update(torch.tensor([float("nan"), 1.0]), BAD)
    assert all(torch.equal(before[k], v) for k, v in vn.state_dict().items())


def test_normalize_round_trip_and_floor() -> None:
    vn = ValueNormalizer(enabled=True, min_std=0.5)
    vn.update(torch.tensor([2.0, 4.0]), OK)  # mean 3, var 1
    v = torch.tensor([3.0, 5.0])
    assert torch.allclose(vn.normalize(v), torch.tensor([0.0, 2.0]))
    assert torch.allclose(vn.denormalize(vn.normalize(v)), v)
    flat = ValueNormalizer(enabled=True, min_std=0.5)
    flat.update(torch.full((8,), 7.0), OK)  # var 0: the scale is floored at min_std
    assert torch.allclose(flat.normalize(torch.tensor([8.0])), torch.tensor([2.0]))


def test_disabled_is_identity() -> None:
    vn = ValueNormalizer(enabled=False)
    vn.update(torch.tensor([100.0, 300.0]), OK)
    v = torch.tensor([5.0])
    assert vn.normalize(v) is v and vn.denormalize(v) is v
    assert vn.count.item() == 0
