"""Creating an Isaac Lab environment kit-less (or with Kit when the config needs it) and closing it."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from redline.errors import ExpectedExit
from redline.physics.mujoco_cpu_telemetry import bind_actuator_telemetry


@contextmanager
def isaaclab_env(task: str, env_cfg: Any, device: str | None = None, visualizer: str | None = None) -> Iterator[Any]:
    """Launch the simulation runtime that ``env_cfg`` needs on ``device``, build the env, close it after.

    ``visualizer`` is one of Isaac Lab's visualizer types (``newton_gl``, ``kit``, ...) to open, or None (headless).

    Newton physics needs no Isaac Sim (kit-less); a PhysX preset starts Kit, as Isaac Lab's scripts do.
    ``device`` (None: ``env_cfg.sim.device``, as :func:`redline.envs.prepare.prepare_env` sets it) is passed to the
    launcher too, so it cannot fall back to its ``cuda:0`` default; a ``device`` that differs from the config's is
    applied to a copy (the caller's config is never written to).
    An :class:`~redline.errors.ExpectedExit` (bad input, a stop on SIGTERM) raised while building the env or in the
    block leaves it as it is (one line, no traceback from the launcher).
    """
    # heavy: Isaac Lab, imported only once the simulator is needed
    import gymnasium as gym
    from isaaclab.app import launch_simulation

    if device is None:
        device = env_cfg.sim.device
    elif env_cfg.sim.device != device:
        env_cfg = copy.deepcopy(env_cfg)  # not cfg.copy(): that re-runs __post_init__ (a -Play twin resets its envs)
        env_cfg.sim.device = device
    expected: ExpectedExit | None = None
    launcher_args: dict[str, Any] = {"device": device}
    if visualizer is not None:
        launcher_args["visualizer"] = [visualizer]
    with launch_simulation(env_cfg, launcher_args):
        try:
            env = gym.make(task, cfg=env_cfg)
            bind_actuator_telemetry(env.unwrapped)  # any task's, on physics=mujoco_cpu
            try:
                yield env
            finally:
                env.close()
        except ExpectedExit as exc:  # re-raised below: Isaac Lab's launcher prints a traceback for what it sees
            expected = exc
    if expected is not None:
        raise expected
