"""How each saved value of a run state is laid out over the envs, so it can be regrouped onto another process count.

A checkpoint's run state holds one part per rank (:mod:`redline.run_state.parts`); continuing on another process
count, each rank builds its part from the saved ones by global env id. Which axis of a saved tensor is the env axis
cannot be read from its shape (a terrain's ``(rows, cols, 3)`` origins look per-env when ``rows`` is the env count;
a contact sensor's flat ``(num_envs * sensors, 3)`` view does not), so the object that owns each value declares it
when the state is gathered, and the layout travels with the checkpoint. The kinds, as strings (a checkpoint loads
with ``weights_only``):

- ``"env"``: the first axis is the env (rows in the rank's local env order);
- ``"env:K"``: the first axis is env-major flat, ``K`` rows per env (``(num_envs * K, ...)``);
- ``"axis:D"``: axis ``D`` is the env (a time-major history ``(T, num_envs, ...)`` is ``axis:1``, as is a recurrent
  hidden state ``(layers, num_envs, H)``);
- ``"shared"``: the same meaning on every rank (counters, clocks, the last resets' log means, a terrain's origins):
  the saved rank 0's value;
- ``"local"``: this rank's own structure (indices into its own model): the live value is kept;
- ``"unknown"``: none of the above could be told; such a state is restored only onto the layout it was saved from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from redline.run_state.tree import leaves

ENV, SHARED, LOCAL, UNKNOWN = "env", "shared", "local", "unknown"
"""The layouts that take no parameter."""


def flat(rows_per_env: int) -> str:
    """The layout of an env-major flat array with ``rows_per_env`` rows per env."""
    return ENV if rows_per_env == 1 else f"env:{rows_per_env}"


def axis(dim: int) -> str:
    """The layout of an array whose axis ``dim`` is the env."""
    return ENV if dim == 0 else f"axis:{dim}"


def default_layout(value: Any, num_envs: int) -> str:
    """The layout of a value whose owner declared none: a tensor whose first axis has ``num_envs`` rows is per env,
    a number or a 0-dim tensor is shared; anything else is unknown (its owner must declare it)."""
    if not isinstance(value, torch.Tensor) or value.dim() == 0:
        return SHARED
    return ENV if value.shape[0] == num_envs else UNKNOWN


def describe(tree: Any, num_envs: int, declared: Mapping[str, str] | None = None) -> dict[str, str]:
    """Every value's layout in ``tree`` by path: the ``declared`` one where its owner gave it, else
    :func:`default_layout`."""
    declared = declared or {}
    return {path: declared.get(path) or default_layout(value, num_envs) for path, value in leaves(tree)}


def check_layout(layout: str, value: Any, num_envs: int) -> bool:
    """Whether ``value`` has the shape ``layout`` says for ``num_envs`` envs (``shared``/``local``: anything)."""
    if layout in (SHARED, LOCAL):
        return True
    if layout == UNKNOWN or not isinstance(value, torch.Tensor):
        return False
    dim, rows = _env_axis(layout)
    return value.dim() > dim and value.shape[dim] == num_envs * rows


def _env_axis(layout: str) -> tuple[int, int]:
    """``(axis, rows per env)`` of a per-env layout."""
    kind, _, arg = layout.partition(":")
    if kind == "axis":
        return int(arg), 1
    return 0, int(arg) if arg else 1


def regroup_value(layout: str, saved: list[Any], counts: list[int], rows: torch.Tensor, live: Any) -> Any:
    """The value for envs ``rows`` (indices into the saved parts' envs, concatenated in part order) from each saved
    part's ``saved`` value, the parts holding ``counts`` envs; ``live``: this rank's current value.

    Raises:
        ValueError: ``layout`` is unknown, or a saved value does not have the shape it declares.
    """
    if layout == SHARED:
        return saved[0]
    if layout == LOCAL:
        return live
    if layout == UNKNOWN or not all(check_layout(layout, s, n) for s, n in zip(saved, counts, strict=True)):
        raise ValueError(f"its layout '{layout}' does not describe the saved shapes")
    dim, per_env = _env_axis(layout)
    # each part as (envs, per_env, ...) with the env axis first; rows picked; back to the declared layout
    leading = [s.movedim(dim, 0) for s in saved]
    grouped = [s.reshape(n, per_env, *s.shape[1:]) for s, n in zip(leading, counts, strict=True)]
    picked = torch.cat(grouped)[rows]
    return picked.reshape(rows.numel() * per_env, *picked.shape[2:]).movedim(0, dim)
