"""Legged velocity tracking (manager-based), Isaac Lab's velocity tasks on local assets: the Go1 on flat and rough
ground, the G1 humanoid on flat ground."""

from ..registration import register_task

register_task(
    "Redline-Velocity-Flat-Go1",
    env_entry_point=f"{__name__}.velocity_env:VelocityEnv",
    env_cfg_module=f"{__name__}.go1_flat_env_cfg",
    env_cfg_class="Go1FlatEnvCfg",
    agent_cfg=f"{__name__}.agents.go1_flat_ppo_cfg:Go1FlatPPORunnerCfg",
    more_agents={
        "rsl_rl_with_symmetry_cfg_entry_point": f"{__name__}.agents.go1_flat_ppo_cfg:Go1FlatPPORunnerSymmetryCfg",
    },
)

register_task(
    "Redline-Velocity-Rough-Go1",
    env_entry_point=f"{__name__}.velocity_env:VelocityEnv",
    env_cfg_module=f"{__name__}.go1_rough_env_cfg",
    env_cfg_class="Go1RoughEnvCfg",
    agent_cfg=f"{__name__}.agents.go1_rough_ppo_cfg:Go1RoughPPORunnerCfg",
)

register_task(
    "Redline-Velocity-Flat-G1",
    env_entry_point=f"{__name__}.velocity_env:VelocityEnv",
    env_cfg_module=f"{__name__}.g1_flat_env_cfg",
    env_cfg_class="G1FlatEnvCfg",
    agent_cfg=f"{__name__}.agents.g1_flat_ppo_cfg:G1FlatPPORunnerCfg",
)
