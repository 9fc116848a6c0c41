"""Cartpole balancing (direct workflow), Isaac Lab's classic task on local assets."""

from ..registration import register_task

register_task(
    "Redline-Cartpole",
    env_entry_point=f"{__name__}.cartpole_env:CartpoleEnv",
    env_cfg_module=f"{__name__}.cartpole_env_cfg",
    env_cfg_class="CartpoleEnvCfg",
    agent_cfg=f"{__name__}.agents.cartpole_ppo_cfg:CartpolePPORunnerCfg",
    more_agents={
        "rsl_rl_recurrent_cfg_entry_point": f"{__name__}.agents.cartpole_ppo_cfg:CartpolePPORunnerRecurrentCfg",
        "rsl_rl_with_symmetry_cfg_entry_point": f"{__name__}.agents.cartpole_ppo_cfg:CartpolePPORunnerSymmetryCfg",
    },
)
