"""Every task's gymnasium registration, id by id: entry point and kwargs exactly as users' configs and Isaac Lab's
CLI name them (``rsl_rl_cfg_entry_point`` as :mod:`redline.physics.any_task` rewrites it, the original kept beside)."""

from __future__ import annotations

import gymnasium as gym

import redline_tasks

REGISTERED = {
    "Redline-Ant": (
        "redline_tasks.ant.ant_env:AntEnv",
        {
            "env_cfg_entry_point": "redline_tasks.ant.ant_env_cfg:AntEnvCfg",
            "rsl_rl_cfg_entry_point": "redline.physics.any_task:Redline-Ant@rsl_rl_cfg_entry_point",
            "default_agent": "rsl_rl",
            "rsl_rl_sac_cfg_entry_point": "redline_tasks.ant.agents.ant_sac_cfg:AntSACRunnerCfg",
            "redline_rsl_rl_cfg_entry_point": "redline_tasks.ant.agents.ant_ppo_cfg:AntPPORunnerCfg",
        },
    ),
    "Redline-Ant-Play": (
        "redline_tasks.ant.ant_env:AntEnv",
        {
            "env_cfg_entry_point": "redline_tasks.ant.ant_env_cfg:AntEnvCfg_PLAY",
            "rsl_rl_cfg_entry_point": "redline.physics.any_task:Redline-Ant-Play@rsl_rl_cfg_entry_point",
            "default_agent": "rsl_rl",
            "rsl_rl_sac_cfg_entry_point": "redline_tasks.ant.agents.ant_sac_cfg:AntSACRunnerCfg",
            "redline_rsl_rl_cfg_entry_point": "redline_tasks.ant.agents.ant_ppo_cfg:AntPPORunnerCfg",
        },
    ),
    "Redline-Cartpole": (
        "redline_tasks.cartpole.cartpole_env:CartpoleEnv",
        {
            "env_cfg_entry_point": "redline_tasks.cartpole.cartpole_env_cfg:CartpoleEnvCfg",
            "rsl_rl_cfg_entry_point": "redline.physics.any_task:Redline-Cartpole@rsl_rl_cfg_entry_point",
            "default_agent": "rsl_rl",
            "rsl_rl_sac_cfg_entry_point": "redline_tasks.cartpole.agents.cartpole_sac_cfg:CartpoleSACRunnerCfg",
            "rsl_rl_recurrent_cfg_entry_point": (
                "redline_tasks.cartpole.agents.cartpole_ppo_cfg:CartpolePPORunnerRecurrentCfg"
            ),
            "rsl_rl_with_symmetry_cfg_entry_point": (
                "redline_tasks.cartpole.agents.cartpole_ppo_cfg:CartpolePPORunnerSymmetryCfg"
            ),
            "redline_rsl_rl_cfg_entry_point": "redline_tasks.cartpole.agents.cartpole_ppo_cfg:CartpolePPORunnerCfg",
        },
    ),
    "Redline-Cartpole-Play": (
        "redline_tasks.cartpole.cartpole_env:CartpoleEnv",
        {
            "env_cfg_entry_point": "redline_tasks.cartpole.cartpole_env_cfg:CartpoleEnvCfg_PLAY",
            "rsl_rl_cfg_entry_point": "redline.physics.any_task:Redline-Cartpole-Play@rsl_rl_cfg_entry_point",
            "default_agent": "rsl_rl",
            "rsl_rl_sac_cfg_entry_point": "redline_tasks.cartpole.agents.cartpole_sac_cfg:CartpoleSACRunnerCfg",
            "rsl_rl_recurrent_cfg_entry_point": (
                "redline_tasks.cartpole.agents.cartpole_ppo_cfg:CartpolePPORunnerRecurrentCfg"
            ),
            "rsl_rl_with_symmetry_cfg_entry_point": (
                "redline_tasks.cartpole.agents.cartpole_ppo_cfg:CartpolePPORunnerSymmetryCfg"
            ),
            "redline_rsl_rl_cfg_entry_point": "redline_tasks.cartpole.agents.cartpole_ppo_cfg:CartpolePPORunnerCfg",
        },
    ),
    "Redline-Velocity-Flat-G1": (
        "redline_tasks.velocity.velocity_env:VelocityEnv",
        {
            "env_cfg_entry_point": "redline_tasks.velocity.g1_flat_env_cfg:G1FlatEnvCfg",
            "rsl_rl_cfg_entry_point": "redline.physics.any_task:Redline-Velocity-Flat-G1@rsl_rl_cfg_entry_point",
            "default_agent": "rsl_rl",
            "rsl_rl_sac_cfg_entry_point": "redline_tasks.velocity.agents.g1_flat_sac_cfg:G1FlatSACRunnerCfg",
            "redline_rsl_rl_cfg_entry_point": "redline_tasks.velocity.agents.g1_flat_ppo_cfg:G1FlatPPORunnerCfg",
        },
    ),
    "Redline-Velocity-Flat-G1-Play": (
        "redline_tasks.velocity.velocity_env:VelocityEnv",
        {
            "env_cfg_entry_point": "redline_tasks.velocity.g1_flat_env_cfg:G1FlatEnvCfg_PLAY",
            "rsl_rl_cfg_entry_point": "redline.physics.any_task:Redline-Velocity-Flat-G1-Play@rsl_rl_cfg_entry_point",
            "default_agent": "rsl_rl",
            "rsl_rl_sac_cfg_entry_point": "redline_tasks.velocity.agents.g1_flat_sac_cfg:G1FlatSACRunnerCfg",
            "redline_rsl_rl_cfg_entry_point": "redline_tasks.velocity.agents.g1_flat_ppo_cfg:G1FlatPPORunnerCfg",
        },
    ),
    "Redline-Velocity-Flat-Go1": (
        "redline_tasks.velocity.velocity_env:VelocityEnv",
        {
            "env_cfg_entry_point": "redline_tasks.velocity.go1_flat_env_cfg:Go1FlatEnvCfg",
            "rsl_rl_cfg_entry_point": "redline.physics.any_task:Redline-Velocity-Flat-Go1@rsl_rl_cfg_entry_point",
            "default_agent": "rsl_rl",
            "rsl_rl_sac_cfg_entry_point": "redline_tasks.velocity.agents.go1_flat_sac_cfg:Go1FlatSACRunnerCfg",
            "rsl_rl_with_symmetry_cfg_entry_point": (
                "redline_tasks.velocity.agents.go1_flat_ppo_cfg:Go1FlatPPORunnerSymmetryCfg"
            ),
            "redline_rsl_rl_cfg_entry_point": "redline_tasks.velocity.agents.go1_flat_ppo_cfg:Go1FlatPPORunnerCfg",
        },
    ),
    "Redline-Velocity-Flat-Go1-Play": (
        "redline_tasks.velocity.velocity_env:VelocityEnv",
        {
            "env_cfg_entry_point": "redline_tasks.velocity.go1_flat_env_cfg:Go1FlatEnvCfg_PLAY",
            "rsl_rl_cfg_entry_point": "redline.physics.any_task:Redline-Velocity-Flat-Go1-Play@rsl_rl_cfg_entry_point",
            "default_agent": "rsl_rl",
            "rsl_rl_sac_cfg_entry_point": "redline_tasks.velocity.agents.go1_flat_sac_cfg:Go1FlatSACRunnerCfg",
            "rsl_rl_with_symmetry_cfg_entry_point": (
                "redline_tasks.velocity.agents.go1_flat_ppo_cfg:Go1FlatPPORunnerSymmetryCfg"
            ),
            "redline_rsl_rl_cfg_entry_point": "redline_tasks.velocity.agents.go1_flat_ppo_cfg:Go1FlatPPORunnerCfg",
        },
    ),
    "Redline-Velocity-Rough-Go1": (
        "redline_tasks.velocity.velocity_env:VelocityEnv",
        {
            "env_cfg_entry_point": "redline_tasks.velocity.go1_rough_env_cfg:Go1RoughEnvCfg",
            "rsl_rl_cfg_entry_point": "redline.physics.any_task:Redline-Velocity-Rough-Go1@rsl_rl_cfg_entry_point",
            "default_agent": "rsl_rl",
            "rsl_rl_sac_cfg_entry_point": "redline_tasks.velocity.agents.go1_rough_sac_cfg:Go1RoughSACRunnerCfg",
            "redline_rsl_rl_cfg_entry_point": "redline_tasks.velocity.agents.go1_rough_ppo_cfg:Go1RoughPPORunnerCfg",
        },
    ),
    "Redline-Velocity-Rough-Go1-Play": (
        "redline_tasks.velocity.velocity_env:VelocityEnv",
        {
            "env_cfg_entry_point": "redline_tasks.velocity.go1_rough_env_cfg:Go1RoughEnvCfg_PLAY",
            "rsl_rl_cfg_entry_point": "redline.physics.any_task:Redline-Velocity-Rough-Go1-Play@rsl_rl_cfg_entry_point",
            "default_agent": "rsl_rl",
            "rsl_rl_sac_cfg_entry_point": "redline_tasks.velocity.agents.go1_rough_sac_cfg:Go1RoughSACRunnerCfg",
            "redline_rsl_rl_cfg_entry_point": "redline_tasks.velocity.agents.go1_rough_ppo_cfg:Go1RoughPPORunnerCfg",
        },
    ),
}
"""``{task id: (entry point, kwargs)}`` of every ``Redline-*`` task, written out by hand."""


def test_every_task_is_registered_as_written() -> None:
    found = {
        task_id: (spec.entry_point, spec.kwargs)
        for task_id, spec in gym.registry.items()
        if task_id.startswith(redline_tasks.TASK_PREFIX)
    }
    assert found == REGISTERED
    assert all(gym.spec(task_id).disable_env_checker for task_id in REGISTERED)


def test_the_sac_agent_leaves_the_capture_to_the_command_line() -> None:
    """``redline train`` passes ``--capture`` (default ``auto``) over the agent's fields, so an agent field
    ``capture`` would be overridden without a word; the agent config has none (an override of it is refused)."""
    import dataclasses

    from redline.learning.sac import SACConfig
    from redline_tasks.sac_agent import SACAlgorithmCfg

    fields = set(vars(SACAlgorithmCfg()))
    assert {"capture", "capture_backend"}.isdisjoint(fields)
    assert {f.name for f in dataclasses.fields(SACConfig)} - {"actor", "critic", "num_steps_per_env"} - fields == {
        "capture",
        "capture_backend",
    }
