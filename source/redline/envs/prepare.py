"""One place that turns a command's options into a task's env and agent configs: train, play and every bench.

The configs come fresh from the registry on every call (:func:`redline.envs.registry.load_cfgs`), so the caller
owns them; nothing here writes to a config the caller passed in.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from redline.device import resolve_device
from redline.envs import registry
from redline.envs.checks import check_settings
from redline.errors import UserError
from redline.seeding.plan import seed_plan

CPU_PHYSICS = "mujoco_cpu"
"""The physics preset a redline task gets on the CPU unless a ``physics=`` override chooses one: MuJoCo's C
engine on every core (:mod:`redline.physics`). On a GPU the task's own default (MuJoCo-Warp) stays."""


@dataclasses.dataclass(frozen=True)
class EnvRequest:
    """What a command asks of a task's environment."""

    task: str
    """Registered task id, e.g. ``Redline-Cartpole``."""
    num_envs: int | None = None
    """Parallel envs of this process; None: ``env.scene.num_envs`` when overridden, else the task's default for
    the device (``cpu_num_envs`` on the CPU, ``scene.num_envs`` on a GPU)."""
    device: str | None = None
    """``cpu``, ``cuda`` or ``cuda:N``; None: ``cuda:0`` when present, else ``cpu``."""
    seed: int = 42
    """The run's seed: of the env, the per-env streams and the learner (:func:`redline.seeding.plan.seed_plan`)."""
    seeding: str | None = None
    """Seeding strategy (``shared``/``per_env``/``eval``); None: the task config's."""
    overrides: tuple[str, ...] = ()
    """Hydra-style overrides, ``env.<path>=<value>`` / ``agent.<path>=<value>`` / ``physics=<preset>`` (no
    ``physics=`` on the CPU: :data:`CPU_PHYSICS` for a redline task)."""
    play: bool = False
    """Build the task's ``-Play`` twin when one is registered."""
    rank: int = 0
    """This process's rank in a data-parallel run: its envs' global ids start at ``rank * num_envs``."""


@dataclasses.dataclass(frozen=True)
class PreparedEnv:
    """A task's configs with a request applied, ready for :func:`redline.envs.simulator.isaaclab_env`."""

    task: str
    """The task id the env is built from (the ``-Play`` twin for a play request)."""
    device: str
    """The resolved device."""
    env_cfg: Any
    """The env config (this object's own copy)."""
    agent_cfg: Any
    """The rsl_rl runner config both learners read (this object's own copy)."""


def prepare_env(request: EnvRequest, default_num_envs: int | None = None) -> PreparedEnv:
    """Resolve and validate ``request`` and return the configs with it applied.

    Args:
        request: the command's options.
        default_num_envs: the env count when neither ``num_envs`` nor an ``env.scene.num_envs`` override is given
            (None: the task's default for the device), e.g. the number of envs a video shows.

    Sets ``scene.num_envs``, ``sim.device`` and ``seed`` of the env config, its seeding strategy, seed and env-id
    offset, and the agent config's ``device`` (both of Isaac Lab's CPU traps) and ``seed``; then checks every
    numeric setting's range (:func:`redline.envs.checks.check_settings`) and, under ``physics=mujoco_cpu``, that the
    scene needs nothing MuJoCo-C lacks (:func:`redline.physics.support.check_supported`).
    """
    task = registry.resolve_task_id(request.task)
    env_task = registry.play_twin(task) if request.play else task
    device = resolve_device(request.device)
    overrides = physics_overrides(env_task, device, request.overrides)
    env_cfg, agent_cfg = registry.load_cfgs(env_task, "rsl_rl_cfg_entry_point", overrides)
    overridden = any(token.partition("=")[0] == "env.scene.num_envs" for token in request.overrides)
    task_default = getattr(env_cfg, "cpu_num_envs", None) if device == "cpu" else None
    if request.num_envs is not None:
        env_cfg.scene.num_envs = request.num_envs
    elif not overridden:
        env_cfg.scene.num_envs = default_num_envs or task_default or env_cfg.scene.num_envs
    env_cfg.sim.device = device
    seeds = seed_plan(request.seed, request.rank, env_cfg.scene.num_envs)  # where the seed goes, rank rules included
    env_cfg.seed = seeds.env
    registry.apply_seeding(env_cfg, request.seeding)
    seeding = getattr(env_cfg, "seeding", None)
    if seeding is not None:
        seeding.seed = seeds.streams if seeding.seed is None else seeding.seed
        seeding.env_id_offset = seeds.env_id_offset
    agent_cfg.device = device
    agent_cfg.seed = seeds.agent
    check_settings(env_cfg, agent_cfg, request.overrides)  # before any simulator starts
    from redline.physics.support import check_supported

    check_supported(env_cfg, device)  # physics=mujoco_cpu: a sensor or terrain it cannot simulate
    return PreparedEnv(env_task, device, env_cfg, agent_cfg)


def physics_overrides(task: str, device: str, overrides: tuple[str, ...]) -> list[str]:
    """``overrides`` with the physics preset for ``device``: :data:`CPU_PHYSICS` added for a redline task on the
    CPU when no ``physics=`` token chooses one; ``physics=mujoco_cpu`` with a CUDA device is a one-line error."""
    chosen = [token.partition("=")[2] for token in overrides if token.partition("=")[0] == "physics"]
    if CPU_PHYSICS in chosen and device != "cpu":
        raise UserError(
            f"physics={CPU_PHYSICS}: runs on the CPU only (--device {device}; valid: --device cpu, or "
            "physics=newton_mjwarp on a GPU)"
        )
    if chosen or device != "cpu" or task not in registry.redline_task_ids():
        return list(overrides)
    return [*overrides, f"physics={CPU_PHYSICS}"]


def runner_cfg_dict(agent_cfg: Any) -> dict:
    """The ``train_cfg`` dict rsl_rl's runners take, with Isaac Lab's version shims applied to a copy."""
    import importlib.metadata

    from isaaclab_rl.rsl_rl import handle_deprecated_rsl_rl_cfg

    cfg = agent_cfg.copy()
    return handle_deprecated_rsl_rl_cfg(cfg, importlib.metadata.version("rsl-rl-lib")).to_dict()
