"""What every redline task shares: its seeding config, per-env streams, local assets, the Play twin's changes.

The task's reset runs Isaac Lab's own reset first; unless the strategy is ``shared`` (Isaac Lab's global
stream, numbers as in stock Isaac Lab), the random parts of the new state are then redrawn from the env's own
stream in :class:`redline.seeding.EnvStreams`, so each env's start states depend only on (seed, global env id,
episode, draw).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from isaaclab.utils import configclass
from tensordict import TensorDict

from redline.assets import ensure_asset_root
from redline.physics.mujoco_cpu_telemetry import bind_actuator_telemetry
from redline.physics.offer import with_mujoco_cpu
from redline.run_state.env_state import gather_env_state, restore_env_state
from redline.seeding import EnvStreams, Strategy, check_seed, parse_strategy


@configclass
class SeedingCfg:
    """How a task draws its randomness (see :mod:`redline.seeding.streams` for the guarantees)."""

    strategy: str = "per_env"
    """``shared`` (Isaac Lab's global stream), ``per_env`` (default) or ``eval`` (common random numbers)."""
    seed: int | None = None
    """Base seed of the streams; None: the env config's ``seed`` (0 when that is None too)."""
    env_id_offset: int = 0
    """Global id of this process's env 0: the sum of the env counts of lower ranks (0 in one process)."""


def make_streams(seeding: SeedingCfg, env_seed: int | None, num_envs: int, device: str) -> EnvStreams:
    """The :class:`EnvStreams` a task's ``seeding`` config describes (validates strategy and seed)."""
    strategy = parse_strategy(seeding.strategy)
    seed = check_seed(seeding.seed if seeding.seed is not None else (env_seed or 0))
    return EnvStreams(strategy, seed, num_envs, device, env_id_offset=seeding.env_id_offset)


def begin_episodes(streams: EnvStreams, env_ids: Sequence[int] | torch.Tensor) -> bool:
    """Count a new episode for ``env_ids``; return whether the task must redraw its reset state itself."""
    streams.begin_episode(env_ids)
    return streams.strategy is not Strategy.SHARED


@configclass
class RedlineTaskCfg:
    """What every redline direct task's config adds to Isaac Lab's (list it first among the bases): per-env seeding,
    a CPU env count, and the ``mujoco_cpu`` physics preset. World origins must not depend on ``num_envs``
    (``env_spacing = 0``, set by each task's scene): then an env's physics is bitwise the same in any partition of
    the envs (Newton worlds never collide with each other)."""

    seeding: SeedingCfg = SeedingCfg()
    """Where reset states come from; ``per_env`` by default."""
    cpu_num_envs: int = 64
    """Default number of envs when the simulation runs on the CPU (``scene.num_envs`` is the GPU default)."""
    final_observation: bool = False
    """Each step's extras carry ``final_observation`` (:data:`FINAL_OBSERVATION`), the observation every env's step
    ended in before its auto-reset, for an off-policy learner that bootstraps time-outs; read at every step, so it
    may be switched on after the env is built. Off: nothing is computed."""

    def __post_init__(self) -> None:
        parent = getattr(super(), "__post_init__", None)
        if parent is not None:
            parent()
        cfg: Any = self
        cfg.sim.physics = with_mujoco_cpu(cfg.sim.physics)  # physics=mujoco_cpu: MuJoCo's C engine, all cores


FINAL_OBSERVATION = "final_observation"
"""The extras key of the observation each env's step ended in, before its auto-reset: a ``TensorDict`` of the
observation groups, batch ``(num_envs,)``; where an env was reset in the step it is the observation computed just
before the reset, elsewhere the step's returned observation (so it is the transition's next observation for every
env). Present at every step while the task's ``final_observation`` is on, absent while it is off."""


def merge_final_observation(
    returned: dict[str, Any], before_reset: dict[str, Any] | None, reset: torch.Tensor
) -> TensorDict:
    """The :data:`FINAL_OBSERVATION` of a step: ``before_reset`` where ``reset`` (num_envs,) bool, else ``returned``
    (both dicts of observation groups, leaves (num_envs, ...); ``before_reset`` None: no env was reset)."""
    after = TensorDict(returned, batch_size=reset.shape)
    if before_reset is None:
        return after
    before = TensorDict(before_reset, batch_size=reset.shape)
    merged = before.apply(lambda b, a: torch.where(reset.view(-1, *(1,) * (a.dim() - 1)), b, a), after)
    assert merged is not None
    return merged


def use_play_defaults(cfg: Any) -> None:
    """What every ``-Play`` twin changes in its training config: 16 envs and ``eval`` seeding."""
    cfg.scene.num_envs = 16
    cfg.cpu_num_envs = 16
    cfg.seeding.strategy = "eval"  # every checkpoint is played from the same start states


class RedlineEnvMixin:
    """Mixin for every redline env class, direct or manager-based (list it first): builds the local assets and
    the per-env streams (``self.streams``) before Isaac Lab's ``__init__`` spawns the scene and builds the managers,
    so startup events draw from the streams too. The streams live on the env, never in its config."""

    streams: EnvStreams
    _capturing_final = False  # in a step with final observations on, until the first reset has captured them
    _before_reset: dict[str, Any] | None = None  # the observation captured before the step's first reset
    run_state_buffers: tuple[str, ...] | None = None
    """A task's own per-env buffers that a checkpoint's run state holds besides Isaac Lab's (the env's buffers, a
    manager-based env's managers, the sensors: :mod:`redline.run_state.env_state`); None: the task's state is not saved
    yet (a resume starts from fresh resets)."""

    def __init__(self, cfg: Any, render_mode: str | None = None, **kwargs: Any) -> None:
        ensure_asset_root()
        self.streams = make_streams(cfg.seeding, cfg.seed, cfg.scene.num_envs, cfg.sim.device)
        super().__init__(cfg, render_mode, **kwargs)  # type: ignore[call-arg]
        bind_actuator_telemetry(self)  # a fused env step's torque telemetry

    def step(self, action: torch.Tensor) -> tuple[Any, ...]:
        """Isaac Lab's step; with the task's ``final_observation`` on, its extras carry :data:`FINAL_OBSERVATION`."""
        cfg: Any = self.cfg  # type: ignore[attr-defined]
        if not getattr(cfg, "final_observation", False):  # a user's task config may lack the field
            return super().step(action)  # type: ignore[misc]
        self._capturing_final, self._before_reset = True, None
        try:
            obs, reward, terminated, truncated, extras = super().step(action)  # type: ignore[misc]
        finally:
            self._capturing_final = False
        extras[FINAL_OBSERVATION] = merge_final_observation(obs, self._before_reset, terminated | truncated)
        self._before_reset = None
        return obs, reward, terminated, truncated, extras

    def capture_final_observation(self) -> None:
        """In a step with final observations on, compute every env's observation before the step's first reset
        (tasks call it first in their reset, before anything changes). The draws of the observation noise are
        rewound (:meth:`EnvStreams.rewound`), so the run's numbers are the same with the option off or on, and in
        any partition of the envs."""
        if not self._capturing_final:
            return
        self._capturing_final = False
        env: Any = self
        with self.streams.rewound():
            if hasattr(env, "observation_manager"):  # manager-based: without advancing history or delay buffers
                self._before_reset = env.observation_manager.compute(update_history=False)
            else:
                self._before_reset = env._compute_observations()

    def _reset_idx(self, env_ids: Any) -> None:
        self.capture_final_observation()
        super()._reset_idx(env_ids)  # type: ignore[misc]

    def env_state(self) -> dict[str, Any]:
        """This env's state between two steps, simulator included (only for tasks with ``run_state_buffers``)."""
        assert self.run_state_buffers is not None
        return gather_env_state(self, self.run_state_buffers)

    def load_env_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`env_state`'s ``state``: the next step is the one the saved env would have taken."""
        restore_env_state(self, state)
