"""``physics=mujoco_cpu`` for every registered Isaac Lab task: Isaac Lab's stock tasks, a user's, redline's.

Isaac Lab builds a task's env config from the ``env_cfg_entry_point`` of its gym registration. For every task
registered without one of redline's own ids, that entry is moved to ``redline_env_cfg_entry_point`` and replaced by
``redline.physics.any_task:<task id>``, which loads the original (with Isaac Lab's own loader) and offers
``mujoco_cpu`` beside ``newton_mjwarp`` in every preset group (:func:`redline.physics.offer.offer_mujoco_cpu`).
Defaults are untouched, so a task behaves as before unless ``physics=mujoco_cpu`` is asked for. The rsl_rl agent
entry is rewritten the same way (redline's tasks too) for one reason: on a machine without CUDA the agent's device
becomes ``cpu``, so ``isaaclab train ... --device cpu physics=mujoco_cpu`` needs no ``agent.device=cpu``.

:func:`install` runs when Isaac Lab loads redline through the ``isaaclab.tasks`` entry point (``isaaclab train``,
``play``, ``list_envs``) and whenever redline reads the registry. It rewrites the tasks registered so far and,
through a post-import hook, those that Isaac Lab's task package and the other ``isaaclab.tasks`` entry points
register when they are imported later. No installed file is changed.
"""

from __future__ import annotations

import functools
import importlib.metadata
from typing import Any

from redline.device import runnable_here

from .after_import import after_import

ENV_CFG_KEY = "env_cfg_entry_point"
"""Isaac Lab's registry key of a task's env config."""
AGENT_CFG_KEY = "rsl_rl_cfg_entry_point"
"""Isaac Lab's registry key of a task's rsl_rl agent config (redline's learner reads it too)."""
ORIGINAL_PREFIX = "redline_"
"""A rewritten entry's original is kept under this prefix plus its key (``redline_env_cfg_entry_point``)."""
ORIGINAL_KEY = ORIGINAL_PREFIX + ENV_CFG_KEY
"""Where the task's own env config entry point is kept."""
AGENT_SEPARATOR = "@"
"""Separates a task id from the agent key in a rewritten agent entry (gym ids never hold it)."""
SKIP_PREFIX = "Redline-"
"""redline's own tasks offer ``mujoco_cpu`` in their configs (and choose it on the CPU): their env entries stay."""
TASK_PACKAGES = ("isaaclab_tasks", "isaaclab_tasks_experimental")
"""Isaac Lab's task packages: importing one registers its tasks."""
ENTRY_POINT_GROUP = "isaaclab.tasks"
"""The entry-point group through which Isaac Lab's CLI imports downstream task packages."""


def offer_on_registered_tasks() -> int:
    """Point every registered task's env config entry at :func:`load_env_cfg` and its rsl_rl agent entry at
    :func:`load_agent_cfg`; returns how many entries were changed (entries done before, redline's own env entries,
    YAML configs and ids with ``:`` are left as they are)."""
    # heavy: gymnasium (~0.3 s), not before the CLI has parsed
    import gymnasium as gym

    changed = 0
    for task_id, spec in list(gym.registry.items()):
        if ":" in task_id:
            continue
        keys = (AGENT_CFG_KEY,) if task_id.startswith(SKIP_PREFIX) else (ENV_CFG_KEY, AGENT_CFG_KEY)
        for key in keys:
            entry = spec.kwargs.get(key)
            if entry is None or ORIGINAL_PREFIX + key in spec.kwargs:
                continue
            if isinstance(entry, str) and entry.endswith(".yaml"):
                continue  # a plain dict config: no preset groups, no device field
            spec.kwargs[ORIGINAL_PREFIX + key] = entry
            name = task_id if key == ENV_CFG_KEY else f"{task_id}{AGENT_SEPARATOR}{key}"
            spec.kwargs[key] = f"{__name__}:{name}"
            changed += 1
    return changed


def load_env_cfg(task_id: str) -> Any:
    """The env config of ``task_id`` from its original entry point, with ``mujoco_cpu`` offered."""
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab_tasks.utils.parse_cfg import load_cfg_from_registry

    # heavy: Isaac Lab (the offer builds its physics configs)
    from .offer import offer_mujoco_cpu

    return offer_mujoco_cpu(load_cfg_from_registry(task_id, ORIGINAL_KEY))


def load_agent_cfg(task_id: str, key: str) -> Any:
    """The agent config of ``task_id`` from its original entry point; on a machine without CUDA its ``device``
    (rsl_rl's default ``cuda:0``, which cannot run there) becomes ``cpu``, so ``--device cpu`` alone trains."""
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab_tasks.utils.parse_cfg import load_cfg_from_registry

    cfg = load_cfg_from_registry(task_id, ORIGINAL_PREFIX + key)
    device = getattr(cfg, "device", None)
    if isinstance(device, str):
        cfg.device = runnable_here(device)
    return cfg


def __getattr__(name: str) -> Any:
    """``redline.physics.any_task:<task id>`` (env) or ``:<task id>@<key>`` (agent), the entries
    :func:`offer_on_registered_tasks` writes: a callable Isaac Lab calls to build that config."""
    # heavy: gymnasium (~0.3 s), not before the CLI has parsed
    import gymnasium as gym

    task_id, _, key = name.partition(AGENT_SEPARATOR)
    key = key or ENV_CFG_KEY
    spec = None if name.startswith("__") else gym.registry.get(task_id)
    if spec is None or ORIGINAL_PREFIX + key not in spec.kwargs:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if key == ENV_CFG_KEY:
        return functools.partial(load_env_cfg, task_id)
    return functools.partial(load_agent_cfg, task_id, key)


def install() -> None:
    """Offer ``mujoco_cpu`` on the tasks registered now and on those registered by task packages imported later."""
    offer_on_registered_tasks()
    after_import(_task_modules(), _on_import)


def _on_import(_module: str) -> None:
    offer_on_registered_tasks()


@functools.cache
def _task_modules() -> tuple[str, ...]:
    """Isaac Lab's task packages and the modules of every ``isaaclab.tasks`` entry point (read once)."""
    modules = {entry.module for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    return (*TASK_PACKAGES, *sorted(modules))
