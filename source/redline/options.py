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


def seed(text: str) -> int:
    """A non-negative integer seed."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got '{text}'")
    return value


def strategy(text: str) -> str:
    """A seeding strategy name (:data:`redline.seeding.STRATEGIES`)."""
    from redline.seeding import STRATEGIES

    if text not in STRATEGIES:
        raise argparse.ArgumentTypeError(f"unknown strategy '{text}' (valid: {', '.join(STRATEGIES)})")
    return text
