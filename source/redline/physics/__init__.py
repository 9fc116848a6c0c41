"""Physics backends redline adds to Isaac Lab's presets: ``mujoco_cpu`` (MuJoCo's C engine behind Newton).

Importing this package costs nothing (its names load on first use): :mod:`redline.physics.any_task` runs when the
task registry is imported. :mod:`.mujoco_cpu_cfg` holds the configs, :mod:`.offer` adds the preset to any task
config, :mod:`.mujoco_cpu` the solver (imported by Isaac Lab when the preset is built) with its parts by concern:
:mod:`.mujoco_cpu_models`, :mod:`.mujoco_cpu_io`, :mod:`.mujoco_cpu_sensors` and :mod:`.worlds`.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["PRESET_NAME", "MuJoCoCPUSolverCfg", "mujoco_cpu_preset", "offer_mujoco_cpu"]

_HOMES = {
    "PRESET_NAME": "mujoco_cpu_cfg",
    "MuJoCoCPUSolverCfg": "mujoco_cpu_cfg",
    "mujoco_cpu_preset": "mujoco_cpu_cfg",
    "offer_mujoco_cpu": "offer",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
