"""Cartpole balancing (direct workflow), Isaac Lab's classic task on local assets."""

from ..registration import register_task

register_task("Redline-Cartpole", __name__, "cartpole_env:CartpoleEnv", "cartpole", ("Recurrent", "Symmetry"))
