"""The per-env streams' draws on the host in numpy, for every env or any subset of them (resets, events, pushes).

:class:`~redline.seeding.streams.EnvStreams` on the CPU draws through here: the same Philox4x32-10 counters as its
torch path, ``(global env id, episode, domain, block)``, computed with :func:`~redline.seeding.philox.philox_pairs`
(its rounds in C, else 30 numpy operations) instead of ~200 torch ops, so the words are bitwise the same and a
subset's draw costs what a whole batch's does (2026-12-06: 0.9 ms -> ~0.1 ms per reset draw of a 512-env Go1;
docs/performance.md).
"""

from __future__ import annotations

import math

import numpy as np

from redline.seeding.philox import MASK32, philox_pairs


def host_words(
    ids: np.ndarray | None,
    count: int,
    domain: int,
    global_ids: np.ndarray,
    episode: np.ndarray,
    used: np.ndarray,
    key: tuple[int, int],
) -> np.ndarray:
    """``(len(ids), count)`` ``uint32`` words of envs ``ids`` (None: every env); advances their ``used`` blocks.

    Args:
        ids: local env indices, int64 (repeats allowed: a repeated env draws the same words once, as torch's
            indexed ``+=`` advances it once), or None for all envs in order.
        count: words per env.
        domain: the counter's domain word.
        global_ids: ``(num_envs, 1)`` ``uint32`` global env ids (masked to 32 bits).
        episode: ``(num_envs,)`` int64 episode index of each env (a view of the streams' counters).
        used: ``(num_envs,)`` int64 blocks used in the episode in ``domain`` (a view, advanced in place).
        key: the streams' two 32-bit key words.
    """
    n_blocks = math.ceil(count / 4)
    rows = slice(None) if ids is None else ids
    first = used[rows]  # a copy for an index array, a view for all envs: read before the advance either way
    n = len(first)
    a = np.empty((2, n, n_blocks), dtype=np.uint32)  # (global env id, domain)
    b = np.empty((2, n, n_blocks), dtype=np.uint32)  # (episode, block)
    a[0] = global_ids[rows]
    a[1] = domain
    b[0] = (episode[rows] & MASK32)[:, None]
    b[1] = (first[:, None] + np.arange(n_blocks)) & MASK32
    if ids is None:
        used += n_blocks
    else:
        used[ids] = first + n_blocks
    a, b = philox_pairs(a.reshape(2, -1), b.reshape(2, -1), key)
    words = np.stack((a[0], b[0], a[1], b[1]), axis=-1)  # (n * n_blocks, 4)
    return words.reshape(n, -1)[:, :count]
