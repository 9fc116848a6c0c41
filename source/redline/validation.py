"""The rules a value must follow, each stated once, at the bottom of the package: numeric ranges, the seed's range,
the precision names, and the table-driven checks that the run options, the configs and the learner apply.

Imports nothing of redline but :mod:`redline.errors` and nothing of the simulator, so every layer may use it. Each
check raises a one-line :class:`~redline.errors.UserError` naming the field and what is valid.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping
from typing import Any

from redline.errors import UserError

MAX_SEED = 2**32 - 1
"""Largest seed numpy, and so Isaac Lab's ``configure_seed``, accepts."""

PRECISION_MODES = ("bf16", "fp32")
"""The arithmetic a network body runs in."""
PRECISIONS = ("auto", *PRECISION_MODES)
"""Accepted values of ``--precision`` / ``PPOConfig.precision``: ``auto`` is bf16 on capable CUDA GPUs, else fp32."""


@dataclasses.dataclass(frozen=True)
class Range:
    """What one numeric setting may hold."""

    integer: bool = False
    """Must be an integer (a bool is not one)."""
    low: float | None = None
    """Smallest allowed value (None: unbounded)."""
    high: float | None = None
    """Largest allowed value (None: unbounded)."""
    open_low: bool = False
    """``low`` itself is excluded (``> low`` instead of ``>= low``)."""
    optional: bool = False
    """None is allowed."""

    def describe(self) -> str:
        """The valid values in words, e.g. ``an integer >= 1`` or ``a finite number in [0, 1]``."""
        kind = "an integer" if self.integer else "a finite number"
        if self.low is not None and self.high is not None:
            return f"{kind} in {'(' if self.open_low else '['}{self.low:g}, {self.high:g}]"
        if self.low is not None:
            return f"{kind} {'>' if self.open_low else '>='} {self.low:g}"
        return kind

    def admits(self, value: Any) -> bool:
        """Whether ``value`` is allowed."""
        if value is None:
            return self.optional
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.open_low else value < self.low):
            return False
        return self.high is None or value <= self.high


POSITIVE = Range(low=0.0, open_low=True)
"""A finite number > 0."""
COUNT = Range(integer=True, low=1)
"""An integer >= 1."""
FRACTION = Range(low=0.0, high=1.0)
"""A finite number in [0, 1]."""
NON_NEGATIVE = Range(low=0.0)
"""A finite number >= 0."""
SEED = Range(integer=True, low=0, high=MAX_SEED)
"""A seed: an integer in [0, :data:`MAX_SEED`]."""

MISSING: Any = object()
"""What :func:`get_path` returns for a path that does not exist."""


def get_path(root: Any, path: str) -> Any:
    """The value at a dotted ``path`` of nested dicts / config objects, or :data:`MISSING`."""
    node = root
    for part in path.split("."):
        node = node.get(part, MISSING) if isinstance(node, dict) else getattr(node, part, MISSING)
        if node is MISSING:
            return MISSING
    return node


def check_range(field: str, value: Any, valid: Range) -> None:
    """A one-line :class:`UserError` when ``value`` of ``field`` is outside ``valid``."""
    if not valid.admits(value):
        raise UserError(f"{field}: must be {valid.describe()}, got {value!r}")


def check_ranges(roots: Mapping[str, Any], ranges: Mapping[str, Range]) -> None:
    """A one-line :class:`UserError` naming the first setting out of its range.

    Args:
        roots: the config behind each name's first part (``{"agent": runner_cfg}``).
        ranges: the settings to check, by dotted name (a setting the config lacks is skipped).
    """
    for name, valid in ranges.items():
        root, _, path = name.partition(".")
        value = get_path(roots[root], path) if root in roots else MISSING
        if value is not MISSING:
            check_range(name, value, valid)


def check_fields(obj: Any, ranges: Mapping[str, Range]) -> None:
    """Each attribute of ``obj`` that ``ranges`` names within its range (a frozen config's ``__post_init__``)."""
    for name, valid in ranges.items():
        check_range(name, getattr(obj, name), valid)


def check_choice(field: str, value: Any, valid: Collection[Any], noun: str = "") -> None:
    """A one-line :class:`UserError` when ``value`` is not one of ``valid``: ``<field>: unknown [noun ]'<value>'
    (valid: a, b)``."""
    if value not in valid:
        raise UserError(f"{field}: unknown {noun + ' ' if noun else ''}'{value}' (valid: {', '.join(map(str, valid))})")


def check_precision(value: str, field: str = "precision") -> None:
    """``value`` is one of :data:`PRECISIONS` (the one place the precision names are checked)."""
    check_choice(field, value, PRECISIONS, "precision")
