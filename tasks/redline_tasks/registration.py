"""One call registers a redline task and its ``-Play`` twin with gymnasium (string entry points: imports stay lazy)."""

from __future__ import annotations

import gymnasium as gym


def register_task(
    task_id: str,
    env_entry_point: str,
    env_cfg_module: str,
    env_cfg_class: str,
    agent_cfg: str,
    more_agents: dict[str, str] | None = None,
) -> None:
    """Register ``task_id`` and ``task_id-Play``.

    Args:
        task_id: e.g. ``Redline-Cartpole``.
        env_entry_point: ``module:EnvClass``.
        env_cfg_module: module holding ``env_cfg_class`` and its play twin ``<env_cfg_class>_PLAY``.
        env_cfg_class: the training env config class name.
        agent_cfg: ``module:RunnerCfg`` of the PPO hyper-parameters, used by rsl_rl and by redline's learner.
        more_agents: further agent entry points by Isaac Lab's names (``rsl_rl_recurrent_cfg_entry_point``,
            ``rsl_rl_with_symmetry_cfg_entry_point``), chosen with ``isaaclab train --agent NAME``.
    """
    agents = {"rsl_rl_cfg_entry_point": agent_cfg, "default_agent": "rsl_rl"}  # redline's learner reads it too
    agents |= more_agents or {}
    for suffix, cfg_class in (("", env_cfg_class), ("-Play", f"{env_cfg_class}_PLAY")):
        gym.register(
            id=f"{task_id}{suffix}",
            entry_point=env_entry_point,
            disable_env_checker=True,
            kwargs={"env_cfg_entry_point": f"{env_cfg_module}:{cfg_class}", **agents},
        )
