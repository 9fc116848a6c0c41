"""The host-read counter itself: every way of reading a device value on the host is seen and named."""

from __future__ import annotations

import pytest
import torch

from tests.learning.learning_support import READ_METHODS, HostReads


@pytest.mark.parametrize(
    ("read", "method"),
    [
        (lambda t: t.item(), "item"),
        (lambda t: float(t), "__float__"),
        (lambda t: int(t), "__int__"),
        (lambda t: bool(t), "__bool__"),
        (lambda t: 1 if t else 0, "__bool__"),
        (lambda t: t.tolist(), "tolist"),
        (lambda t: t.cpu(), "cpu"),
        (lambda t: t.numpy(), "numpy"),
        (lambda t: [0, 1][t], "__index__"),
        (lambda t: torch.ops.aten._local_scalar_dense(t), "item"),  # what torch's C++ runs for a read: seen too
    ],
)
def test_every_read_is_counted_once_and_named(read, method: str) -> None:  # type: ignore[no-untyped-def]
    t = torch.tensor(1)
    with HostReads() as reads:
        read(t)
    assert dict(reads.calls) == {method: 1}
    ((name, site),) = reads.sites
    assert name == method and site.endswith(":<lambda>")


def test_methods_are_restored_and_device_ops_are_not_reads() -> None:
    before = {name: torch.Tensor.__dict__.get(name) for name in READ_METHODS}
    with HostReads() as reads:
        x = torch.ones(3) * 2 + 1
        torch.where(x > 2, x, 0).sum()
    assert not reads.calls
    assert {name: torch.Tensor.__dict__.get(name) for name in READ_METHODS} == before
