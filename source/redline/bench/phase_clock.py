"""Exclusive wall time per phase of nested calls: what ``redline bench steps`` attributes a step's time with.

:meth:`PhaseClock.wrap` replaces a method or function attribute by one that times each call under a phase name.
Calls nest (a manager's compute launches Warp kernels, a reset draws from the streams): a phase is charged only its
*exclusive* time, the call's wall time less that of the wrapped calls made inside it, so the phases of one span of
wall time add up to that span (less the time spent outside every wrapped call). Wrapping changes no result: the
original is called with the same arguments and its return value passed through; :meth:`PhaseClock.restore` puts
every original back.
"""

from __future__ import annotations

import functools
import time
import types
from collections.abc import Callable
from typing import Any


class PhaseClock:
    """Exclusive seconds and call counts per phase, over the calls of the attributes wrapped."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.seconds: dict[str, float] = {}
        """Exclusive seconds per phase [s], summed over its calls."""
        self.calls: dict[str, int] = {}
        """Calls per phase."""
        self._clock = clock
        self._stack: list[float] = []  # per open call: the seconds of the wrapped calls made inside it
        self._wrapped: list[tuple[Any, str, Any, bool]] = []

    def reset(self) -> None:
        """Forget what was measured (the wrappers stay)."""
        self.seconds.clear()
        self.calls.clear()

    def timed(self, fn: Callable[..., Any], phase: str) -> Callable[..., Any]:
        """``fn`` timed under ``phase``."""

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            self._stack.append(0.0)
            start = self._clock()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = self._clock() - start
                inner = self._stack.pop()
                self.seconds[phase] = self.seconds.get(phase, 0.0) + elapsed - inner
                self.calls[phase] = self.calls.get(phase, 0) + 1
                if self._stack:
                    self._stack[-1] += elapsed

        return call

    def wrap(self, owner: Any, name: str, phase: str) -> bool:
        """Time ``owner.name`` under ``phase`` from now on (an instance's bound method is shadowed by an instance
        attribute; a module's function replaced); False, and nothing wrapped, when ``owner`` has no such attribute."""
        if owner is None or not hasattr(owner, name):
            return False
        had_own = not isinstance(owner, type) and name in getattr(owner, "__dict__", {})
        original = getattr(owner, name)
        self._wrapped.append((owner, name, original, had_own or isinstance(owner, (type, types.ModuleType))))
        setattr(owner, name, self.timed(original, phase))
        return True

    def restore(self) -> None:
        """Put back every attribute :meth:`wrap` replaced (in reverse order)."""
        while self._wrapped:
            owner, name, original, keep = self._wrapped.pop()
            if keep:
                setattr(owner, name, original)
            else:
                delattr(owner, name)  # the instance attribute that shadowed the class's method
