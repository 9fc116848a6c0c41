"""Ant locomotion (direct workflow), Isaac Lab's classic task on local assets."""

import gymnasium as gym

from . import agents

_KWARGS = {
    "rsl_rl_cfg_entry_point": f"{agents.__name__}.rsl_rl_ppo_cfg:AntPPORunnerCfg",
    "redline_cfg_entry_point": f"{agents.__name__}.rsl_rl_ppo_cfg:AntPPORunnerCfg",
    "default_agent": "rsl_rl",
}

gym.register(
    id="Redline-Ant",
    entry_point=f"{__name__}.ant_env:AntEnv",
    disable_env_checker=True,
    kwargs={"env_cfg_entry_point": f"{__name__}.ant_env_cfg:AntEnvCfg", **_KWARGS},
)

gym.register(
    id="Redline-Ant-Play",
    entry_point=f"{__name__}.ant_env:AntEnv",
    disable_env_checker=True,
    kwargs={"env_cfg_entry_point": f"{__name__}.ant_env_cfg:AntEnvCfg_PLAY", **_KWARGS},
)
