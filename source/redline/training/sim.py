"""Creating an Isaac Lab environment kit-less (or with Kit when the config needs it) and closing it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from redline.errors import UserError


@contextmanager
def isaaclab_env(task: str, env_cfg: Any, device: str) -> Iterator[Any]:
    """Launch the simulation runtime that ``env_cfg`` needs on ``device``, build the env, close it after.

    Newton physics needs no Isaac Sim (kit-less); a PhysX preset starts Kit, as Isaac Lab's scripts do.
    ``env_cfg.sim.device`` is set here, so Isaac Lab's launcher cannot fall back to its ``cuda:0`` default.
    A :class:`UserError` raised while building the env or in the block leaves it as it is (one line, no traceback
    from the launcher).
    """
    import gymnasium as gym
    from isaaclab.app import launch_simulation

    env_cfg.sim.device = device
    user_error: UserError | None = None
    with launch_simulation(env_cfg, {"device": device}):
        try:
            env = gym.make(task, cfg=env_cfg)
            try:
                yield env
            finally:
                env.close()
        except UserError as exc:  # re-raised below: Isaac Lab's launcher prints a traceback for what it sees
            user_error = exc
    if user_error is not None:
        raise user_error
