"""argparse value types shared by the ``redline`` commands and the benches: each rejects a bad value with a message
argparse prefixes with the option's name (``--num_envs: must be a positive integer, got '-4'``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def _positive[N: (int, float)](cast: Callable[[str], N], kind: str) -> Callable[[str], N]:
    """An argparse ``type`` accepting values of ``cast`` above zero."""

    def parse(text: str) -> N:
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a positive {kind}, got '{text}'") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be a positive {kind}, got '{text}'")
        return value

    return parse


positive_int = _positive(int, "integer")
"""An integer > 0."""
positive_float = _positive(float, "number")
"""A number > 0."""

MAX_TIMEOUT_S = 7 * 24 * 3600.0
"""Longest process-group timeout ``--dist_timeout`` takes [s] (a week; ``inf`` and ``1e300`` overflow the
``timedelta`` torch.distributed converts it to)."""


def timeout_seconds(text: str) -> float:
    """A finite number of seconds in (0, :data:`MAX_TIMEOUT_S`]."""
    value = positive_float(text)
    if not value <= MAX_TIMEOUT_S:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds in (0, {MAX_TIMEOUT_S:g}] (a week), got '{text}'"
        )
    return value


def seed(text: str) -> int:
    """An integer seed in [0, 2^32 - 1] (numpy's range, which Isaac Lab's ``configure_seed`` uses)."""
    from redline.envs.checks import MAX_SEED

    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, {MAX_SEED}], got '{text}'")
    return value


def run_name(text: str) -> str:
    """A run folder suffix: one path component (no separators, not ``.``/``..``), printable, at most 100 characters."""
    separators = any(c in text for c in "/\\\0")
    if not text or len(text) > 100 or text in (".", "..") or separators or not text.isprintable():
        raise argparse.ArgumentTypeError(
            f"must be one folder-name component (no '/', not '..', printable, <= 100 characters), got {text!r}"
        )
    return text


def strategy(text: str) -> str:
    """A seeding strategy name (:data:`redline.seeding.STRATEGIES`)."""
    from redline.seeding import STRATEGIES

    if text not in STRATEGIES:
        raise argparse.ArgumentTypeError(f"unknown strategy '{text}' (valid: {', '.join(STRATEGIES)})")
    return text
