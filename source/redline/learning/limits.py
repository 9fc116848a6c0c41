"""Range checks of the agent (rsl_rl runner) settings and of the rollout's shape, shared by ``redline train`` (on
the final configs, before the simulator starts) and the drop-in class inside stock Isaac Lab scripts
(:meth:`redline.learning.rsl_rl.PPO.construct_algorithm`).

Isaac Lab and rsl_rl accept ``agent.save_interval=0`` (a ZeroDivisionError after iteration 0), a learning rate of
``1e999`` (every weight NaN after the first step) or more minibatches than the rollout has transitions (empty
minibatches once the first rollout is in). Each setting here is checked for kind, finiteness and range.
"""

from __future__ import annotations

import dataclasses
import math
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

AGENT_RANGES: dict[str, Range] = {
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
    "agent.algorithm.micro_batches": Range(integer=True, low=1, optional=True),
}
"""The checked agent settings, by their override names (``agent.`` is the runner config)."""

LIST_RANGES: dict[str, Range] = {
    "agent.actor.hidden_dims": COUNT,
    "agent.critic.hidden_dims": COUNT,
}
"""Settings that are non-empty lists, each element checked."""

_MISSING = object()


def get_path(root: Any, path: str) -> Any:
    """The value at a dotted ``path`` of nested dicts / config objects, or :data:`MISSING`."""
    node = root
    for part in path.split("."):
        node = node.get(part, _MISSING) if isinstance(node, dict) else getattr(node, part, _MISSING)
        if node is _MISSING:
            return _MISSING
    return node


MISSING = _MISSING
"""What :func:`get_path` returns for a path that does not exist."""


def check_ranges(roots: dict[str, Any], ranges: dict[str, Range]) -> None:
    """A one-line :class:`UserError` naming the first setting out of its range.

    Args:
        roots: the config behind each name's first part (``{"agent": runner_cfg}``).
        ranges: the settings to check, by name.
    """
    for name, valid in ranges.items():
        root, _, path = name.partition(".")
        value = get_path(roots[root], path) if root in roots else _MISSING
        if value is not _MISSING and not valid.admits(value):
            raise UserError(f"{name}: must be {valid.describe()}, got {value!r}")


def check_agent(agent: Any) -> None:
    """Check an rsl_rl runner config (Isaac Lab's agent config object, or its ``to_dict()``)."""
    from redline.learning.config import ACTIVATIONS

    check_ranges({"agent": agent}, AGENT_RANGES)
    for role in ("actor", "critic"):
        activation = get_path(agent, f"{role}.activation")
        if activation is not _MISSING and activation not in ACTIVATIONS:
            raise UserError(f"agent.{role}.activation: unknown {activation!r} (valid: {', '.join(ACTIVATIONS)})")
    for name, valid in LIST_RANGES.items():
        value = get_path(agent, name.partition(".")[2])
        if value is _MISSING or value is None:
            continue
        if not isinstance(value, list | tuple) or not value or not all(valid.admits(v) for v in value):
            each = valid.describe().replace("an integer", "integers")
            raise UserError(f"{name}: must be a non-empty list of {each}, got {value!r}")


def check_rollout(num_steps: int, num_envs: int, num_mini_batches: int, micro_batches: int = 1) -> None:
    """The rollout's shape: each of ``num_mini_batches`` minibatches of the ``T x N`` transitions (all ranks' envs)
    holds at least one transition, and each of its ``micro_batches`` parts too (they need not divide it: the parts'
    gradients are weighted by their sizes)."""
    transitions = num_steps * num_envs
    if num_mini_batches > transitions:
        raise UserError(
            f"agent.algorithm.num_mini_batches: must be at most the rollout's T x N = {num_steps} x {num_envs} = "
            f"{transitions} transitions (agent.num_steps_per_env x envs), got {num_mini_batches}"
        )
    minibatch = transitions // num_mini_batches
    if micro_batches > minibatch:
        raise UserError(
            f"agent.algorithm.micro_batches: must be at most the minibatch of {minibatch} transitions "
            f"(T x N / num_mini_batches), got {micro_batches}"
        )
