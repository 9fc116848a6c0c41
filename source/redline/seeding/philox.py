"""Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) in plain torch ops.

A counter-based generator: ``philox4x32(counter, key)`` is a keyed bijection of a 128-bit counter, so any
draw is a pure function of its coordinates and needs no state, no sequential generator and no Python loop:
every element of a batch of counters is computed independently, on whatever device the tensors live. It is
the generator behind cuRAND's ``curand_init`` / PyTorch's CUDA RNG, and it passes BigCrush.

32-bit words are held in ``int64`` tensors (torch has no fast uint32 arithmetic on every device); the
32 x 32 -> 64-bit product is split into 16-bit halves so no intermediate overflows int64.

Op by op, one draw is ~200 elementwise kernels: on a GPU, ~200 launches per env step. :func:`fused_philox4x32`
is the same function compiled by ``torch.compile`` into one kernel (integer arithmetic only, so bitwise equal). On
the CPU, where each torch op costs microseconds of dispatch whatever its size, :func:`philox4x32_host` computes the
same words on the host: its rounds in C (``philox.c``) where a compiler builds it, else in 30 numpy operations (a
32 x 32-bit product fits a uint64 exactly, so no split).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from redline import native

logger = logging.getLogger(__name__)

MASK32 = 0xFFFFFFFF
PHILOX_M0 = 0xD2511F53  # round multipliers (Random123's PHILOX_M4x32_0 / _1)
PHILOX_M1 = 0xCD9E8D57
PHILOX_W0 = 0x9E3779B9  # Weyl key increments (golden ratio, sqrt(3) - 1)
PHILOX_W1 = 0xBB67AE85
ROUNDS = 10


def _mulhilo(a: torch.Tensor, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(hi, lo)`` 32-bit halves of ``a * m`` for 32-bit ``a`` (int64 tensor) and constant ``m``."""
    t_lo = a * (m & 0xFFFF)  # < 2^48
    t_hi = a * (m >> 16)  # < 2^48
    s = ((t_hi & 0xFFFF) << 16) + t_lo  # low 48 bits of the product, < 2^49
    return (t_hi >> 16) + (s >> 32), s & MASK32  # a*m = t_hi * 2^16 + t_lo


def philox4x32(counter: torch.Tensor, key: tuple[int, int] | torch.Tensor) -> torch.Tensor:
    """Philox4x32-10 of each counter.

    Args:
        counter: ``(..., 4)`` int64 holding 32-bit words.
        key: two 32-bit words: Python ints (one key for all counters; its schedule is computed on the host, which
            saves 40 tensor ops) or an ``(..., 2)`` int64 tensor broadcastable to ``counter[..., :2]``.

    Returns:
        ``(..., 4)`` int64 holding 32-bit words, uniformly distributed.
    """
    c0, c1, c2, c3 = counter.unbind(-1)
    k0, k1 = key if isinstance(key, tuple) else key.unbind(-1)
    for r in range(ROUNDS):
        if r > 0:  # key schedule: k += (W0, W1) between rounds
            k0 = (k0 + PHILOX_W0) & MASK32
            k1 = (k1 + PHILOX_W1) & MASK32
        hi0, lo0 = _mulhilo(c0, PHILOX_M0)
        hi1, lo1 = _mulhilo(c2, PHILOX_M1)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0  # one Philox S-P round
    return torch.stack((c0, c1, c2, c3), dim=-1)


