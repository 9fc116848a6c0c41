"""What ``physics=mujoco_cpu`` cannot run, found in a resolved env config before the simulator starts.

MuJoCo's C step returns the state, joint wrenches and net contact forces per body (:mod:`redline.physics.mujoco_cpu`),
so a task is refused, in one line naming the field, when it needs:

- a CUDA device (the worlds live in host memory);
- an IMU or PVA sensor (body accelerations, ``body_qdd``, are not returned);
- a contact sensor filtered by counterpart (``filter_prim_paths_expr``: per-pair forces are not returned);
- a terrain other than a plane or a generated terrain collided with as a heightfield (every sub-terrain's
  ``convert_to_heightfield`` set: Newton then hands MuJoCo an ``hfield``): MuJoCo collides with a mesh as with its
  convex hull, and Newton's collision pipeline, which MuJoCo-Warp can use for meshes, does not feed the C step.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from redline.errors import UserError

from .mujoco_cpu_cfg import PRESET_NAME, MuJoCoCPUSolverCfg


def uses_mujoco_cpu(env_cfg: Any) -> bool:
    """Whether the resolved ``env_cfg`` steps its physics with MuJoCo's C engine."""
    physics = getattr(getattr(env_cfg, "sim", None), "physics", None)
    return isinstance(getattr(physics, "solver_cfg", None), MuJoCoCPUSolverCfg)


def check_supported(env_cfg: Any, device: str) -> None:
    """A one-line :class:`UserError` naming the first thing ``env_cfg`` needs that ``mujoco_cpu`` lacks (nothing
    when another physics is chosen)."""
    if not uses_mujoco_cpu(env_cfg):
        return
    if device != "cpu":
        raise UserError(f"physics={PRESET_NAME}: runs on the CPU only (device {device}; valid: --device cpu)")
    problem = next(unsupported(env_cfg), None)
    if problem is not None:
        raise UserError(f"physics={PRESET_NAME}: {problem} (valid: physics=newton_mjwarp)")


def unsupported(env_cfg: Any) -> Iterator[str]:
    """Each part of ``env_cfg`` that ``mujoco_cpu`` cannot simulate, in words with its override path."""
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab.sensors import ContactSensorCfg, ImuCfg, PvaCfg
    from isaaclab.terrains import TerrainImporterCfg

    for path, node in _walk(env_cfg, "env", set()):
        if isinstance(node, ImuCfg | PvaCfg):
            yield f"{path} is an {type(node).__name__.removesuffix('Cfg')} sensor: body accelerations are not returned"
        elif isinstance(node, ContactSensorCfg) and node.filter_prim_paths_expr:
            yield f"{path}.filter_prim_paths_expr is set: per-counterpart contact forces are not returned"
        elif isinstance(node, TerrainImporterCfg) and not _heightfield_or_plane(node):
            yield _terrain_problem(path, node)


def _heightfield_or_plane(terrain: Any) -> bool:
    """Whether MuJoCo-C sees ``terrain`` as Newton does: a plane, or a generated terrain made a heightfield."""
    if terrain.terrain_type == "plane":
        return True
    generator = terrain.terrain_generator
    subs = getattr(generator, "sub_terrains", None) or {}
    return terrain.terrain_type == "generator" and bool(subs) and all(s.convert_to_heightfield for s in subs.values())


def _terrain_problem(path: str, terrain: Any) -> str:
    if terrain.terrain_type != "generator" or terrain.terrain_generator is None:
        return f"{path}.terrain_type is '{terrain.terrain_type}': only a plane or a generated heightfield is supported"
    meshes = sorted(k for k, s in terrain.terrain_generator.sub_terrains.items() if not s.convert_to_heightfield)
    names = ", ".join(meshes) or "(none)"
    return (
        f"{path}.terrain_generator.sub_terrains {names}: convert_to_heightfield is False "
        "(MuJoCo would collide with a mesh's convex hull; set it True)"
    )


def _walk(node: Any, path: str, seen: set[int]) -> Iterator[tuple[str, Any]]:
    if id(node) in seen:
        return
    seen.add(id(node))
    yield path, node
    if isinstance(node, Mapping):
        items: Any = node.items()
    elif hasattr(node, "__dataclass_fields__"):
        items = ((k, v) for k, v in vars(node).items() if not k.startswith("_"))
    else:
        return
    for key, child in items:
        if child is not None and (isinstance(child, Mapping) or hasattr(child, "__dataclass_fields__")):
            yield from _walk(child, f"{path}.{key}", seen)
