"""Host-process tuning: glibc malloc keeps large freed blocks for reuse instead of unmapping them.

PyTorch's CPU allocator caches nothing: each tensor above glibc's mmap threshold (128 KiB, adapting up to 32 MiB) is a
fresh ``mmap`` whose pages fault in on first touch and are unmapped again on free. A CPU learner at the legged shape
allocates ~50 MB activations many times per minibatch, and on this project's CI machine the page faults cost more than
the arithmetic of an ELU (``clone`` of a 50 MB tensor: 30 ms fresh, 5 ms from a reused block). Raising the mmap and
trim thresholds keeps freed memory in the heap for the next allocation, as a caching allocator would; the price is that
the process keeps its peak heap size instead of returning freed memory to the OS.

Applied by the ``redline`` command at start-up (``train``, ``play``, ``bench``), to every learner in the process;
``REDLINE_MALLOC=stock`` leaves glibc's defaults, and so does a ``MALLOC_MMAP_THRESHOLD_`` the user set.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

from redline.errors import UserError

M_TRIM_THRESHOLD = -1
"""glibc ``mallopt`` parameter: free memory at the heap top kept before trimming [bytes]."""
M_MMAP_THRESHOLD = -3
"""glibc ``mallopt`` parameter: allocations at least this large are served by ``mmap`` [bytes]."""
THRESHOLD = 1 << 30
"""Both thresholds [bytes]: allocations up to 1 GiB come from (and return to) the heap."""

_tuned = False  # set by tune_allocator() once glibc accepted both thresholds


def tune_allocator(environ: dict[str, str] | None = None) -> bool:
    """Raise glibc's mmap and trim thresholds to :data:`THRESHOLD` for this process.

    Args:
        environ: the environment to read ``REDLINE_MALLOC`` / ``MALLOC_MMAP_THRESHOLD_`` from (default ``os.environ``).

    Returns:
        True when both thresholds were set; False when disabled, already set by the user, or not glibc Linux.

    Raises:
        UserError: ``REDLINE_MALLOC`` is neither ``tuned`` nor ``stock``.
    """
    env = os.environ if environ is None else environ
    mode = env.get("REDLINE_MALLOC", "tuned")
    if mode not in ("tuned", "stock"):
        raise UserError(f"REDLINE_MALLOC: unknown '{mode}' (valid: tuned, stock)")
    if mode == "stock" or "MALLOC_MMAP_THRESHOLD_" in env:
        return False
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    if not hasattr(libc, "mallopt"):  # musl has no mallopt
        return False
    global _tuned
    _tuned = bool(libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD)) and bool(libc.mallopt(M_TRIM_THRESHOLD, THRESHOLD))
    return _tuned


def allocator() -> str:
    """``"tuned"`` once :func:`tune_allocator` succeeded in this process, else ``"stock"`` (for benchmark reports)."""
    return "tuned" if _tuned else "stock"
