"""Range checks of a task's numeric settings, run on the final configs before the simulator starts.

The env's settings are checked here; the agent's (and the rollout's shape) in :mod:`redline.learning.limits`, which
the drop-in class runs inside stock Isaac Lab scripts too. Each field is checked for its kind, finiteness and range,
whether the value came from an override or from the task itself; any other float an override sets must at least be
finite.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import Any

from redline.errors import UserError
from redline.learning.limits import check_agent
from redline.validation import COUNT, MISSING, POSITIVE, SEED, Range, check_ranges, get_path

ENV_RANGES: dict[str, Range] = {
    "env.scene.num_envs": COUNT,
    "env.sim.dt": POSITIVE,  # [s]
    "env.decimation": COUNT,
    "env.episode_length_s": POSITIVE,  # [s]
    "env.seed": dataclasses.replace(SEED, optional=True),
    "env.sim.physics.solver_cfg.nthread": Range(integer=True, low=1, optional=True),  # physics=mujoco_cpu threads
}
"""The checked env settings, by their override names."""


def check_settings(env_cfg: Any, agent_cfg: Any, overrides: Iterable[str] = ()) -> None:
    """Raise a one-line :class:`UserError` naming the first setting out of range.

    Args:
        env_cfg: the env config (overrides and command options applied).
        agent_cfg: the rsl_rl agent config.
        overrides: the ``env.``/``agent.`` override tokens: any float one of them set must be finite.
    """
    roots = {"env": env_cfg, "agent": agent_cfg}
    check_ranges(roots, ENV_RANGES)
    check_agent(agent_cfg)
    for token in overrides:
        key = token.partition("=")[0]
        root, _, path = key.partition(".")
        if root not in roots:
            continue
        value = get_path(roots[root], path)
        if value is not MISSING and isinstance(value, float) and not math.isfinite(value):
            raise UserError(f"{key}: must be a finite number, got {value!r}")
