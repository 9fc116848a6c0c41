"""Philox4x32-10 against Random123's known-answer vectors (kat_vectors: philox4x32 10 ...)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from redline import native
from redline.seeding import philox
from redline.seeding.philox import philox4x32, philox4x32_host, to_unit_float


@pytest.mark.parametrize(
    ("counter", "key", "expected"),
    [
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        (
            (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
            (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
        ),
    ],
)
def test_known_answers(counter: tuple, key: tuple, expected: tuple) -> None:
    assert tuple(philox4x32(torch.tensor(counter), torch.tensor(key)).tolist()) == expected
    assert tuple(philox4x32(torch.tensor(counter), key).tolist()) == expected  # host-side key schedule
    assert tuple(philox4x32_host(np.array(counter), key).tolist()) == expected  # numpy, words in pairs


def test_host_equals_op_by_op_on_every_bit_pattern() -> None:
    """The numpy draw against the torch one on random counters (words up to 2^32 - 1) and keys, several shapes."""
    g = torch.Generator().manual_seed(3)
    for shape in [(4,), (1, 4), (37, 4), (5, 3, 4), (256, 6, 4)]:
        counter = torch.randint(0, 2**32, shape, generator=g, dtype=torch.int64)
        key = tuple(int(k) for k in torch.randint(0, 2**32, (2,), generator=g))
        host = philox4x32_host(counter.numpy(), key)  # type: ignore[arg-type]
        assert host.dtype == np.uint32 and host.shape == shape
        assert torch.equal(torch.from_numpy(host.astype(np.int64)), philox4x32(counter, key)), shape  # type: ignore[arg-type]


def test_batched_equals_one_by_one() -> None:
    counters = torch.randint(0, 2**32, (50, 4), dtype=torch.long, generator=torch.Generator().manual_seed(1))
    key = torch.tensor([7, 9])
    batched = philox4x32(counters, key)
    for i in range(0, 50, 7):
        assert torch.equal(batched[i], philox4x32(counters[i], key))
    assert batched.min() >= 0 and batched.max() < 2**32


def test_unit_floats_in_range() -> None:
    words = torch.tensor([0, 255, 256, 2**32 - 1])
    u = to_unit_float(words)
    assert u.dtype == torch.float32
    assert u.tolist()[:3] == [0.0, 0.0, 2**-24] and u[-1] < 1.0


def test_c_rounds_equal_numpy_rounds() -> None:
    # the known answers above run through the C rounds where they build (CI has a compiler); these compare the two
    # paths on random words, M from 1 to a 512-env draw's 1,536 counters
    lib, reason = native.build(philox.SOURCE, philox.SWITCH, philox.FLAGS)
    assert lib is not None, reason
    assert philox._native() is not None
    rng = np.random.default_rng(5)
    for m in (1, 7, 1536):
        a, b = (rng.integers(0, 2**32, (2, m), dtype=np.uint32) for _ in range(2))
        key = (int(rng.integers(0, 2**32)), int(rng.integers(0, 2**32)))
        before = a.copy(), b.copy()
        c_a, c_b = philox.philox_pairs(a, b, key)
        np_a, np_b = philox.philox_pairs_numpy(a, b, key)
        assert c_a.dtype == np.uint32 and np.array_equal(c_a, np_a) and np.array_equal(c_b, np_b), m
        assert np.array_equal(a, before[0]) and np.array_equal(b, before[1])  # the inputs are left as they were


def test_without_a_compiler_the_numpy_rounds_give_the_words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "/nonexistent/cc")
    assert native.build(philox.SOURCE, philox.SWITCH, philox.FLAGS) == (None, "no C compiler (cc) on PATH")
    monkeypatch.setenv(philox.SWITCH, "off")
    assert native.build(philox.SOURCE, philox.SWITCH, philox.FLAGS) == (None, f"{philox.SWITCH}=off")
    philox._native.cache_clear()
    try:
        assert philox._native() is None
        expected = (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)  # Random123's first known answer
        assert tuple(philox4x32_host(np.zeros(4, dtype=np.uint32), (0, 0)).tolist()) == expected
    finally:
        philox._native.cache_clear()