def philox4x32_host(counter: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """:func:`philox4x32` in numpy on the host: the same words, bitwise, in 30 array operations.

    Args:
        counter: ``(..., 4)`` unsigned or non-negative integers below 2^32.
        key: two 32-bit words.

    Returns:
        ``(..., 4)`` ``uint32`` words.
    """
    c = np.asarray(counter).astype(np.uint32)
    flat = c.reshape(-1, 4)
    a, b = philox_pairs(flat[:, 0::2].T, flat[:, 1::2].T, key)
    return np.stack((a[0], b[0], a[1], b[1]), axis=-1).reshape(c.shape)


def philox_pairs(a: np.ndarray, b: np.ndarray, key: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Philox4x32-10 with the words in pairs: ``a = (c0, c2)``, ``b = (c1, c3)``, each ``(2, M)`` ``uint32``.

    The rounds run in C (``philox.c``, one loop over the counters: 28 us against numpy's 124 us for a 512-env,
    3-block draw, docs/performance.md session 26) where :mod:`redline.native` can build it, else in numpy
    (:func:`philox_pairs_numpy`); the same words either way.

    Returns:
        The output pairs ``(a, b)``, ``uint32``: words ``(a[0], b[0], a[1], b[1])`` of each of the M counters.
    """
    lib = _native()
    if lib is None:
        return philox_pairs_numpy(a, b, key)
    a = np.array(a, dtype=np.uint32, order="C")  # copies: the rounds run in place
    b = np.array(b, dtype=np.uint32, order="C")
    keys = _key_words(*key)
    lib.redline_philox_pairs(a.ctypes.data, b.ctypes.data, ctypes.c_int64(a.shape[1]), keys.ctypes.data)
    return a, b


def philox_pairs_numpy(a: np.ndarray, b: np.ndarray, key: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`philox_pairs` in numpy.

    A round is three array operations: one ``uint64`` product of both multiplied words (exact: 32 x 32 bits fit,
    no 16-bit split), whose high and low halves are read as ``uint32`` views (no shift, no mask), and two XORs.
    """
    hi, lo = (1, 0) if _LITTLE_ENDIAN else (0, 1)
    for k in _key_schedule(*key):
        p = np.multiply(a, _MULTIPLIERS, dtype=np.uint64, order="C")  # (c0 * M0, c2 * M1), C order: viewable
        halves = p.view(np.uint32).reshape(*p.shape, 2)[::-1]  # (c2 * M1, c0 * M0) as (.., [low, high]) words
        # (c0, c1, c2, c3) <- (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
        a = halves[..., hi] ^ b
        a ^= k
        b = halves[..., lo]
    return a, b


SOURCE = Path(__file__).with_name("philox.c")
"""The rounds in C."""

FLAGS = ("-O3",)
"""Build flags: -O3 vectorises the loop over counters (SSE2's 32 x 32 -> 64-bit multiply)."""

SWITCH = "REDLINE_NATIVE_PHILOX"
"""Environment variable: ``off`` keeps the numpy rounds."""


@functools.cache
def _native() -> ctypes.CDLL | None:
    """``philox.c`` built (:func:`redline.native.build`), or None (the numpy rounds; logged once)."""
    lib, reason = native.build(SOURCE, SWITCH, FLAGS)
    if lib is None:
        logger.info("philox: numpy rounds (same words, slower): %s", reason)
        return None
    lib.redline_philox_pairs.restype = None
    lib.redline_philox_pairs.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
    return lib


@functools.cache
def _key_words(k0: int, k1: int) -> np.ndarray:
    """The 10 round keys of ``(k0, k1)`` as ``(20,)`` ``uint32``: ``k0, k1`` of round 0, then round 1, ..."""
    return np.concatenate(_key_schedule(k0, k1), axis=1).T.reshape(-1).copy()


_LITTLE_ENDIAN = sys.byteorder == "little"
_MULTIPLIERS = np.array([[PHILOX_M0], [PHILOX_M1]], dtype=np.uint64)


@functools.cache
def _key_schedule(k0: int, k1: int) -> tuple[np.ndarray, ...]:
    """The 10 round keys of ``(k0, k1)``, each a ``(2, 1)`` ``uint32`` array."""
    keys = []
    for r in range(ROUNDS):
        if r > 0:
            k0, k1 = (k0 + PHILOX_W0) & MASK32, (k1 + PHILOX_W1) & MASK32
        keys.append(np.array([[k0], [k1]], dtype=np.uint32))
    return tuple(keys)


def to_unit_float(words: torch.Tensor) -> torch.Tensor:
    """Map 32-bit words to float32 in [0, 1) with 24 random bits each: ``(w >> 8) * 2^-24``."""
    return (words >> 8).to(torch.float32) * (1.0 / (1 << 24))


@functools.cache
def fused_philox4x32(backend: str = "inductor") -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """:func:`philox4x32` compiled into one fused kernel, bitwise equal to it.

    Compiled once per backend for any number of counters (``dynamic=True``: the same kernel for every batch size;
    a batch of one is a second specialisation), under one key given as a tensor (a tuple of ints would be baked
    into the kernel: one compile per seed).

    Args:
        backend: ``torch.compile`` backend (``"inductor"`` generates the fused kernel; tests trace with
            ``"aot_eager"``).

    Returns:
        ``draw(counter (..., 4) int64, key (2,) int64) -> (..., 4) int64``.
    """
    compiled = torch.compile(philox4x32, backend=backend, dynamic=True, fullgraph=True)

    def draw(counter: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        if key.shape != (2,):
            raise ValueError(f"fused_philox4x32: expected one key of shape (2,), got {tuple(key.shape)}")
        return compiled(counter.reshape(-1, 4), key).reshape(counter.shape)

    return draw
