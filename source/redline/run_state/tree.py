"""The one walk over a run state's nested dicts: every value by path, a value set back by path, tensors mapped."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch


def leaves(tree: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """``(path, value)`` of every value in nested dicts (keys joined with ``/``); lists, tuples and empty dicts are
    values."""
    if isinstance(tree, Mapping) and tree:
        for key, value in tree.items():
            yield from leaves(value, f"{path}/{key}" if path else str(key))
    else:
        yield path, tree


def put(out: dict[str, Any], path: str, value: Any, like: Mapping[str, Any]) -> None:
    """Set ``value`` at ``path`` (:func:`leaves`'s) in ``out``, nested as ``like`` is: keys may hold ``/``
    themselves (a walked manager's paths, ``Episode_Reward/...`` log keys), so the path is matched against
    ``like``'s keys level by level."""
    if path in like:
        out[path] = value
        return
    key = next(k for k, v in like.items() if isinstance(v, Mapping) and path.startswith(f"{k}/"))
    put(out.setdefault(key, {}), path[len(str(key)) + 1 :], value, like[key])


def map_tensors(value: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """``value`` with ``fn`` applied to every tensor in its nested dicts (other values as they are)."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, dict):
        return {k: map_tensors(v, fn) for k, v in value.items()}
    return value


def to_cpu(value: Any) -> Any:
    """``value``'s tensors detached, on the CPU (a checkpoint's copy)."""
    return map_tensors(value, lambda t: t.detach().cpu())


def clone(value: Any) -> Any:
    """``value``'s tensors detached and copied on their device (training on does not change the copy)."""
    return map_tensors(value, lambda t: t.detach().clone())
