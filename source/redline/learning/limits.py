"""Range checks of the agent (rsl_rl runner) settings and of the rollout's shape, shared by ``redline train`` (on
the final configs, before the simulator starts) and the drop-in class inside stock Isaac Lab scripts
(:meth:`redline.learning.rsl_rl.PPO.construct_algorithm`).

Isaac Lab and rsl_rl accept ``agent.save_interval=0`` (a ZeroDivisionError after iteration 0), a learning rate of
``1e999`` (every weight NaN after the first step) or more minibatches than the rollout has transitions (empty
minibatches once the first rollout is in). Each setting here is checked for kind, finiteness and range.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from redline.errors import UserError
from redline.learning.config import ACTIVATIONS, PPO_RANGES
from redline.validation import (
    COUNT,
    MISSING,
    POSITIVE,
    SEED,
    Range,
    check_choice,
    check_ranges,
    get_path,
)

RSL_RL_NONE = ("desired_kl", "max_grad_norm", "micro_batches")
"""Algorithm settings rsl_rl also takes as None: no KL target (the fixed schedule), no clipping, one micro-batch."""

AGENT_RANGES: dict[str, Range] = {
    "agent.max_iterations": COUNT,
    "agent.save_interval": COUNT,
    "agent.num_steps_per_env": PPO_RANGES["num_steps_per_env"],
    "agent.seed": SEED,
    "agent.clip_actions": dataclasses.replace(POSITIVE, optional=True),
    **{
        f"agent.algorithm.{name}": dataclasses.replace(valid, optional=name in RSL_RL_NONE)
        for name, valid in PPO_RANGES.items()
        if name != "num_steps_per_env"
    },
}
"""The checked agent settings, by their override names (``agent.`` is the runner config)."""

LIST_RANGES: dict[str, Range] = {
    "agent.actor.hidden_dims": COUNT,
    "agent.critic.hidden_dims": COUNT,
}
"""Settings that are non-empty lists, each element checked."""


def check_agent(agent: Any) -> None:
    """Check an rsl_rl runner config (Isaac Lab's agent config object, or its ``to_dict()``)."""
    check_ranges({"agent": agent}, AGENT_RANGES)
    for role in ("actor", "critic"):
        activation = get_path(agent, f"{role}.activation")
        if activation is not MISSING:
            check_choice(f"agent.{role}.activation", activation, ACTIVATIONS)
    for name, valid in LIST_RANGES.items():
        value = get_path(agent, name.partition(".")[2])
        if value is MISSING or value is None:
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
