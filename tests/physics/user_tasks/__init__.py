"""A user's Isaac Lab task defined outside redline, with its own config classes: Isaac Lab's cartpole dynamics under
the user's physics preset group (MuJoCo-Warp options of its own) and a shorter episode."""

import gymnasium as gym

TASK_ID = "Test-User-Cartpole"
"""The task id this package registers."""

if TASK_ID not in gym.registry:
    gym.register(
        id=TASK_ID,
        entry_point="isaaclab_tasks.core.cartpole.cartpole_direct_env:CartpoleEnv",
        disable_env_checker=True,
        kwargs={
            "env_cfg_entry_point": f"{__name__}.env_cfg:UserCartpoleEnvCfg",
            "rsl_rl_cfg_entry_point": "isaaclab_tasks.core.cartpole.agents.rsl_rl_ppo_cfg:CartpoleDirectPPORunnerCfg",
        },
    )
