"""Step many MuJoCo-C worlds whose models differ in a few values with one model per thread, not one per world.

``mujoco.rollout`` takes an ``MjModel`` per world. After a startup randomisation (the Go1's trunk mass and friction)
every world has its own ~50 KB model, and reading 1024 of them per physics step costs 1.4x (one thread) to 1.8x (two
threads) the step of one shared model (docs/physics_cpu.md). :class:`WorldStepper` keeps one model copy per thread
and copies into it, before each world's step, only the bytes that differ between the worlds' models (a few hundred),
in a small C loop (``worlds.c``) on its own threads with the GIL released. Same model values, same step: the result
is bitwise what rollout gives with the per-world models (tests/physics/test_worlds.py).

The C file is compiled on first use (:mod:`redline.native`) with the system C compiler against the mujoco wheel's
headers and library, into ``$XDG_CACHE_HOME/redline`` (default ``~/.cache/redline``), keyed by the source and the
mujoco version. Without a compiler, or if the build fails, :func:`library` returns None with the reason and the
solver keeps rollout's per-world models (slower, same results); ``REDLINE_WORLD_STEPPER=off`` chooses that path.
"""

from __future__ import annotations

import copy
import ctypes
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import mujoco
import numpy as np

from redline import native

logger = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("worlds.c")
"""The C loop."""

SWITCH = "REDLINE_WORLD_STEPPER"
"""Environment variable: ``off`` keeps rollout's per-world models."""

_loaded: tuple[ctypes.CDLL | None, str] | None = None  # (library, reason it is None) once tried


def library() -> tuple[ctypes.CDLL | None, str]:
    """The compiled C loop, or ``(None, why not)``; built once per source and mujoco version, then cached."""
    global _loaded
    if _loaded is None:
        _loaded = _build()
        if _loaded[0] is None:
            logger.warning("mujoco_cpu: one model per world (slower, same results): %s", _loaded[1])
    return _loaded


def _build() -> tuple[ctypes.CDLL | None, str]:
    package = Path(mujoco.__file__).parent
    libs = sorted(package.glob("libmujoco.so*"))
    if not libs or not (package / "include" / "mujoco" / "mujoco.h").is_file():
        return None, f"the mujoco wheel at {package} has no headers or library"
    flags = ["-pthread", f"-I{package / 'include'}"]
    lib, reason = native.build(SOURCE, SWITCH, flags, [str(libs[0]), f"-Wl,-rpath,{package}"], mujoco.__version__)
    if lib is None:
        return None, reason
    lib.redline_step_worlds.restype = ctypes.c_int
    return lib, ""


def varying_fields(models: Sequence[mujoco.MjModel], names: Sequence[str]) -> list[str]:
    """The array fields of ``names`` whose values are not the same in every model."""
    first = models[0]
    out = []
    for name in names:
        base = getattr(first, name, None)
        if (
            isinstance(base, np.ndarray)
            and base.size
            and any(not np.array_equal(getattr(m, name), base) for m in models)
        ):
            out.append(name)
    return out


class WorldStepper:
    """One physics step for every world: worlds that share all but ``fields`` of their models, on ``nthread`` threads.

    Args:
        lib: :func:`library`'s compiled loop.
        models: one model per world (their values; not stepped, not kept in cache by the step).
        fields: the array fields that differ between the models (:func:`varying_fields`); every other field, and
            every solver option, must be the same in all of them.
        nthread: threads (contiguous chunks of worlds; the first on the calling thread).
    """

    def __init__(self, lib: ctypes.CDLL, models: Sequence[mujoco.MjModel], fields: Sequence[str], nthread: int):
        values = {f: np.stack([getattr(m, f) for m in models]) for f in fields}
        self._setup(lib, models[0], values, len(models), nthread)

    @classmethod
    def from_values(
        cls, lib: ctypes.CDLL, base: mujoco.MjModel, values: Mapping[str, np.ndarray], nthread: int
    ) -> WorldStepper:
        """The stepper of worlds whose models are ``base`` with each field of ``values`` (``(nworld, ...)``, one row
        per world; at least one field) replaced by the world's row: no per-world model is built (a model holding a
        large heightfield would cost its size per world)."""
        stepper = cls.__new__(cls)
        stepper._setup(lib, base, values, len(next(iter(values.values()))), nthread)
        return stepper

    def _setup(
        self, lib: ctypes.CDLL, base: mujoco.MjModel, values: Mapping[str, np.ndarray], nworld: int, nthread: int
    ) -> None:
        self._lib = lib
        fields = list(values)
        self.nworld, self.nthread = nworld, nthread
        self.models = [copy.copy(base) for _ in range(nthread)]
        """The threads' own model copies (a solver option changed later must be set on these too)."""
        self._datas = [mujoco.MjData(m) for m in self.models]
        self._src = [
            np.ascontiguousarray(values[f].astype(getattr(base, f).dtype).reshape(self.nworld, -1)).view(np.uint8)
            for f in fields
        ]  # (nworld, bytes) per field
        self._size = np.array([s.shape[1] for s in self._src], dtype=np.int64)
        dst = [getattr(m, f).ctypes.data for m in self.models for f in fields]  # views of each copy's own buffer
        self._dst = (ctypes.c_void_p * max(len(dst), 1))(*dst)
        self._src_ptrs = (ctypes.c_void_p * max(len(fields), 1))(*[s.ctypes.data for s in self._src])
        self._model_ptrs = (ctypes.c_void_p * nthread)(*[m._address for m in self.models])
        self._data_ptrs = (ctypes.c_void_p * nthread)(*[d._address for d in self._datas])
        self._nfield = len(fields)

    def step(
        self, control_spec: int, state0: np.ndarray, control: np.ndarray, state: np.ndarray, sensordata: np.ndarray
    ) -> None:
        """Step every world once from ``state0 (nworld, nstate)`` with ``control (nworld, ncontrol)`` into ``state``
        and ``sensordata`` (contiguous float64, any leading shape with ``nworld`` rows)."""
        arrays = (state0, control, state, sensordata)
        if not all(a.dtype == np.float64 and a.flags.c_contiguous and len(a) == self.nworld for a in arrays):
            raise ValueError("WorldStepper.step: contiguous float64 arrays with one row per world")
        m = self.models[0]
        nsensor = sensordata[0].size if sensordata.size else 0
        if nsensor not in (0, m.nsensordata):
            raise ValueError(f"WorldStepper.step: {nsensor} sensor values per world, the model has {m.nsensordata}")
        status = self._lib.redline_step_worlds(
            ctypes.c_int(self.nworld),
            ctypes.c_int(self.nthread),
            ctypes.c_int(self._nfield),
            ctypes.c_uint(control_spec),
            ctypes.c_int(state0[0].size),
            ctypes.c_int(control[0].size),
            ctypes.c_int(nsensor),
            self._model_ptrs,
            self._data_ptrs,
            self._dst,
            self._src_ptrs,
            self._size.ctypes.data_as(ctypes.POINTER(ctypes.c_long)),
            state0.ctypes.data_as(ctypes.c_void_p),
            control.ctypes.data_as(ctypes.c_void_p),
            state.ctypes.data_as(ctypes.c_void_p),
            sensordata.ctypes.data_as(ctypes.c_void_p) if nsensor else None,
        )
        if status != 0:
            raise RuntimeError(f"mujoco_cpu: could not start {self.nthread} stepping threads")
