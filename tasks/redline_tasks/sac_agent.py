"""The off-policy (SAC) agent config every redline task registers as ``rsl_rl_sac_cfg_entry_point``.

An rsl_rl-style runner config (``class_name = "OnPolicyRunner"``, the runner stock ``isaaclab train`` builds) whose
``algorithm.class_name`` is redline's SAC drop-in (:data:`redline.learning.sac.CLASS_PATH`), so
``isaaclab train --rl_library rsl_rl --task T --agent rsl_rl_sac_cfg_entry_point`` and ``redline train --task T
--algorithm sac`` read the same config. Its ``algorithm``, ``actor`` and ``critic`` have the fields (and defaults)
of :class:`~redline.learning.sac.SACConfig`, :class:`~redline.learning.sac.SACActorConfig` and
:class:`~redline.learning.sac.SACCriticConfig`, generated from them (their docstrings are the fields' docs), with
lists for tuples so that Hydra overrides (``agent.algorithm.batch_size=512``) reach them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from isaaclab.utils import configclass
from isaaclab_rl.rsl_rl import RslRlOnPolicyRunnerCfg, RslRlSymmetryCfg

from redline.device import default_device
from redline.learning.sac import CLASS_PATH, SACActorConfig, SACConfig, SACCriticConfig


def mirror_config(name: str, config: type, skip: tuple[str, ...] = (), **extra: Any) -> Any:
    """A ``@configclass`` named ``name`` with the fields and defaults of the frozen dataclass ``config`` (tuples
    as lists), less ``skip``, plus ``extra`` (name: default) first."""
    namespace: dict[str, Any] = {"__doc__": f"The fields of :class:`{config.__module__}.{config.__qualname__}`."}
    annotations: dict[str, Any] = {}
    values = dict(extra)
    for field in dataclasses.fields(config):
        if field.name not in skip:
            values[field.name] = list(field.default) if isinstance(field.default, tuple) else field.default
    for key, value in values.items():
        annotations[key] = type(value) if value is not None else Any
        namespace[key] = value
    namespace["__annotations__"] = annotations
    namespace["__module__"] = __name__
    return configclass(type(name, (), namespace))


SACAlgorithmCfg = mirror_config(
    "SACAlgorithmCfg",
    SACConfig,
    skip=("actor", "critic", "num_steps_per_env", "capture", "capture_backend"),
    class_name=CLASS_PATH,
    symmetry_cfg=None,
)
"""``agent.algorithm``: :class:`~redline.learning.sac.SACConfig`'s fields (less the networks and the steps per
iteration, the runner's, and the capture, the command line's ``--capture`` as for PPO: an agent field would be
overridden by its default), ``class_name`` and ``symmetry_cfg`` (None, or Isaac Lab's ``RslRlSymmetryCfg`` with
``use_data_augmentation``: every minibatch also trains on its mirror images, as rsl_rl's PPO does)."""
SHIM_FIELDS = {"distribution_cfg": None, "stochastic": False}
"""What Isaac Lab's ``handle_deprecated_rsl_rl_cfg`` (stock scripts and :func:`redline.envs.prepare.runner_cfg_dict`)
reads on every ``actor``/``critic`` config: no output distribution of rsl_rl's (SAC's actor has its own)."""
SACActorCfg = mirror_config("SACActorCfg", SACActorConfig, skip=("obs_groups",), class_name="SACActor", **SHIM_FIELDS)
"""``agent.actor``: :class:`~redline.learning.sac.SACActorConfig`'s fields (the groups come from ``obs_groups``)."""
SACCriticCfg = mirror_config(
    "SACCriticCfg", SACCriticConfig, skip=("obs_groups",), class_name="SACCritic", **SHIM_FIELDS
)
"""``agent.critic``: :class:`~redline.learning.sac.SACCriticConfig`'s fields."""


@configclass
class SACRunnerCfg(RslRlOnPolicyRunnerCfg):
    """A task's SAC agent: the learner's defaults (:class:`~redline.learning.sac.SACConfig`), which each task's
    ``agents/<stem>_sac_cfg.py`` adjusts; an iteration is ``num_steps_per_env`` env steps then one update call."""

    num_steps_per_env = SACConfig.num_steps_per_env
    save_interval = 100
    obs_groups = {"actor": ["policy"], "critic": ["policy"]}
    clip_actions = None  # the actor's tanh keeps actions within +-action_scale
    device = default_device()  # "cuda:0" when a GPU is present, else "cpu" (rsl_rl's default is always cuda:0)
    cpu_num_envs: int | None = None
    """Envs of a CPU run whose command names no count (None: the task's ``cpu_num_envs``). On the CPU SAC's update,
    not the physics, bounds an iteration, so fewer envs buy more gradient steps per env step and per minute."""
    actor: Any = SACActorCfg()
    critic: Any = SACCriticCfg()
    algorithm: Any = SACAlgorithmCfg()


MIRROR = "redline_tasks.velocity.mdp.symmetry:left_right"
"""The flat legged tasks' left-right mirror (:func:`redline_tasks.velocity.mdp.symmetry.left_right`), by name as
rsl_rl resolves ``data_augmentation_func`` strings."""


@configclass
class LeggedSACRunnerCfg(SACRunnerCfg):
    """The legged tasks' CPU recipe (Go1 flat, G1 flat; docs/offpolicy.md): 256 envs, one process on 2 cores
    (:data:`redline.commands.launch.MIN_ENVS_PER_RANK`), 8 gradient steps per env step on minibatches of 512 stored
    transitions and their left-right mirror images (:data:`MIRROR`, FastSAC's symmetry augmentation): 1024 samples
    per gradient step, each stored transition drawn ~16 times (the learner's default at the tasks' 1024 envs: ~2).
    The deployed policy is a running average of the actor over ~200 iterations (``policy_average``): the G1's last
    checkpoint stood at 95-99 % time-outs with it on 5 of 5 seeds, the same runs' actor at 71-91 %
    (docs/offpolicy.md)."""

    cpu_num_envs = 256
    algorithm: Any = SACAlgorithmCfg(
        updates_per_step=8,  # 32 gradient steps per iteration
        batch_size=512,  # stored transitions per gradient step, each also mirrored
        symmetry_cfg=RslRlSymmetryCfg(use_data_augmentation=True, data_augmentation_func=MIRROR),
        policy_average=0.005,  # per iteration: ~200 iterations, ~5 min of the G1 on an EPYC, ~3 on an AMX Xeon
    )
