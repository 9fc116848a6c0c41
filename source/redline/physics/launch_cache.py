"""Warp's CPU kernel launches replayed from their packed arguments when they repeat (``physics=mujoco_cpu``).

On the CPU a ``wp.launch`` spends much of its time in Python: resolving the device, checking each argument and
packing it into its ctypes form, before the compiled kernel runs. A Go1 env step at 512 envs makes ~25 launches of
Newton's and Isaac Lab's kernels, mostly with the same arrays every step: ~2.0 ms of Python beside ~4.6 ms in the
kernels (session 30, docs/performance.md). Warp's own answer is the recorded launch (``wp.launch(...,
record_cmd=True)`` gives a :class:`warp.Launch`, replayed by ``Launch.launch()``): :func:`cached_launch` keeps one per
(kernel, dims, device, arguments) and replays it when a launch repeats exactly — arrays (Warp's, torch tensors,
Isaac Lab's proxy arrays) at the same addresses with the same shapes, strides and dtypes, scalars of the same type
and bits — which is everything an argument's packed bytes depend on. A replay runs the same compiled kernel on the
same packed bytes, so its results are Warp's own, bit for bit. Anything else takes ``wp.launch`` unchanged: CUDA
devices, streams, adjoint launches, an active tape, arguments of other types (structs, arrays with gradients), and
any kernel whose launches keep changing (:data:`MAX_MISSES` misses and no hit: its records are dropped and it is
not tried again).

:func:`install` puts :func:`cached_launch` in ``warp.launch`` (the name Newton's and Isaac Lab's call sites look up);
:func:`uninstall` restores Warp's; :func:`clear` drops every record (a closed solver's arrays are not kept alive).
"""

from __future__ import annotations

import ctypes
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import warp

PLAIN_LAUNCH = warp.launch
"""Warp's own ``wp.launch``, what every launch the cache does not take runs."""
MAX_MISSES = 16
"""Misses after which a kernel that never hit is launched plainly from then on (its launches never repeat)."""
MAX_RECORDS = 64
"""Records kept per kernel; a kernel past it is launched plainly from then on."""


class _Uncacheable(Exception):
    """An argument the cache does not key (the launch goes to Warp unchanged)."""


@dataclass
class _KernelRecords:
    """One kernel's recorded launches and its hit / miss counts."""

    launches: dict[Hashable, Any] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0


@dataclass
class LaunchCache:
    """The recorded launches of every kernel (see the module docs) and which kernels are not cached."""

    kernels: dict[Any, _KernelRecords] = field(default_factory=dict)
    plain: set[Any] = field(default_factory=set)
    """Kernels launched through Warp unchanged (their launches did not repeat)."""

    def launch(self, kernel: Any, dim: Any, args: Sequence[Any], device: Any) -> bool:
        """Replay or record-and-replay the forward launch of ``kernel`` over ``dim`` with ``args`` (inputs then
        outputs) on CPU ``device``; False if it is not cached (the caller launches it through Warp)."""
        if kernel in self.plain:
            return False
        try:
            key = (_dim_key(dim), device.alias, *(_arg_key(a) for a in args))
        except _Uncacheable:
            return False
        records = self.kernels.get(kernel)
        if records is None:
            records = self.kernels[kernel] = _KernelRecords()
        recorded = records.launches.get(key)
        if recorded is None:
            records.misses += 1
            if (records.misses > MAX_MISSES and not records.hits) or len(records.launches) >= MAX_RECORDS:
                self.plain.add(kernel)
                del self.kernels[kernel]
                return False
            recorded = PLAIN_LAUNCH(kernel, dim, inputs=list(args), device=device, record_cmd=True)
            if recorded is None:  # a zero-size launch: nothing to run
                return True
            records.launches[key] = recorded
        else:
            records.hits += 1
        recorded.launch()
        return True

    def clear(self) -> None:
        """Drop every record and start over."""
        self.kernels.clear()
        self.plain.clear()


def _dim_key(dim: Any) -> Hashable:
    """A launch's dims as ints (an int, or a sequence of up to 4)."""
    return int(dim) if isinstance(dim, (int, np.integer)) else tuple(int(d) for d in dim)


def _arg_key(a: Any) -> Hashable:
    """What decides an argument's packed bytes: an array's address, shape, strides and dtype (a Warp array, a torch
    tensor or anything with NumPy's array interface, e.g. Isaac Lab's ``ProxyArray``), a scalar's type and bits
    (-0.0 is not 0.0), None (a null array); anything else (structs, arrays with gradients) is
    :class:`_Uncacheable`."""
    kind = type(a)
    if kind is warp.array:
        if a.requires_grad:
            raise _Uncacheable
        return a.ptr, a.shape, a.strides, a.dtype
    if a is None:
        return None
    if kind is float:
        return a.hex()
    if isinstance(a, int):  # bool, and the IntEnum / IntFlag constants Newton passes
        return kind, int(a)
    if isinstance(a, torch.Tensor):
        if a.requires_grad:
            raise _Uncacheable
        return a.data_ptr(), tuple(a.shape), a.stride(), a.dtype
    if isinstance(a, np.generic):  # numpy scalars (bytes(a) of an integer would be that many zero bytes)
        return kind, a.tobytes()
    if isinstance(a, ctypes.Array):  # Warp's vectors, matrices, quaternions, transforms
        return kind, bytes(memoryview(a))
    interface = getattr(a, "__array_interface__", None)
    if isinstance(interface, dict):
        return interface["data"][0], interface["shape"], interface.get("strides"), interface["typestr"]
    raise _Uncacheable


CACHE = LaunchCache()
"""The process's launch records (one, as ``warp.launch`` is one)."""


def _runtime_free() -> bool:
    """No tape records launches and no capture of Warp's own is under way (those need Warp's launch)."""
    runtime = warp._src.context.runtime
    return getattr(runtime, "tape", None) is None and getattr(runtime, "_apic_capture", None) is None


def cached_launch(
    kernel: Any,
    dim: Any,
    inputs: Sequence[Any] = (),
    outputs: Sequence[Any] = (),
    adj_inputs: Sequence[Any] = (),
    adj_outputs: Sequence[Any] = (),
    device: Any = None,
    stream: Any = None,
    adjoint: bool = False,
    record_tape: bool = True,
    record_cmd: bool = False,
    max_blocks: int = 0,
    block_dim: int = 256,
) -> Any:
    """``wp.launch`` with the same arguments, replayed from :data:`CACHE` where it repeats a CPU forward launch."""
    plain = stream is not None or adjoint or record_cmd or adj_inputs or adj_outputs or max_blocks
    if not plain and _runtime_free():
        resolved = warp.get_device(device)
        if resolved.is_cpu and CACHE.launch(kernel, dim, (*inputs, *outputs), resolved):
            return None
    return PLAIN_LAUNCH(
        kernel,
        dim,
        inputs=inputs,
        outputs=outputs,
        adj_inputs=adj_inputs,
        adj_outputs=adj_outputs,
        device=device,
        stream=stream,
        adjoint=adjoint,
        record_tape=record_tape,
        record_cmd=record_cmd,
        max_blocks=max_blocks,
        block_dim=block_dim,
    )


def install() -> None:
    """Route ``warp.launch`` through :func:`cached_launch` (idempotent)."""
    warp.launch = cached_launch


def uninstall() -> None:
    """Give ``warp.launch`` back to Warp and drop the records."""
    warp.launch = PLAIN_LAUNCH
    CACHE.clear()


def clear() -> None:
    """Drop the records (a closed solver's arrays are not kept alive by them)."""
    CACHE.clear()
