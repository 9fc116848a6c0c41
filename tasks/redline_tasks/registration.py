"""One call registers a redline task and its ``-Play`` twin with gymnasium (string entry points: imports stay lazy).

A task's files follow one naming rule, so the call names only the task id, its package, its env class and its stem
(``go1_flat``): the env config ``<package>.<stem>_env_cfg:<Stem>EnvCfg`` (and ``<Stem>EnvCfg_PLAY``), the agent
config ``<package>.agents.<stem>_ppo_cfg:<Stem>PPORunnerCfg``, and its variants ``<Stem>PPORunner<Variant>Cfg``, and the
off-policy (SAC) agent config ``<package>.agents.<stem>_sac_cfg:<Stem>SACRunnerCfg`` (:data:`SAC_ENTRY_POINT`).
"""

from __future__ import annotations

import gymnasium as gym

SAC_ENTRY_POINT = "rsl_rl_sac_cfg_entry_point"
"""Isaac Lab's entry-point name of every task's SAC agent config (``isaaclab train --agent``; ``redline train
--algorithm sac``)."""

AGENT_VARIANTS = {
    "Recurrent": "rsl_rl_recurrent_cfg_entry_point",
    "Symmetry": "rsl_rl_with_symmetry_cfg_entry_point",
}
"""Agent config variants by class-name part, and Isaac Lab's entry-point name for each (``isaaclab train --agent``)."""


def register_task(task_id: str, package: str, env: str, stem: str, variants: tuple[str, ...] = ()) -> None:
    """Register ``task_id`` and ``task_id-Play``.

    Args:
        task_id: e.g. ``Redline-Velocity-Flat-Go1``.
        package: the task's package (``__name__`` of its ``__init__``).
        env: ``module:EnvClass`` within ``package``.
        stem: the config files' stem, e.g. ``go1_flat``; its CamelCase (``Go1Flat``) starts the config class names.
        variants: further agent configs the task offers, of :data:`AGENT_VARIANTS`.
    """
    name = "".join(part.capitalize() for part in stem.split("_"))
    agent = f"{package}.agents.{stem}_ppo_cfg:{name}PPORunner"
    agents = {"rsl_rl_cfg_entry_point": f"{agent}Cfg", "default_agent": "rsl_rl"}  # redline's learner reads it too
    agents[SAC_ENTRY_POINT] = f"{package}.agents.{stem}_sac_cfg:{name}SACRunnerCfg"
    agents |= {AGENT_VARIANTS[variant]: f"{agent}{variant}Cfg" for variant in variants}
    for suffix, cfg_class in (("", f"{name}EnvCfg"), ("-Play", f"{name}EnvCfg_PLAY")):
        gym.register(
            id=f"{task_id}{suffix}",
            entry_point=f"{package}.{env}",
            disable_env_checker=True,
            kwargs={"env_cfg_entry_point": f"{package}.{stem}_env_cfg:{cfg_class}", **agents},
        )
