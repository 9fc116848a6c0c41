"""A direct env's state between two steps, for a checkpoint: its buffers, the last observation and the simulator's.

:func:`gather_env_state` takes, per env (rows in local env order; the runner adds the global ids):

- ``sim``: the simulator's state (:func:`redline.envs.sim_state.gather_sim_state`);
- ``env``: the ``DirectRLEnv`` buffers (episode lengths, which hold rsl_rl's random initial offsets, the done flags),
  the task's own buffers it names in ``run_state_buffers`` (e.g. the last actions) and the last observation
  ``obs_buf`` (what the runner's next rollout starts from);
- ``extras_log``: ``extras["log"]``, the last resets' metrics, which every step reports again until the next reset;
- the step counters and the physics clock.

Redline's task mixin exposes it as ``env_state()`` / ``load_env_state()`` for the tasks that set
``run_state_buffers`` (Redline-Cartpole); the runner (:mod:`redline.runners.run_state`) calls those.
"""

from __future__ import annotations

from typing import Any

import torch

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


def gather_env_state(env: Any, task_buffers: tuple[str, ...]) -> dict[str, Any]:
    """The state of the direct env ``env`` (unwrapped) and of its simulator; ``task_buffers``: the task's own
    per-env attributes to keep (those it does not have yet, before a first step, are left out)."""
    from isaaclab.physics import PhysicsManager

    from redline.envs.sim_state import gather_sim_state

    names = (*DIRECT_ENV_BUFFERS, *task_buffers)
    buffers = {name: _clone(getattr(env, name)) for name in names if hasattr(env, name)}
    buffers["obs_buf"] = _clone(dict(env.obs_buf))
    return {
        "sim": gather_sim_state(env),
        "env": buffers,
        "extras_log": _clone(dict(env.extras.get("log", {}))),
        "counters": {name: int(getattr(env, name)) for name in DIRECT_ENV_COUNTERS},
        "sim_time": float(PhysicsManager._sim_time),
    }


def restore_env_state(env: Any, state: dict[str, Any]) -> None:
    """Write :func:`gather_env_state`'s ``state`` back into ``env`` (same task and env count).

    Raises:
        ValueError: ``state`` does not fit this env's scene.
    """
    from isaaclab.physics import PhysicsManager

    from redline.envs.sim_state import restore_sim_state

    restore_sim_state(env, state["sim"])
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
