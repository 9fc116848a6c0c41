"""Range checks of a task's numeric settings, run on the final configs before the simulator starts.

Isaac Lab and rsl_rl accept ``agent.save_interval=0`` (a ZeroDivisionError after iteration 0),
``agent.max_iterations=-3`` (a run that silently does nothing), ``env.sim.dt=-0.01`` or a learning rate of ``1e999``
(every weight NaN after the first step). Each field here is checked for its kind, finiteness and range, whether the
value came from an override or from the task itself; any other float an override sets must at least be finite.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import Any

from redline.errors import UserError

MAX_SEED = 2**32 - 1
"""Largest seed numpy, and so Isaac Lab's ``configure_seed``, accepts."""


@dataclasses.dataclass(frozen=True)
class Range:
    """What one numeric setting may hold."""

    integer: bool = False
    """Must be an integer (a bool is not one)."""
    low: float | None = None
    """Smallest allowed value (None: unbounded)."""
    high: float | None = None
    """Largest allowed value (None: unbounded)."""
    open_low: bool = False
    """``low`` itself is excluded (``> low`` instead of ``>= low``)."""
    optional: bool = False
    """None is allowed."""

    def describe(self) -> str:
        """The valid values in words, e.g. ``an integer >= 1`` or ``a finite number in [0, 1]``."""
        kind = "an integer" if self.integer else "a finite number"
        if self.low is not None and self.high is not None:
            return f"{kind} in {'(' if self.open_low else '['}{self.low:g}, {self.high:g}]"
        if self.low is not None:
            return f"{kind} {'>' if self.open_low else '>='} {self.low:g}"
        return kind

    def admits(self, value: Any) -> bool:
        """Whether ``value`` is allowed."""
        if value is None:
            return self.optional
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.open_low else value < self.low):
            return False
        return self.high is None or value <= self.high


POSITIVE = Range(low=0.0, open_low=True)
COUNT = Range(integer=True, low=1)
FRACTION = Range(low=0.0, high=1.0)
NON_NEGATIVE = Range(low=0.0)

RANGES: dict[str, Range] = {
    "env.scene.num_envs": COUNT,
    "env.sim.dt": POSITIVE,  # [s]
    "env.decimation": COUNT,
    "env.episode_length_s": POSITIVE,  # [s]
    "env.seed": Range(integer=True, low=0, high=MAX_SEED, optional=True),
    "env.sim.physics.solver_cfg.nthread": Range(integer=True, low=1, optional=True),  # physics=mujoco_cpu threads
    "agent.max_iterations": COUNT,
    "agent.save_interval": COUNT,
    "agent.num_steps_per_env": COUNT,
    "agent.seed": Range(integer=True, low=0, high=MAX_SEED),
    "agent.clip_actions": Range(low=0.0, open_low=True, optional=True),
    "agent.algorithm.learning_rate": POSITIVE,
    "agent.algorithm.num_learning_epochs": COUNT,
    "agent.algorithm.num_mini_batches": COUNT,
    "agent.algorithm.gamma": FRACTION,
    "agent.algorithm.lam": FRACTION,
    "agent.algorithm.clip_param": POSITIVE,
    "agent.algorithm.desired_kl": Range(low=0.0, open_low=True, optional=True),
    "agent.algorithm.max_grad_norm": Range(low=0.0, open_low=True, optional=True),
    "agent.algorithm.entropy_coef": NON_NEGATIVE,
    "agent.algorithm.value_loss_coef": NON_NEGATIVE,
}
"""The checked settings, by their override names."""

_MISSING = object()


def _get(root: Any, path: str) -> Any:
    node = root
    for part in path.split("."):
        node = node.get(part, _MISSING) if isinstance(node, dict) else getattr(node, part, _MISSING)
        if node is _MISSING:
            return _MISSING
    return node


def check_settings(env_cfg: Any, agent_cfg: Any, overrides: Iterable[str] = ()) -> None:
    """Raise a one-line :class:`UserError` naming the first setting out of range.

    Args:
        env_cfg: the env config (overrides and command options applied).
        agent_cfg: the rsl_rl agent config.
        overrides: the ``env.``/``agent.`` override tokens: any float one of them set must be finite.
    """
    roots = {"env": env_cfg, "agent": agent_cfg}
    for name, valid in RANGES.items():
        root, _, path = name.partition(".")
        value = _get(roots[root], path)
        if value is not _MISSING and not valid.admits(value):
            raise UserError(f"{name}: must be {valid.describe()}, got {value!r}")
    for token in overrides:
        key = token.partition("=")[0]
        root, _, path = key.partition(".")
        if root not in roots:
            continue
        value = _get(roots[root], path)
        if isinstance(value, float) and not math.isfinite(value):
            raise UserError(f"{key}: must be a finite number, got {value!r}")
