"""The one rollout loop: ``redline train``, the benches and the tests all collect env steps through it.

A learner's iteration is ``num_steps_per_env`` x (act -> ``env.step`` -> record) under ``torch.inference_mode``,
then the returns, then the update. :func:`rollout` is that loop for any learner (rsl_rl's runs through it in
``redline bench learner``); :func:`collect_rollout` and :func:`train_iteration` bind it to a redline learner,
:class:`~redline.learning.ppo.PPO` or an :class:`OffPolicyLearner` (:class:`redline.learning.sac.SAC`). An optional
phase timer sees the env steps (``"env"``), the returns (``"gae"``) and the update (``"update"``); without one
nothing is timed and nothing is read from the device.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

import torch
from tensordict import TensorDict

from redline.learning.ppo import PPO

PhaseTimer = Callable[[str], AbstractContextManager[Any]]
"""``timer(phase)`` returns a context manager around one occurrence of ``phase`` (``env``, ``gae``, ``update``)."""

StepHook = Callable[[torch.Tensor, torch.Tensor, dict[str, Any]], None]
"""``on_step(rewards, dones, extras)``, called after every env step (e.g. episode statistics on the device)."""


class OffPolicyLearner(Protocol):
    """What the rollout calls on an off-policy learner (:class:`redline.learning.sac.SAC`, which this module does
    not import): PPO's calls, but each step is recorded with its next observation."""

    cfg: Any

    def act(self, obs: TensorDict) -> torch.Tensor: ...

    def process_env_step(
        self, next_obs: TensorDict, rewards: torch.Tensor, dones: torch.Tensor, extras: Any
    ) -> None: ...

    def compute_returns(self, obs: TensorDict) -> None: ...

    def update(self) -> dict[str, torch.Tensor]: ...


Learner = PPO | OffPolicyLearner
"""A redline learner the rollout binds to."""


def no_timer(phase: str) -> AbstractContextManager[None]:
    """The default :data:`PhaseTimer`: times nothing."""
    return contextlib.nullcontext()


class PhaseTimes:
    """A :data:`PhaseTimer` that adds up host seconds per phase.

    Host timers see launch time on CUDA, not kernel time, unless ``sync`` waits for the device around each phase
    (a synchronisation that the hot path otherwise avoids; the benches pass one, training does not).

    Args:
        sync: called before reading the clock at each phase's start and end (None: no synchronisation).
    """

    def __init__(self, sync: Callable[[], None] | None = None) -> None:
        self.seconds: dict[str, float] = {}
        """Seconds per phase [s], summed over its occurrences."""
        self._sync = sync

    @contextlib.contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        if self._sync is not None:
            self._sync()
        start = time.perf_counter()
        try:
            yield
        finally:
            if self._sync is not None:
                self._sync()
            self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - start

    def __getitem__(self, phase: str) -> float:
        """Seconds spent in ``phase`` [s] (0 if it never ran)."""
        return self.seconds.get(phase, 0.0)


def rollout(
    env: Any,
    obs: TensorDict,
    steps: int,
    act: Callable[[TensorDict], torch.Tensor],
    record: Callable[[TensorDict, torch.Tensor, torch.Tensor, dict[str, Any]], None],
    finish: Callable[[TensorDict], None],
    timer: PhaseTimer = no_timer,
) -> TensorDict:
    """Run ``steps`` env steps with any learner's callbacks, then ``finish`` (the returns), in inference mode.

    Args:
        env: ``step(actions) -> (obs, rewards, dones, extras)`` and ``device``, as Isaac Lab's
            ``RslRlVecEnvWrapper``.
        obs: the current observation, batch ``[num_envs]``.
        steps: env steps per env.
        act: ``act(obs) -> actions`` ``(num_envs, num_actions)``.
        record: ``record(next_obs, rewards, dones, extras)`` after each step (the learner's bookkeeping).
        finish: ``finish(last_obs)`` after the last step (bootstrap values and returns).
        timer: the phase timer (``env`` around each step, ``gae`` around ``finish``).

    Returns:
        The observation after the rollout (the next rollout's first).
    """
    with torch.inference_mode():
        for _ in range(steps):
            actions = act(obs)
            with timer("env"):
                obs, rewards, dones, extras = env.step(actions.to(env.device))
            record(obs, rewards, dones, extras)
        with timer("gae"):
            finish(obs)
    return obs


def collect_rollout(
    alg: Learner, env: Any, obs: TensorDict, timer: PhaseTimer = no_timer, on_step: StepHook | None = None
) -> TensorDict:
    """:func:`rollout` of ``alg.cfg.num_steps_per_env`` steps with a redline learner (PPO: its storage must be
    empty; SAC: each transition goes to its replay, with the step's next observation).

    Args:
        alg: the learner.
        env: the vec env (see :func:`rollout`).
        obs: the current observation, batch ``[num_envs]``.
        timer: the phase timer.
        on_step: called after the learner records each step.
    """

    def record(next_obs: TensorDict, rewards: torch.Tensor, dones: torch.Tensor, extras: dict[str, Any]) -> None:
        if isinstance(alg, PPO):
            alg.process_env_step(rewards, dones, extras)
        else:
            alg.process_env_step(next_obs, rewards, dones, extras)
        if on_step is not None:
            on_step(rewards, dones, extras)

    return rollout(env, obs, alg.cfg.num_steps_per_env, alg.act, record, alg.compute_returns, timer)


def train_iteration(
    alg: Learner, env: Any, obs: TensorDict, timer: PhaseTimer = no_timer, on_step: StepHook | None = None
) -> tuple[TensorDict, dict[str, torch.Tensor]]:
    """:func:`collect_rollout` then :meth:`PPO.update` (timed as ``update``); returns the next observation and the
    update's 0-dim metrics (device tensors)."""
    obs = collect_rollout(alg, env, obs, timer, on_step)
    with timer("update"):
        metrics = alg.update()
    return obs, metrics
