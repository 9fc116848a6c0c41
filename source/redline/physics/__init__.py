"""Physics backends redline adds to Isaac Lab's presets: ``mujoco_cpu`` (MuJoCo's C engine behind Newton).

Importing this package is light (configs only); :mod:`redline.physics.mujoco_cpu` holds the solver and is
imported by Isaac Lab when the preset is built.
"""

from .mujoco_cpu_cfg import PRESET_NAME, MuJoCoCPUSolverCfg, mujoco_cpu_preset

__all__ = ["PRESET_NAME", "MuJoCoCPUSolverCfg", "mujoco_cpu_preset"]
