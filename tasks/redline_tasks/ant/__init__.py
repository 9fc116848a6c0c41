"""Ant locomotion (direct workflow), Isaac Lab's classic task on local assets."""

from ..registration import register_task

register_task(
    "Redline-Ant",
    env_entry_point=f"{__name__}.ant_env:AntEnv",
    env_cfg_module=f"{__name__}.ant_env_cfg",
    env_cfg_class="AntEnvCfg",
    agent_cfg=f"{__name__}.agents.ant_ppo_cfg:AntPPORunnerCfg",
)
