"""Legged velocity tracking (manager-based), Isaac Lab's velocity tasks on local assets: the Go1 on flat and rough
ground, the G1 humanoid on flat ground."""

from ..registration import register_task

register_task("Redline-Velocity-Flat-Go1", __name__, "velocity_env:VelocityEnv", "go1_flat", ("Symmetry",))
register_task("Redline-Velocity-Rough-Go1", __name__, "velocity_env:VelocityEnv", "go1_rough")
register_task("Redline-Velocity-Flat-G1", __name__, "velocity_env:VelocityEnv", "g1_flat")
