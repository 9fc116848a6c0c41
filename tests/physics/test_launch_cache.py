"""Warp's CPU launches replayed from their packed arguments: the same results as ``wp.launch``, bit for bit."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch
import warp as wp

from redline.physics import launch_cache
from redline.physics.launch_cache import CACHE, MAX_MISSES, PLAIN_LAUNCH, cached_launch


@wp.kernel
def _axpy(a: float, x: wp.array(dtype=float), offset: wp.vec2, y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = a * x[i] + offset[0] + 1.0 / a


@wp.struct
class _Gain:
    a: float


@wp.kernel
def _scaled(g: _Gain, x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = g.a * x[i]


@wp.kernel
def _copy_or_fill(x: wp.array(dtype=float), source: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    if source:
        y[i] = source[i]
    else:
        y[i] = x[i] + 1.0


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    """Empty records; ``warp.launch`` as it was (an env built earlier in the session may have installed the cache)."""
    before = wp.launch
    CACHE.clear()
    yield
    wp.launch = before
    CACHE.clear()


def _arrays(n: int = 5) -> tuple[wp.array, wp.array, wp.array]:
    x = wp.array(np.linspace(-1.0, 1.0, n, dtype=np.float32), device="cpu")
    return x, wp.zeros(n, dtype=float, device="cpu"), wp.zeros(n, dtype=float, device="cpu")


def test_a_repeated_launch_is_replayed_with_warps_own_results() -> None:
    x, y_cached, y_plain = _arrays()
    for a in (2.0, 2.0, 3.0, -0.0, 0.0, 2.0):  # 1 / -0.0 and 1 / 0.0 differ: -0.0 is its own key
        cached_launch(_axpy, x.shape[0], inputs=[a, x, wp.vec2(0.5, 0.0)], outputs=[y_cached], device="cpu")
        PLAIN_LAUNCH(_axpy, x.shape[0], inputs=[a, x, wp.vec2(0.5, 0.0)], outputs=[y_plain], device="cpu")
        np.testing.assert_array_equal(y_cached.numpy(), y_plain.numpy())
    records = CACHE.kernels[_axpy]
    assert (records.hits, records.misses, len(records.launches)) == (2, 4, 4)  # 2.0 twice again; 3.0, -0.0, 0.0 new
    x.assign(np.full(x.shape[0], 7.0, dtype=np.float32))  # new contents at the same address: a replay reads them
    cached_launch(_axpy, x.shape[0], inputs=[2.0, x, wp.vec2(0.5, 0.0)], outputs=[y_cached], device="cpu")
    assert records.hits == 3
    np.testing.assert_array_equal(y_cached.numpy(), np.full(x.shape[0], 2.0 * 7.0 + 0.5 + 0.5, dtype=np.float32))


def test_torch_tensors_and_null_arrays_are_keyed_by_what_is_packed() -> None:
    x, _, _ = _arrays(4)
    out = torch.zeros(4)
    for _ in range(2):  # a torch tensor at the same address, a null array: the same launch again
        cached_launch(_copy_or_fill, 4, inputs=[x, None], outputs=[out], device="cpu")
    np.testing.assert_array_equal(out.numpy(), x.numpy() + 1.0)
    other = torch.full((4,), 9.0)
    cached_launch(_copy_or_fill, 4, inputs=[x, other], outputs=[out], device="cpu")  # a source now: new bytes
    assert torch.equal(out, other)
    wide = torch.zeros(8)
    cached_launch(_copy_or_fill, 4, inputs=[x, None], outputs=[wide[::2]], device="cpu")  # a strided view
    np.testing.assert_array_equal(wide.numpy()[::2], x.numpy() + 1.0)
    assert not wide[1::2].any()
    records = CACHE.kernels[_copy_or_fill]
    assert (records.hits, records.misses) == (1, 3)


def test_new_arrays_every_launch_stop_being_recorded() -> None:
    x, _, _ = _arrays()
    for _ in range(MAX_MISSES + 3):
        y = wp.zeros(x.shape[0], dtype=float, device="cpu")  # a fresh output each time: never the same launch
        cached_launch(_axpy, x.shape[0], inputs=[2.0, x, wp.vec2(0.0, 0.0)], outputs=[y], device="cpu")
        np.testing.assert_allclose(y.numpy(), 2.0 * x.numpy() + 0.5)
    assert _axpy in CACHE.plain and _axpy not in CACHE.kernels  # the records (and their arrays) are dropped


def test_what_the_cache_cannot_key_goes_to_warp_unchanged() -> None:
    x, y, _ = _arrays()
    gain = _Gain()
    gain.a = 3.0
    cached_launch(_scaled, x.shape[0], inputs=[gain, x], outputs=[y], device="cpu")  # a struct: mutable fields
    np.testing.assert_array_equal(y.numpy(), 3.0 * x.numpy())
    tracked = wp.array(x.numpy(), device="cpu", requires_grad=True)
    with wp.Tape():
        cached_launch(_axpy, x.shape[0], inputs=[2.0, tracked, wp.vec2(0.0, 0.0)], outputs=[y], device="cpu")
    assert not CACHE.kernels and not CACHE.plain


def test_install_routes_warp_launch_and_uninstall_restores_it() -> None:
    launch_cache.install()
    assert wp.launch is cached_launch
    x, y, _ = _arrays()
    for _ in range(2):
        wp.launch(_axpy, x.shape[0], inputs=[2.0, x, wp.vec2(0.0, 0.0)], outputs=[y], device="cpu")
    assert CACHE.kernels[_axpy].hits == 1
    launch_cache.uninstall()
    assert wp.launch is PLAIN_LAUNCH and not CACHE.kernels
