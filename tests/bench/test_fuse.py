"""``--fuse_decimation [on|off]`` of the CPU step benches: the task's own setting unless named, either way."""

from __future__ import annotations

import argparse

import pytest

from redline.bench.cores import MODES, fuse_mode
from redline.bench.fuse import add_fuse_decimation_argument, fuse_overrides
from redline.physics.mujoco_cpu_cfg import fuse_decimation_override


def _parse(*argv: str) -> str | None:
    parser = argparse.ArgumentParser()
    add_fuse_decimation_argument(parser, "the step")
    return parser.parse_args(list(argv)).fuse_decimation


def test_the_option_is_the_tasks_own_setting_unless_named():
    assert _parse() is None and fuse_overrides(None) == ()
    assert _parse("--fuse_decimation") == "on"  # bare, as before the option took a value
    assert fuse_overrides(_parse("--fuse_decimation", "on")) == (fuse_decimation_override(True),)
    # the flat Go1 fuses by default: "off" is how a bench measures its unfused loop
    assert fuse_overrides(_parse("--fuse_decimation", "off")) == (fuse_decimation_override(False),)


def test_a_bad_value_is_refused():
    with pytest.raises(SystemExit):
        _parse("--fuse_decimation", "yes")
    with pytest.raises(ValueError, match="valid: on, off"):
        fuse_overrides("yes")


def test_bench_cores_adds_the_named_mode_beside_the_default_command():
    assert fuse_mode(None) == {}
    ((name, extra),) = fuse_mode("off").items()
    assert name == "default, fuse_decimation=off" and name not in MODES
    assert extra == [fuse_decimation_override(False)]
