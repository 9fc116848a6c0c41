"""Run a function right after a named module has been imported (a post-import hook on ``sys.meta_path``).

Used to offer ``physics=mujoco_cpu`` on the tasks a package registers when it is imported after redline
(:mod:`redline.physics.any_task`). The hook finds the module with the other finders, so editable installs and
zip imports keep working, and gives the module its real loader back before its code runs.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import Any


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for a watched name it asks the other finders and wraps the loader they return."""

    def __init__(self) -> None:
        self.watched: dict[str, list[Callable[[str], None]]] = {}
        self._lock = threading.Lock()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        with self._lock:
            callbacks = self.watched.pop(fullname, None)
        if callbacks is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, callbacks)
                return spec
        return None


class _Loader(importlib.abc.Loader):
    """The real loader, followed by the callbacks once the module's code has run."""

    def __init__(self, loader: Any, callbacks: list[Callable[[str], None]]) -> None:
        self.loader = loader
        self.callbacks = callbacks

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        module.__loader__ = self.loader
        self.loader.exec_module(module)
        for callback in self.callbacks:
            callback(module.__name__)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


_HOOK = _AfterImport()


def after_import(names: Iterable[str], callback: Callable[[str], None]) -> list[str]:
    """Call ``callback(name)`` once each module in ``names`` that is not imported yet has been imported.

    Returns the names now watched (those already in ``sys.modules`` are not: the caller handles them now).
    """
    if _HOOK not in sys.meta_path:
        sys.meta_path.insert(0, _HOOK)
    watched = []
    with _HOOK._lock:
        for name in names:
            if name not in sys.modules:
                _HOOK.watched.setdefault(name, []).append(callback)
                watched.append(name)
    return watched
