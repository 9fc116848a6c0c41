"""Host-process tuning: glibc malloc keeps large freed blocks for reuse, and each process's share of the cores.

PyTorch's CPU allocator caches nothing: each tensor above glibc's mmap threshold (128 KiB, adapting up to 32 MiB) is a
fresh ``mmap`` whose pages fault in on first touch and are unmapped again on free. A CPU learner at the legged shape
allocates ~50 MB activations many times per minibatch, and on this project's CI machine the page faults cost more than
the arithmetic of an ELU (``clone`` of a 50 MB tensor: 30 ms fresh, 5 ms from a reused block). Raising the mmap and
trim thresholds keeps freed memory in the heap for the next allocation, as a caching allocator would; the price is that
the process keeps its peak heap size instead of returning freed memory to the OS.

Applied by the ``redline`` command at start-up (``train``, ``play``, ``bench``), to every learner in the process;
``REDLINE_MALLOC=stock`` leaves glibc's defaults, and so does a ``MALLOC_MMAP_THRESHOLD_`` the user set.

Threads: a process that shares its node with other ranks of a torchrun job (``LOCAL_WORLD_SIZE``) takes its even share
of the cores it may run on (:func:`cores_per_process`), for torch's intra-op pool and MuJoCo-C's rollout pool alike, so
processes x threads never exceeds the cores: oversubscribed spinning OpenMP threads can slow an update 20x.
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


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity: ``taskset -c 0`` gives 1)."""
    return len(os.sched_getaffinity(0))


def cores_per_process(environ: dict[str, str] | None = None) -> int:
    """This process's share of :func:`usable_cores`: divided by torchrun's ``LOCAL_WORLD_SIZE`` (the processes on
    this node; 1 without torchrun), at least 1.

    Args:
        environ: the environment to read ``LOCAL_WORLD_SIZE`` from (default ``os.environ``).
    """
    env = os.environ if environ is None else environ
    local = env.get("LOCAL_WORLD_SIZE", "1")
    share = int(local) if local.isdigit() and int(local) > 0 else 1
    return max(1, usable_cores() // share)


def allocator() -> str:
    """``"tuned"`` once :func:`tune_allocator` succeeded in this process, else ``"stock"`` (for benchmark reports)."""
    return "tuned" if _tuned else "stock"
