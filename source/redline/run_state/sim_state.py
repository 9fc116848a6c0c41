"""The simulator's state of a Newton-backed Isaac Lab env, per world, for a checkpoint: what the next step reads.

Three parts, each taken as it is between two env steps and written back bit for bit:

- Newton's ``State`` (both buffers, ``state_0`` and ``state_1``: the manager may swap them) and ``Control`` arrays,
  split by world with the model's ``*_world_start`` offsets: ``(num_worlds, per_world, ...)`` rows plus the global
  entities' rows (``global/...``);
- the MuJoCo data that the solver carries from one step to the next (``mjw_data``: ``time``, ``qpos``, ``qvel``,
  ``act``, ``qacc_warmstart``, the applied forces and controls, mocap), one row per world;
- each articulation's cached data (Isaac Lab's ``TimestampedBuffer`` values and timestamps, the previous velocities
  its finite-difference accelerations use, its simulation clock), one row per env.

Worlds must all hold the same number of bodies, joints and coordinates (replicated scenes); otherwise
:class:`UnsupportedSimState` is raised and the caller saves no simulator state.
"""

from __future__ import annotations

from typing import Any

import torch

from redline.run_state.layout import SHARED, UNKNOWN

WORLD_STARTS = {
    "body": "body_world_start",
    "joint_q": "joint_coord_world_start",
    "joint_qd": "joint_dof_world_start",
    "joint_f": "joint_dof_world_start",
    "joint_target_q": "joint_dof_world_start",
    "joint_target_qd": "joint_dof_world_start",
    "joint_act": "joint_dof_world_start",
    "particle": "particle_world_start",
}
"""The ``Model`` offsets that split each ``State``/``Control`` array by world (``body_*``/``particle_*`` by prefix)."""

MJ_DATA_FIELDS = (
    "time",
    "qpos",
    "qvel",
    "act",
    "qacc_warmstart",
    "ctrl",
    "qfrc_applied",
    "xfrc_applied",
    "mocap_pos",
    "mocap_quat",
    "eq_active",
)
"""MuJoCo data a step carries to the next (``mjData``'s full physics state plus its inputs), one row per world."""


class UnsupportedSimState(Exception):
    """The env's simulator state cannot be saved by world (not Newton, or worlds of different sizes)."""


def _backend() -> Any:
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab_newton.physics import NewtonManager

    backend = getattr(NewtonManager, "backend", None)
    if backend is None or backend.state_0 is None:
        raise UnsupportedSimState("the simulator is not Newton")
    return NewtonManager, backend


def _world_split(model: Any, name: str, num_worlds: int, length: int) -> tuple[int, int, str] | None:
    """``(per_world, global_start, rest)`` of array ``name``'s ``length`` rows, ``rest`` the key prefix of the rows
    after the worlds'; None when no offsets describe it.

    The offsets named for it in :data:`WORLD_STARTS` where their total is ``length``, else the first others whose
    total is (``joint_target_q`` is coordinate-sized or DOF-sized depending on how the model was built): the rows
    after the worlds' are then the global entities' (``global``, the same on every rank). Where no offsets total
    ``length``, the named ones split it and the rest is ``rest`` (its layout over the envs unknown: such a state is
    restored onto its own process count only)."""
    key = WORLD_STARTS.get(name) or next((v for k, v in WORLD_STARTS.items() if name.startswith(f"{k}_")), None)
    if key is None or getattr(model, key, None) is None:
        return None
    fits = [c for c in dict.fromkeys((key, *WORLD_STARTS.values())) if _total(model, c) == length]
    chosen = fits[0] if fits else key
    s = getattr(model, chosen).numpy()
    per_world = int(s[1] - s[0]) if num_worlds > 1 else int(s[-2] - s[0])
    if int(s[0]) != 0 or any(int(s[w]) != w * per_world for w in range(num_worlds + 1)):
        raise UnsupportedSimState(f"{name}: worlds of different sizes ({chosen})")
    return per_world, int(s[-2]), "global" if fits else "rest"


def _total(model: Any, key: str) -> int | None:
    starts = getattr(model, key, None)
    return None if starts is None else int(starts.numpy()[-1])


def _arrays(obj: Any) -> dict[str, Any]:
    # heavy: Warp/Newton, imported only once the simulator runs
    import warp as wp

    return {k: v for k, v in vars(obj).items() if isinstance(v, wp.array) and v.size}


def _by_world(prefix: str, obj: Any, model: Any, num_worlds: int) -> dict[str, torch.Tensor]:
    # heavy: Warp/Newton, imported only once the simulator runs
    import warp as wp

    out: dict[str, torch.Tensor] = {}
    for name, array in _arrays(obj).items():
        split = _world_split(model, name, num_worlds, array.shape[0])
        if split is None:
            continue
        per_world, global_start, rest = split
        values = wp.to_torch(array).detach().clone()
        out[f"{prefix}/{name}"] = values[:global_start].reshape(num_worlds, per_world, *values.shape[1:])
        if global_start < values.shape[0]:
            out[f"{rest}/{prefix}/{name}"] = values[global_start:]
    return out


