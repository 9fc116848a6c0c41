"""Captured hot paths: the gradient step and policy inference replayed from CUDA graphs, or compiled.

Per optimizer step the eager learner launches a few hundred kernels (forward, backward, clipping, the fused Adam
pass, the NaN flags, the adaptive learning rate), each costing the host a few microseconds; at the legged shape on a
GPU the launches, not the arithmetic, set the update's time. Nothing in those steps reads a device value on the host
(the step's decisions are device flags), so they can be recorded once and replayed:

- **CUDA** (:class:`GraphReplay`, over tensordict's ``CudaGraphModule``): the step is run eagerly a few times on a
  side stream (warm-up: cuBLAS handles, autograd's device threads), then recorded into a ``torch.cuda.CUDAGraph``
  over static copies of its tensor arguments; each later call copies the arguments into those buffers and replays
  the graph. The kernels are eager's own, so the numbers are eager's.
- **elsewhere**, with ``capture="on"`` (:class:`Compiled`): ``torch.compile(fullgraph=True)`` of the same function,
  the backward traced in (dynamo's ``trace_autograd_ops``). Equal to eager within rounding (inductor may fuse and
  reorder); with ``backend="aot_eager"`` it runs eager's ops and proves the step is one graph with no host sync.

A refused capture (a host sync inside, an op the recorder rejects, a graph break) is not an error: the wrapper warns
once with a one-line reason and runs the function eagerly from then on. The wrapped function must have no Python
side effects a replay would skip, and every tensor it reads that is not an argument (parameters, optimizer state,
storage) must be updated in place, never rebound: a replay reads the addresses recorded at capture.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Literal

import torch
from tensordict.nn import CudaGraphModule
from torch.utils import _pytree as pytree

CAPTURE_MODES = ("auto", "on", "off")
"""Accepted values of ``PPOConfig.capture`` (and of the runner's ``--capture``)."""

Kind = Literal["eager", "cuda_graph", "compile"]


class CaptureWarning(UserWarning):
    """A capture was refused; the function runs eagerly (the message says why, in one line)."""


@dataclass(frozen=True)
class CapturePlan:
    """How a learner runs its hot path, resolved from the requested mode and the device."""

    kind: Kind = "eager"
    """``"eager"`` (no capture), ``"cuda_graph"`` (record and replay) or ``"compile"`` (``torch.compile``)."""
    reason: str = ""
    """Why this kind, in a few words (for logs and the benchmark's JSON)."""
    backend: str = "inductor"
    """``torch.compile`` backend of the ``"compile"`` kind."""
    warmup: int = 2
    """``"cuda_graph"``: eager calls per argument signature before recording (the first step is never recorded)."""

    @property
    def active(self) -> bool:
        """True unless the plan is eager."""
        return self.kind != "eager"


def resolve(
    requested: str, device: torch.device | str, distributed: bool = False, backend: str = "inductor"
) -> CapturePlan:
    """Turn ``"auto" | "on" | "off"`` into a :class:`CapturePlan` for ``device``.

    ``"auto"``: CUDA graphs on a CUDA device in a single process, eager elsewhere. ``"on"``: CUDA graphs on CUDA,
    ``torch.compile`` with ``backend`` elsewhere. Data-parallel learners stay eager (their collectives run between
    the captured pieces); ``"on"`` then warns.
    """
    if requested not in CAPTURE_MODES:
        raise ValueError(f"capture: unknown '{requested}' (valid: {', '.join(CAPTURE_MODES)})")
    cuda = torch.device(device).type == "cuda"
    if requested == "off":
        return CapturePlan("eager", "capture off")
    if distributed:
        reason = "data-parallel learners run eagerly (collectives sit inside the gradient step)"
        if requested == "on":
            _refuse("learner", reason)
        return CapturePlan("eager", reason)
    if cuda:
        return CapturePlan("cuda_graph", f"capture {requested} on CUDA", backend)
    if requested == "auto":
        return CapturePlan("eager", "capture auto: off without CUDA")
    return CapturePlan("compile", f"capture on without CUDA: torch.compile({backend!r})", backend)


def wrap(fn: Callable[..., Any], plan: CapturePlan, name: str) -> Callable[..., Any]:
    """``fn`` run as ``plan`` says: itself when eager, else a :class:`GraphReplay` or :class:`Compiled` of it."""
    if plan.kind == "cuda_graph":
        return GraphReplay(fn, name, warmup=plan.warmup)
    if plan.kind == "compile":
        return Compiled(fn, name, backend=plan.backend)
    return fn


def _refuse(name: str, reason: str) -> None:
    """Warn, in one line, that ``name`` runs eagerly because of ``reason``."""
    line = " ".join(str(reason).split())[:300]
    warnings.warn(f"capture refused for the {name}, running it eagerly: {line}", CaptureWarning, stacklevel=3)


def _first_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's message, prefixed by its type."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


class Compiled:
    """``torch.compile(fn, fullgraph=True)`` with the backward traced in; eager after a refused compile.

    Args:
        fn: the function; tensor arguments and Python scalars (scalars are baked into the compiled graph).
        name: what it is, for the warning.
        backend: ``torch.compile`` backend (``"inductor"``; ``"aot_eager"``/``"eager"`` generate no code).
        mode: ``torch.compile`` mode (e.g. ``"reduce-overhead"``: inductor's own CUDA graphs).
    """

    def __init__(self, fn: Callable[..., Any], name: str, backend: str = "inductor", mode: str | None = None) -> None:
        self.fn, self.name = fn, name
        self.compiled = torch.compile(fn, fullgraph=True, backend=backend, mode=mode, dynamic=False)
        self.refused: str | None = None
        """The reason the compile was refused (None while compiled)."""
        self.calls = 0
        """Calls that ran the compiled function."""

    def __call__(self, *args: Any) -> Any:
        if self.refused is not None:
            return self.fn(*args)
        try:
            with torch._dynamo.config.patch(trace_autograd_ops=True):
                out = self.compiled(*args)
        except torch._dynamo.exc.TorchDynamoException as exc:
            if self.calls:  # a later recompile failed: the same refusal, found later
                raise
            # tracing and code generation run on fake tensors: nothing of the step has happened yet
            self.refused = _first_line(exc)
            _refuse(self.name, self.refused)
            return self.fn(*args)
        self.calls += 1
        return out


class GraphReplay:
    """``fn`` recorded and replayed by tensordict's ``CudaGraphModule``, one per argument signature (shapes, dtypes,
    Python scalars); eager from then on after a refused recording.

    ``CudaGraphModule`` does the CUDA-graph work (warm-up on a side stream, recording over static input copies,
    copying new inputs in, replaying, cloning the outputs). What this adds: a graph per signature (the library keeps
    one and raises on a new shape), and a refusal that falls back to eager without repeating the step — the
    recording call runs ``fn`` once eagerly before it records, so when the recording then fails, that eager run's
    output is the call's answer.

    Args:
        fn: the function (tensors, None and Python scalars as arguments; tensors, in any pytree, as outputs).
        name: what it is, for the warning.
        warmup: eager calls per signature before the recording call (which runs ``fn`` eagerly, then records).
        max_graphs: signatures to record; calls with further signatures run eagerly.
    """

    def __init__(self, fn: Callable[..., Any], name: str, warmup: int = 2, max_graphs: int = 8) -> None:
        self.fn, self.name, self.warmup, self.max_graphs = fn, name, max(warmup, 1), max_graphs
        self.refused: str | None = None
        """The reason recording was refused (None while capturing)."""
        self.replays = 0
        """Calls answered by a replay."""
        self._graphs: dict[Hashable, CudaGraphModule] = {}
        self._eager: tuple[int, Any] = (0, None)
        """(eager runs of ``fn`` finished so far, the last one's output)."""

    def _run(self, *args: Any) -> Any:
        """``fn`` as the library calls it; an eager run's output is kept for a refused recording."""
        out = self.fn(*args)
        if not (torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()):
            self._eager = (self._eager[0] + 1, out)
        return out

    def __call__(self, *args: Any) -> Any:
        if self.refused is not None:
            return self.fn(*args)
        leaves, spec = pytree.tree_flatten(args)
        key = (spec, tuple(_leaf_key(leaf) for leaf in leaves))
        graph = self._graphs.get(key)
        if graph is None:
            if len(self._graphs) >= self.max_graphs:
                return self.fn(*args)
            with warnings.catch_warnings():  # its "no CUDA" warning cannot apply: the plan chose CUDA
                warnings.simplefilter("ignore", UserWarning)
                graph = self._graphs[key] = CudaGraphModule(self._run, warmup=self.warmup + 1)
        replay = graph.counter > self.warmup
        runs_before = self._eager[0]
        try:
            out = graph(*args)
        except Exception as exc:  # a host sync or an uncapturable op: the recorder raises
            if graph.counter != self.warmup or self._eager[0] == runs_before:
                raise  # not the recording, or fn itself failed eagerly: a real error
            self.refused = _first_line(exc)
            _refuse(self.name, self.refused)
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            return self._eager[1]  # the recording call's eager run already took the step
        self.replays += replay
        return out


def _leaf_key(leaf: Any) -> Hashable:
    """What a recorded graph depends on in one argument leaf: a tensor's layout, or a scalar's value."""
    if isinstance(leaf, torch.Tensor):
        return ("tensor", tuple(leaf.shape), leaf.dtype, leaf.device)
    return ("value", type(leaf).__name__, leaf)
