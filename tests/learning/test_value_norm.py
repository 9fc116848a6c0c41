"""Running value-target statistics: exact merge, guarded by the finite flag, invertible."""

from __future__ import annotations

import torch

from redline.learning.moments import batch_moments, merge_moments, variance
from redline.learning.value_norm import ValueNormalizer

OK, BAD = torch.tensor(True), torch.tensor(False)


def test_merge_equals_statistics_of_everything_seen() -> None:
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(40, generator=g) * 3 + 5, torch.randn(24, generator=g) * 0.5 - 1
    vn = ValueNormalizer(enabled=True)
    vn.update(batch_moments(a), OK)
    vn.update(batch_moments(b), OK)
    var, mean = torch.var_mean(torch.cat((a, b)), correction=0)
    assert torch.allclose(vn.mean, mean, atol=1e-5) and torch.allclose(vn.var, var, atol=1e-4)
    assert vn.count.item() == 64


def test_not_ok_leaves_statistics_unchanged() -> None:
    vn = ValueNormalizer(enabled=True)
    vn.update(batch_moments(torch.tensor([1.0, 3.0])), OK)
    before = {k: v.clone() for k, v in vn.state_dict().items()}
    vn.update(batch_moments(torch.tensor([float("nan"), 1.0])), BAD)
    assert all(torch.equal(before[k], v) for k, v in vn.state_dict().items())


def test_normalize_round_trip_and_floor() -> None:
    vn = ValueNormalizer(enabled=True, min_std=0.5)
    vn.update(batch_moments(torch.tensor([2.0, 4.0])), OK)  # mean 3, var 1
    v = torch.tensor([3.0, 5.0])
    assert torch.allclose(vn.normalize(v), torch.tensor([0.0, 2.0]))
    assert torch.allclose(vn.denormalize(vn.normalize(v)), v)
    flat = ValueNormalizer(enabled=True, min_std=0.5)
    flat.update(batch_moments(torch.full((8,), 7.0)), OK)  # var 0: the scale is floored at min_std
    assert torch.allclose(flat.normalize(torch.tensor([8.0])), torch.tensor([2.0]))


def test_disabled_is_identity() -> None:
    vn = ValueNormalizer(enabled=False)
    vn.update(batch_moments(torch.tensor([100.0, 300.0])), OK)
    v = torch.tensor([5.0])
    assert vn.normalize(v) is v and vn.denormalize(v) is v
    assert vn.count.item() == 0


def test_merged_moments_of_shares_equal_the_moments_of_the_union() -> None:
    g = torch.Generator().manual_seed(2)
    x = torch.randn(50, 3, generator=g) * 4 + 2
    shares = (x[:7], x[7:7], x[7:31], x[31:])  # uneven, one empty
    parts = torch.stack([batch_moments(s, dim=0) if len(s) else torch.zeros(3, 3) for s in shares])
    merged = merge_moments(parts)
    var, mean = torch.var_mean(x, dim=0)
    assert torch.equal(merged[0], torch.full((3,), 50.0))
    assert torch.allclose(merged[1], mean, atol=1e-5) and torch.allclose(variance(merged, correction=1), var, rtol=1e-5)


def test_statistics_that_would_overflow_are_not_merged() -> None:
    """Targets of 1e20 are finite, but their variance (1e40) is not in float32: the statistics stay as they were."""
    vn = ValueNormalizer(enabled=True)
    vn.update(batch_moments(torch.randn(64)), torch.tensor(True))
    before = (vn.mean.clone(), vn.var.clone(), vn.count.clone())
    merged = vn.update(batch_moments(torch.tensor([1e20, -1e20, 3e20, 0.0])), torch.tensor(True))
    assert not merged.item()
    assert all(torch.equal(a, b) for a, b in zip(before, (vn.mean, vn.var, vn.count), strict=True))
    assert torch.isfinite(vn.var)
