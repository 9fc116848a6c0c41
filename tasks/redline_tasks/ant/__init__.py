"""Ant locomotion (direct workflow), Isaac Lab's classic task on local assets."""

from ..registration import register_task

register_task("Redline-Ant", __name__, "ant_env:AntEnv", "ant")
