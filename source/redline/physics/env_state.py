"""An Isaac Lab env's state between two steps, for a checkpoint: its buffers, managers, sensors and simulator.

:func:`gather_env_state` takes, per env (rows in local env order; the runner adds the global ids):

- ``sim``: the simulator's state (:func:`redline.physics.sim_state.gather_sim_state`);
- ``env``: the env's buffers (episode lengths, which hold rsl_rl's random initial offsets, the done flags; the same
  names on ``DirectRLEnv`` and ``ManagerBasedRLEnv``), the task's own buffers it names in ``run_state_buffers``
  (e.g. the last actions) and the last observation ``obs_buf`` (what the runner's next rollout starts from);
- ``managers``: a manager-based env's managers, walked generically (:func:`gather_walked`): every tensor and number
  of each manager, of its class-based terms (command terms: commands, resampling timers, redline's seeded command's
  flags; action terms: raw and processed actions; event terms such as redline's push timers), its term configs
  (weights a curriculum changes), observation history buffers, noise models and modifiers: the command manager's
  commands and timers, the event manager's interval timers, the action manager's last actions, the observation
  manager's last output, the reward manager's episode sums, the termination manager's buffers, the curriculum's
  state;
- ``scene``: every sensor and its data (contact sensors' forces, force history, air and contact times, timestamps,
  and the Newton sensor output they read lazily) and the terrain importer's (curriculum levels, env origins);
- ``extras_log``: ``extras["log"]``, the last resets' metrics, which every step reports again until the next reset;
- the step counters and the physics clock.

Redline's task mixin exposes it as ``env_state()`` / ``load_env_state()`` for the tasks that set
``run_state_buffers`` (Redline-Cartpole, the velocity tasks); the runner (:mod:`redline.seeding.run_state`) calls
those.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from redline.physics.sim_state import gather_sim_state, restore_sim_state

DIRECT_ENV_BUFFERS = ("episode_length_buf", "reset_buf", "reset_terminated", "reset_time_outs")
"""Per-env buffers every Isaac Lab ``DirectRLEnv`` carries from one step to the next."""
DIRECT_ENV_COUNTERS = ("common_step_counter", "_sim_step_counter")
"""Step counters of a ``DirectRLEnv`` (interval events and rendering read them)."""


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    return value


MANAGER_SKIP = frozenset({"_env", "cfg", "_debug_vis_handle", "_resolve_terms_handle"})
"""Attributes the walk of a manager never enters: the env, configs (their class-based ``func`` terms are reached
through the managers' term lists), callback handles."""


def _stateful_types() -> tuple[type, ...]:
    """Isaac Lab's objects whose attributes are per-run state: managers, their (class-based) terms and term configs,
    observation history buffers, noise models and modifiers."""
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab.managers import ManagerBase, ManagerTermBase, ManagerTermBaseCfg
    from isaaclab.utils.buffers import CircularBuffer
    from isaaclab.utils.modifiers import ModifierBase
    from isaaclab.utils.noise import NoiseModel

    return (ManagerBase, ManagerTermBase, ManagerTermBaseCfg, CircularBuffer, NoiseModel, ModifierBase)


def _leaves(obj: Any, path: str, kinds: tuple[type, ...], seen: set[int]) -> Iterator[tuple[str, Any, Any, Any]]:
    """``(path, container, key, value)`` for every tensor, warp array, number or None reached from ``obj`` through
    dicts, lists, tuples and objects of ``kinds``; each object once (views keep their own path)."""
    # heavy: Warp/Newton, imported only once the simulator runs
    import warp as wp

    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, dict):
        items: Any = obj.items()
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    else:
        items = ((k, v) for k, v in vars(obj).items() if k not in MANAGER_SKIP)
    for key, value in list(items):
        where = f"{path}/{key}"
        if value is None or isinstance(value, (torch.Tensor, wp.array, bool, int, float)):
            yield where, obj, key, value
        elif isinstance(value, (dict, list, tuple, *kinds)):
            yield from _leaves(value, where, kinds, seen)


def gather_walked(roots: dict[str, Any], kinds: tuple[type, ...]) -> dict[str, Any]:
    """The tensors (warp arrays as tensors) and numbers reached from ``roots`` (see :func:`_leaves`), by path."""
    # heavy: Warp/Newton, imported only once the simulator runs
    import warp as wp

    out: dict[str, Any] = {}
    seen: set[int] = set()
    for name, root in roots.items():
        for path, _, _, value in _leaves(root, name, kinds, seen):
            if isinstance(value, wp.array):
                value = wp.to_torch(value)
            if value is not None:
                out[path] = value.detach().clone() if isinstance(value, torch.Tensor) else value
    return out


