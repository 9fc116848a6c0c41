"""An Isaac Lab env's state between two steps, for a checkpoint: its buffers, managers, sensors and simulator.

:func:`gather_env_state` takes, per env (rows in local env order; the runner adds the global ids):

- ``sim``: the simulator's state (:func:`redline.run_state.sim_state.gather_sim_state`);
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
- the step counters and the physics clock;
- ``layout``: how each value above is laid out over the envs (:mod:`redline.run_state.layout`), declared by the object
  that owns it where its shape cannot tell (a contact sensor's flat ``(num_envs * sensors, 3)`` views, a time-major
  observation history, a terrain's ``(rows, cols, 3)`` origins, a startup event's indices into this process's
  model), so the state can be regrouped onto another process count.

Redline's task mixin exposes it as ``env_state()`` / ``load_env_state()`` for the tasks that set
``run_state_buffers`` (Redline-Cartpole, the velocity tasks); the runner (:mod:`redline.run_state.parts`) calls
those.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from redline.run_state import layout as lay
from redline.run_state.sim_state import check_sim_state, gather_sim_state, restore_sim_state, sim_layout
from redline.run_state.tree import clone, leaves

DIRECT_ENV_BUFFERS = ("episode_length_buf", "reset_buf", "reset_terminated", "reset_time_outs")
"""Per-env buffers every Isaac Lab ``DirectRLEnv`` carries from one step to the next."""
DIRECT_ENV_COUNTERS = ("common_step_counter", "_sim_step_counter")
"""Step counters of a ``DirectRLEnv`` (interval events and rendering read them)."""


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


MODEL_INDICES = frozenset({"_joint_child"})
"""Walked attributes that index this process's own model (topology, not state): Newton's joint wrench sensor's
``_joint_child`` (its joints' child bodies in the articulation view)."""


def declared_layout(path: str, container: Any, key: Any, value: Any, num_envs: int) -> str | None:
    """The env layout (:mod:`redline.run_state.layout`) the object holding ``value`` as ``key`` gives it, where its
    shape alone cannot tell; None: the shape's default (per env when the first axis has ``num_envs`` rows).

    - an observation history (Isaac Lab's ``CircularBuffer``): ``(max_len, num_envs, ...)``, time-major unless it
      stacks on a later axis;
    - a sensor's flat views (Newton's contact sensor reads ``(num_envs * sensors, 3)`` arrays): env-major flat;
    - a terrain's ``terrain_origins`` ``(rows, cols, 3)``: the same terrain on every rank;
    - a startup event term's state (e.g. randomised shapes' indices into this process's model) and the indices of
      :data:`MODEL_INDICES`: its own.
    """
    # the owners are told by the attributes their Isaac Lab classes hold (no import: the walk runs per checkpoint);
    # a class that changes them leaves its values unknown, which the task walk in tests/tasks finds
    if "/_mode_term_cfgs/startup/" in path or "/_mode_class_term_cfgs/startup/" in path or key in MODEL_INDICES:
        return lay.LOCAL
    if key == "_buffer" and hasattr(container, "_max_len_int"):  # isaaclab.utils.buffers.CircularBuffer
        return lay.axis(1) if getattr(container, "_stack_dim_internal", None) is None else lay.ENV
    if key == "terrain_origins":  # isaaclab.terrains.TerrainImporter
        return lay.SHARED
    sensors = getattr(container, "_num_sensors", None)  # isaaclab_newton's ContactSensor (a SensorBase)
    shape: tuple[int, ...] = tuple(getattr(value, "shape", ()))
    if isinstance(sensors, int) and sensors > 1 and shape and shape[0] == num_envs * sensors:
        return lay.flat(sensors)
    return None


def gather_walked(roots: dict[str, Any], kinds: tuple[type, ...], num_envs: int = 0) -> tuple[dict, dict]:
    """The tensors (warp arrays as tensors) and numbers reached from ``roots`` (see :func:`_leaves`), by path, and
    the env layouts their owners declare (:func:`declared_layout`) for ``num_envs`` envs."""
    # heavy: Warp/Newton, imported only once the simulator runs
    import warp as wp

    out: dict[str, Any] = {}
    layouts: dict[str, str] = {}
    seen: set[int] = set()
    for name, root in roots.items():
        for path, container, key, value in _leaves(root, name, kinds, seen):
            if isinstance(value, wp.array):
                value = wp.to_torch(value)
            if value is not None:
                out[path] = value.detach().clone() if isinstance(value, torch.Tensor) else value
                declared = declared_layout(path, container, key, value, num_envs)
                if declared is not None:
                    layouts[path] = declared
    return out, layouts


class StateMismatch(ValueError):
    """A saved env state that does not fit the live env (another task or scene): nothing of it was written."""


def _live_leaves(roots: dict[str, Any], kinds: tuple[type, ...]) -> dict[str, tuple[Any, Any, Any]]:
    live: dict[str, tuple[Any, Any, Any]] = {}
    seen: set[int] = set()
    for name, root in roots.items():
        live.update({p: (c, k, v) for p, c, k, v in _leaves(root, name, kinds, seen)})
    return live


def check_walked(roots: dict[str, Any], kinds: tuple[type, ...], state: dict[str, Any]) -> None:
    """Raise :class:`StateMismatch` when :func:`gather_walked`'s ``state`` names a path the live objects lack, or
    the live objects hold a value (not None) at a path ``state`` lacks: either would leave a part of the env fresh
    beside restored parts."""
    live = _live_leaves(roots, kinds)
    missing = sorted(set(state) - set(live))
    extra = sorted(p for p, (_, _, v) in live.items() if v is not None and p not in state)
    if missing:
        raise StateMismatch(f"it holds {', '.join(missing[:3])}, which this env lacks")
    if extra:
        raise StateMismatch(f"this env holds {', '.join(extra[:3])}, which it lacks")


def restore_walked(roots: dict[str, Any], kinds: tuple[type, ...], state: dict[str, Any]) -> None:
    """Write :func:`gather_walked`'s ``state`` back (check it with :func:`check_walked` first): tensors in place
    where the shapes agree (views and the objects holding them keep their tensor), otherwise (a buffer allocated on
    its first use) assigned; numbers assigned."""
    # heavy: Warp/Newton, imported only once the simulator runs
    import warp as wp

    live = _live_leaves(roots, kinds)
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
    buffers = {name: clone(getattr(env, name)) for name in names if hasattr(env, name)}
    buffers["obs_buf"] = clone(dict(env.obs_buf))
    n = int(env.num_envs)
    managers, manager_layout = gather_walked(_manager_roots(env), _stateful_types(), n)
    scene, scene_layout = gather_walked(_scene_roots(env), (), n)
    sim = gather_sim_state(env)
    declared = {f"sim/{k}": v for k, v in sim_layout(sim).items()}
    declared.update({f"managers/{k}": v for k, v in manager_layout.items()})
    declared.update({f"scene/{k}": v for k, v in scene_layout.items()})
    declared.update({f"extras_log/{k}": lay.SHARED for k, _ in leaves(env.extras.get("log", {}))})
    return {
        "sim": sim,
        "env": buffers,
        "managers": managers,
        "scene": scene,
        "extras_log": clone(dict(env.extras.get("log", {}))),
        "counters": {name: int(getattr(env, name)) for name in DIRECT_ENV_COUNTERS},
        "sim_time": float(PhysicsManager._sim_time),
        "layout": declared,
    }


def restore_env_state(env: Any, state: dict[str, Any]) -> None:
    """Write :func:`gather_env_state`'s ``state`` back into ``env`` (same task and env count).

    Raises:
        StateMismatch: ``state`` does not fit this env's scene (nothing was written).
    """
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab.physics import PhysicsManager

    try:
        check_sim_state(env, state["sim"])
    except ValueError as exc:
        raise StateMismatch(str(exc)) from exc
    check_walked(_manager_roots(env), _stateful_types(), state.get("managers", {}))
    check_walked(_scene_roots(env), (), state.get("scene", {}))
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
