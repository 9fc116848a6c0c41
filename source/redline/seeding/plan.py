"""Where one run's ``--seed`` goes: every destination and its rank rule, in one place.

A run has one seed. On each rank it reaches the env (Isaac Lab's own generator), the per-env Philox streams, the agent
config (rsl_rl's runner seeds from it), torch's global generator (the initial weights) and the learner's two
generators (minibatch order, action noise). :func:`seed_plan` gives all of them; the env config, the runner and the
learner read their seed from it instead of each writing the rule again.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from redline.seeding.state import env_streams
from redline.seeding.streams import Domain, Strategy

NOISE_STRIDE = 0x9E3779B97F4A7C15
"""Odd 64-bit constant (the golden ratio's fraction) spreading the ranks' action-noise seeds apart."""


@dataclasses.dataclass(frozen=True)
class SeedPlan:
    """The seeds of one rank of a run (:func:`seed_plan`)."""

    env: int
    """Isaac Lab's generator (``env_cfg.seed``): ``seed + rank``, distinct per global rank."""
    streams: int
    """The per-env Philox streams (``env_cfg.seeding.seed``, unless the task config sets its own): ``seed`` on every
    rank; their global env ids already differ."""
    env_id_offset: int
    """Global id of this rank's env 0 (``env_cfg.seeding.env_id_offset``): ``rank * envs per rank``."""
    agent: int
    """The agent config's ``seed`` (rsl_rl's runner seeds torch from it): ``seed``."""
    torch: int
    """torch's global generator just before the networks are built: ``seed`` (the initial weights depend on the seed
    only; data-parallel ranks then take rank 0's)."""
    minibatch: int
    """The learner's minibatch-partition generator: ``seed``, the same on every rank."""
    noise: int
    """The learner's own action-noise generator (used when the env has no per-env streams): ``seed`` and the rank."""


def seed_plan(seed: int, rank: int = 0, envs_per_rank: int = 0) -> SeedPlan:
    """Where ``seed`` goes on global rank ``rank`` (never the local rank) of a run with ``envs_per_rank`` envs each."""
    return SeedPlan(
        env=seed + rank,
        streams=seed,
        env_id_offset=rank * envs_per_rank,
        agent=seed,
        torch=seed,
        minibatch=seed,
        noise=(seed + NOISE_STRIDE * (rank + 1)) % 2**63,
    )


def bind_action_noise(alg: Any, env: Any) -> None:
    """Draw ``alg``'s action noise (a :class:`redline.learning.ppo.PPO`) from the env's per-env streams when it has
    non-shared ones (a redline task) and ``alg.cfg.env_action_noise`` is on: env g's noise is then a pure function of
    (seed, global env id g, episode, step), whatever the partition."""
    streams = env_streams(env)
    if alg.cfg.env_action_noise and streams is not None and streams.strategy is not Strategy.SHARED:
        shape = (env.num_actions,)
        alg.action_noise = lambda: streams.normal(None, shape, domain=Domain.POLICY)
