"""``--fuse_decimation [on|off]`` of the CPU step benches (``bench steps``, ``bench cores``)."""

from __future__ import annotations

import argparse

from redline.physics.mujoco_cpu_cfg import fuse_decimation_override

FUSE_CHOICES = ("on", "off")
"""``--fuse_decimation``'s values; without the option a task runs its own default (the flat Go1 fuses, others not)."""


def add_fuse_decimation_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """``--fuse_decimation [on|off]`` (bare: ``on``) for a bench command; ``what`` says what it changes."""
    parser.add_argument(
        "--fuse_decimation",
        nargs="?",
        const="on",
        choices=FUSE_CHOICES,
        help=f"{what} with fuse_decimation on or off (bare: on; default: the task's own setting)",
    )


def fuse_overrides(fuse: str | None) -> tuple[str, ...]:
    """The env override of ``--fuse_decimation``'s value (none: the task's own setting)."""
    if fuse is None:
        return ()
    if fuse not in FUSE_CHOICES:
        raise ValueError(f"fuse_decimation: '{fuse}' (valid: {', '.join(FUSE_CHOICES)})")
    return (fuse_decimation_override(fuse == "on"),)