def _cached(data: Any) -> dict[str, tuple[Any, Any]]:
    """An articulation data object's cached buffers: name -> (warp array, its ``TimestampedBuffer`` or None for the
    previous velocities that its finite differences read)."""
    # heavy: Isaac Lab, imported only once the simulator is needed
    import warp as wp
    from isaaclab.utils.buffers import TimestampedBuffer

    found: dict[str, tuple[Any, Any]] = {}
    for name, value in vars(data).items():
        buffer = value if isinstance(value, TimestampedBuffer) else None
        array = value.data if buffer is not None else value if name.startswith("_previous_") else None
        if isinstance(array, wp.array):
            found[name] = (array, buffer)
    return found


def _assets(env: Any) -> dict[str, Any]:
    scene = env.scene
    return {name: scene[name] for name in scene.articulations}


def gather_sim_state(env: Any) -> dict[str, Any]:
    """The simulator state of ``env`` (an unwrapped Isaac Lab env on Newton), rows by world = local env index.

    Raises:
        UnsupportedSimState: not Newton, or worlds of different sizes.
    """
    # heavy: Warp/Newton, imported only once the simulator runs
    import warp as wp

    manager, backend = _backend()
    model, n = backend.model, env.num_envs
    if int(model.world_count) != n:
        raise UnsupportedSimState(f"{model.world_count} Newton worlds for {n} envs")
    state: dict[str, Any] = {}
    for prefix, obj in (("state_0", backend.state_0), ("state_1", backend.state_1), ("control", backend.control)):
        if obj is not None:
            state.update(_by_world(prefix, obj, model, n))
    data = getattr(manager._solver, "mjw_data", None)
    for name in MJ_DATA_FIELDS if data is not None else ():
        array = getattr(data, name, None)
        if isinstance(array, wp.array) and array.shape[0] == n:
            state[f"mjw_data/{name}"] = wp.to_torch(array).detach().clone()
    for asset_name, asset in _assets(env).items():
        state[f"asset/{asset_name}/_sim_timestamp"] = float(asset.data._sim_timestamp)
        for name, (array, buffer) in _cached(asset.data).items():
            state[f"asset/{asset_name}/{name}"] = wp.to_torch(array).detach().clone()
            if buffer is not None:
                state[f"asset/{asset_name}/{name}.timestamp"] = float(buffer.timestamp)
    return state


def sim_layout(state: dict[str, Any]) -> dict[str, str]:
    """The env layout of :func:`gather_sim_state`'s values that their shape cannot tell: the global entities' rows
    (``global/...``) are the same on every rank, rows no world offsets describe (``rest/...``) unknown (rows by
    world, asset buffers and MuJoCo data lead with the env)."""
    return {
        key: SHARED if key.startswith("global/") else UNKNOWN for key in state if key.startswith(("global/", "rest/"))
    }


def check_sim_state(env: Any, state: dict[str, Any]) -> None:
    """Raise ValueError when ``state`` does not fit ``env``'s simulator (another task, another env count).

    Raises:
        ValueError: other keys or shapes than the live simulator's.
    """
    current = gather_sim_state(env)  # the same keys and shapes, or the checkpoint is for another scene
    if {k: _shape(v) for k, v in current.items()} != {k: _shape(v) for k, v in state.items()}:
        diff = sorted(set(current) ^ set(state)) or [k for k in current if _shape(current[k]) != _shape(state[k])]
        raise ValueError(f"the saved simulator state does not fit this scene ({', '.join(diff[:3])})")


def restore_sim_state(env: Any, state: dict[str, Any]) -> None:
    """Write :func:`gather_sim_state`'s ``state`` back into ``env``'s simulator (check it with
    :func:`check_sim_state` first: same task, same env count)."""
    # heavy: Warp/Newton, imported only once the simulator runs
    import warp as wp

    manager, backend = _backend()
    model, n = backend.model, env.num_envs
    for prefix, obj in (("state_0", backend.state_0), ("state_1", backend.state_1), ("control", backend.control)):
        for name, array in _arrays(obj).items() if obj is not None else ():
            split = _world_split(model, name, n, array.shape[0])
            if split is None:
                continue
            target = wp.to_torch(array)
            rows = state[f"{prefix}/{name}"].reshape(-1, *target.shape[1:])
            target[: split[1]].copy_(rows)
            if f"{split[2]}/{prefix}/{name}" in state:
                target[split[1] :].copy_(state[f"{split[2]}/{prefix}/{name}"])
    data = getattr(manager._solver, "mjw_data", None)
    for key, values in state.items():
        if key.startswith("mjw_data/"):
            wp.to_torch(getattr(data, key.split("/", 1)[1])).copy_(values)
    reload = getattr(manager._solver, "reload_carried_data", None)
    if reload is not None:
        reload()
    for asset_name, asset in _assets(env).items():
        asset.data._sim_timestamp = state[f"asset/{asset_name}/_sim_timestamp"]
        for name, (array, buffer) in _cached(asset.data).items():
            wp.to_torch(array).copy_(state[f"asset/{asset_name}/{name}"])
            if buffer is not None:
                buffer.timestamp = state[f"asset/{asset_name}/{name}.timestamp"]


def _shape(value: Any) -> Any:
    return tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