def restore_walked(roots: dict[str, Any], kinds: tuple[type, ...], state: dict[str, Any]) -> None:
    """Write :func:`gather_walked`'s ``state`` back: tensors in place where the shapes agree (views and the objects
    holding them keep their tensor), otherwise (a buffer allocated on its first use) assigned; numbers assigned.

    Raises:
        ValueError: ``state`` names a path the live objects do not have (another task).
    """
    # heavy: Warp/Newton, imported only once the simulator runs
    import warp as wp

    live: dict[str, tuple[Any, Any, Any]] = {}
    seen: set[int] = set()
    for name, root in roots.items():
        live.update({p: (c, k, v) for p, c, k, v in _leaves(root, name, kinds, seen)})
    missing = sorted(set(state) - set(live))
    if missing:
        raise ValueError(f"the saved env state does not fit this env ({', '.join(missing[:3])})")
    for path, saved in state.items():
        container, key, current = live[path]
        if isinstance(current, wp.array):
            wp.to_torch(current).copy_(saved)
        elif isinstance(current, torch.Tensor) and isinstance(saved, torch.Tensor) and current.shape == saved.shape:
            current.copy_(saved)
        elif isinstance(saved, torch.Tensor) or saved != current:
            if isinstance(container, dict | list):
                container[key] = saved
            else:
                setattr(container, key, saved)


def _manager_roots(env: Any) -> dict[str, Any]:
    """A manager-based env's managers (command, event, action, observation, reward, termination, curriculum,
    recorder: every ``*_manager`` attribute) by name; none for a direct env."""
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab.managers import ManagerBase

    return {k: v for k, v in vars(env).items() if k.endswith("_manager") and isinstance(v, ManagerBase)}


def _scene_roots(env: Any) -> dict[str, Any]:
    """The scene's objects that carry state from one step to the next outside the simulator: each sensor and its
    data (contact sensors' forces, history, air and contact times, timestamps) and the terrain (curriculum levels,
    env origins)."""
    scene = env.scene
    roots: dict[str, Any] = {}
    for name, sensor in scene.sensors.items():
        roots[f"sensor/{name}"] = sensor
        if getattr(sensor, "_data", None) is not None:
            roots[f"sensor/{name}/data"] = sensor._data
    if getattr(scene, "terrain", None) is not None:
        roots["terrain"] = scene.terrain
    return roots


def gather_env_state(env: Any, task_buffers: tuple[str, ...]) -> dict[str, Any]:
    """The state of the direct env ``env`` (unwrapped) and of its simulator; ``task_buffers``: the task's own
    per-env attributes to keep (those it does not have yet, before a first step, are left out)."""
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab.physics import PhysicsManager

    names = (*DIRECT_ENV_BUFFERS, *task_buffers)
    buffers = {name: _clone(getattr(env, name)) for name in names if hasattr(env, name)}
    buffers["obs_buf"] = _clone(dict(env.obs_buf))
    return {
        "sim": gather_sim_state(env),
        "env": buffers,
        "managers": gather_walked(_manager_roots(env), _stateful_types()),
        "scene": gather_walked(_scene_roots(env), ()),
        "extras_log": _clone(dict(env.extras.get("log", {}))),
        "counters": {name: int(getattr(env, name)) for name in DIRECT_ENV_COUNTERS},
        "sim_time": float(PhysicsManager._sim_time),
    }


def restore_env_state(env: Any, state: dict[str, Any]) -> None:
    """Write :func:`gather_env_state`'s ``state`` back into ``env`` (same task and env count).

    Raises:
        ValueError: ``state`` does not fit this env's scene.
    """
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab.physics import PhysicsManager

    restore_sim_state(env, state["sim"])
    restore_walked(_manager_roots(env), _stateful_types(), state.get("managers", {}))
    restore_walked(_scene_roots(env), (), state.get("scene", {}))
    for name, value in state["env"].items():
        current = getattr(env, name, None)
        if isinstance(current, dict):
            for key, tensor in value.items():
                current[key].copy_(tensor)
        elif isinstance(current, torch.Tensor) and current.shape == value.shape:
            current.copy_(value)  # in place: the env (and views of it) keep their tensor
        else:
            setattr(env, name, value.to(env.device))  # e.g. the last actions, before the first step
    env.extras["log"] = dict(state["extras_log"])
    for name, count in state["counters"].items():
        setattr(env, name, count)
    PhysicsManager._sim_time = state["sim_time"]
