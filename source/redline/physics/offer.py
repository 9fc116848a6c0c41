"""Offer ``physics=mujoco_cpu`` in any task config: every preset group with a ``newton_mjwarp`` choice gets a
``mujoco_cpu`` one.

The physics group's ``mujoco_cpu`` is :func:`~redline.physics.mujoco_cpu_cfg.mujoco_cpu_preset` of its
``newton_mjwarp`` config (same solver options, dt, substeps; MuJoCo's C engine). Any other group keyed by
``newton_mjwarp`` (an armature, a sensor variant chosen for MuJoCo-Warp) gets the same value under ``mujoco_cpu``, so
the two presets build the same scene. Nothing else changes: the groups' defaults stay as they are.

Imports Isaac Lab's task utilities when called (they register every stock task: seconds), never at import.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from .mujoco_cpu_cfg import PRESET_NAME, MuJoCoCPUSolverCfg, mujoco_cpu_preset

MJWARP = "newton_mjwarp"
"""The preset whose twin ``mujoco_cpu`` is."""


def offer_mujoco_cpu(cfg: Any) -> Any:
    """``cfg`` with a ``mujoco_cpu`` choice in every preset group that offers ``newton_mjwarp`` (at any depth,
    inside other groups' choices too). Groups are replaced by copies, never edited: their choices may be shared
    class-level objects. Returns ``cfg`` itself unless ``cfg`` is a preset group; a second call changes nothing."""
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab_tasks.utils import PresetCfg

    return _offer(cfg, PresetCfg, set())


def with_mujoco_cpu(physics: Any) -> Any:
    """A task's physics preset group with one more choice, ``mujoco_cpu`` (see :func:`offer_mujoco_cpu`); the
    group itself when it is already resolved (a copy of a resolved config runs ``__post_init__`` again)."""
    return offer_mujoco_cpu(physics)


def preset_options(group: Any) -> dict[str, Any]:
    """A preset group's choices as Isaac Lab resolves them: class-level values over instance values (robot modules
    reassign choices on the class), plus plain class attributes that are not fields."""
    cls = type(group)
    options = {}
    for name in group.__dataclass_fields__:
        value = getattr(cls, name, None)
        options[name] = value if value is not None else getattr(group, name)
    for name, value in vars(cls).items():
        if not name.startswith("_") and name not in options and not callable(value):
            options[name] = value
    return options


def mujoco_cpu_twin(value: Any) -> Any:
    """The ``mujoco_cpu`` choice beside a ``newton_mjwarp`` one: the MuJoCo-C physics for a MuJoCo-Warp
    ``NewtonCfg`` (or a ``SimulationCfg`` holding one), a copy of anything else; None for another physics engine."""
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab.physics import PhysicsCfg
    from isaaclab.sim import SimulationCfg
    from isaaclab_newton.physics import MJWarpSolverCfg, NewtonCfg

    def twin_physics(physics: Any) -> Any:
        solver = getattr(physics, "solver_cfg", None)
        if isinstance(physics, NewtonCfg) and isinstance(solver, MJWarpSolverCfg):
            return physics if isinstance(solver, MuJoCoCPUSolverCfg) else mujoco_cpu_preset(physics)
        return None

    if isinstance(value, SimulationCfg) and isinstance(value.physics, PhysicsCfg):
        physics = twin_physics(value.physics)
        if physics is None:
            return None
        sim = copy.deepcopy(value)
        sim.physics = physics
        return sim
    if isinstance(value, PhysicsCfg):
        return twin_physics(value)
    return copy.deepcopy(value)


def _offer(node: Any, preset_type: type, seen: set[int]) -> Any:
    if isinstance(node, preset_type):
        if not _needs(node, preset_type, set()):
            return node
        options = {name: _offer(copy.deepcopy(v), preset_type, set()) for name, v in preset_options(node).items()}
        twin = mujoco_cpu_twin(options[MJWARP]) if MJWARP in options and PRESET_NAME not in options else None
        if twin is not None:
            options[PRESET_NAME] = twin
        return _group_like(node, options)
    if id(node) in seen:
        return node
    seen.add(id(node))
    for key, child in list(_children(node)):
        new = _offer(child, preset_type, seen)
        if new is not child:
            if isinstance(node, MutableMapping | list):
                node[key] = new
            else:
                setattr(node, key, new)
    return node


def _needs(node: Any, preset_type: type, seen: set[int]) -> bool:
    """Whether a group at or below ``node`` offers ``newton_mjwarp`` and lacks a ``mujoco_cpu`` twin."""
    if id(node) in seen:
        return False
    seen.add(id(node))
    if isinstance(node, preset_type):
        options = preset_options(node)
        if MJWARP in options and PRESET_NAME not in options and mujoco_cpu_twin(options[MJWARP]) is not None:
            return True
        return any(_needs(value, preset_type, seen) for value in options.values())
    return any(_needs(child, preset_type, seen) for _, child in _children(node))


def _children(node: Any) -> Iterator[tuple[Any, Any]]:
    """The walkable children of a config node, as Isaac Lab's preset resolver walks them."""
    if isinstance(node, Mapping):
        yield from node.items()
    elif isinstance(node, list):
        yield from enumerate(node)
    elif hasattr(node, "__dataclass_fields__"):
        for key, value in vars(node).items():
            if not key.startswith("_") and value is not None:
                yield key, value


def _group_like(group: Any, options: dict[str, Any]) -> Any:
    """A new preset group of ``group``'s class (a subclass, same name) whose choices are exactly ``options``."""
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab.utils import configclass

    cls = type(group)
    annotations = {name: type(value) if value is not None else object for name, value in options.items()}
    namespace = {"__annotations__": annotations, "__module__": cls.__module__, "__qualname__": cls.__qualname__}
    return configclass(type(cls.__name__, (cls,), {**namespace, **options}))()
