"""Cartpole balancing (direct workflow), Isaac Lab's classic task on local assets."""

import gymnasium as gym

from . import agents

_KWARGS = {
    "rsl_rl_cfg_entry_point": f"{agents.__name__}.rsl_rl_ppo_cfg:CartpolePPORunnerCfg",
    "redline_cfg_entry_point": f"{agents.__name__}.rsl_rl_ppo_cfg:CartpolePPORunnerCfg",
    "default_agent": "rsl_rl",
}

gym.register(
    id="Redline-Cartpole",
    entry_point=f"{__name__}.cartpole_env:CartpoleEnv",
    disable_env_checker=True,
    kwargs={"env_cfg_entry_point": f"{__name__}.cartpole_env_cfg:CartpoleEnvCfg", **_KWARGS},
)

gym.register(
    id="Redline-Cartpole-Play",
    entry_point=f"{__name__}.cartpole_env:CartpoleEnv",
    disable_env_checker=True,
    kwargs={"env_cfg_entry_point": f"{__name__}.cartpole_env_cfg:CartpoleEnvCfg_PLAY", **_KWARGS},
)
