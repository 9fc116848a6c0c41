"""One place that turns a command's run options (:class:`redline.options.RunOptions`) into a task's env and agent
configs: train, play and every bench.

The configs come fresh from the registry on every call (:func:`redline.envs.registry.load_cfgs`), so the caller
owns them; nothing here writes to a config the caller passed in.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
from typing import Any

from redline import validation
from redline.device import resolve_device
from redline.envs import registry
from redline.envs.checks import check_settings
from redline.errors import UserError
from redline.options import ALGORITHMS, RunOptions
from redline.seeding.plan import seed_plan

CPU_PHYSICS = "mujoco_cpu"
"""The physics preset a redline task gets on the CPU unless a ``physics=`` override chooses one: MuJoCo's C
engine on every core (:mod:`redline.physics`). On a GPU the task's own default (MuJoCo-Warp) stays."""


@dataclasses.dataclass(frozen=True)
class PreparedEnv:
    """A task's configs with the run options applied, ready for :func:`redline.envs.simulator.isaaclab_env`."""

    task: str
    """The task id the env is built from (the ``-Play`` twin for play)."""
    device: str
    """The resolved device."""
    env_cfg: Any
    """The env config (this object's own copy)."""
    agent_cfg: Any
    """The rsl_rl runner config both learners read (this object's own copy)."""


def prepare_env(
    run: RunOptions,
    *,
    play: bool = False,
    rank: int = 0,
    default_num_envs: int | None = None,
    agent_entry_point: str = ALGORITHMS["ppo"],
) -> PreparedEnv:
    """Resolve and validate ``run`` and return the configs with it applied.

    Args:
        run: the command's run options; ``run.num_envs`` is this process's env count (None: ``env.scene.num_envs``
            when overridden, else ``default_num_envs``, else the task's default for the device: on the CPU the
            agent config's ``cpu_num_envs`` when it sets one, else the env config's, on a GPU ``scene.num_envs``).
            No ``physics=`` override on the CPU: :data:`CPU_PHYSICS` for a redline task.
        play: build the task's ``-Play`` twin when one is registered.
        rank: this process's rank in a data-parallel run: its envs' global ids start at ``rank * num_envs``.
        default_num_envs: the env count when neither ``num_envs`` nor an ``env.scene.num_envs`` override is given
            (None: the task's default for the device), e.g. the number of envs a video shows.
        agent_entry_point: the registration key of the agent config (:data:`redline.options.ALGORITHMS`).

    Sets ``scene.num_envs``, ``sim.device`` and ``seed`` of the env config, its seeding strategy, seed and env-id
    offset, and the agent config's ``device`` (both of Isaac Lab's CPU traps) and ``seed``; then checks every
    numeric setting's range (:func:`redline.envs.checks.check_settings`) and, under ``physics=mujoco_cpu``, that the
    scene needs nothing MuJoCo-C lacks (:func:`redline.physics.support.check_supported`).
    """
    task = registry.resolve_task_id(run.task)
    env_task = registry.play_twin(task) if play else task
    device = resolve_device(run.device)
    overrides = physics_overrides(env_task, device, run.overrides)
    env_cfg, agent_cfg = registry.load_cfgs(env_task, agent_entry_point, overrides)
    overridden = any(token.partition("=")[0] == "env.scene.num_envs" for token in run.overrides)
    task_default = cpu_num_envs(env_cfg, agent_cfg) if device == "cpu" else None
    if run.num_envs is not None:
        env_cfg.scene.num_envs = run.num_envs
    elif not overridden:
        env_cfg.scene.num_envs = default_num_envs or task_default or env_cfg.scene.num_envs
    env_cfg.sim.device = device
    seeds = seed_plan(run.seed, rank, env_cfg.scene.num_envs)  # where the seed goes, rank rules included
    env_cfg.seed = seeds.env
    registry.apply_seeding(env_cfg, run.seeding)
    seeding = getattr(env_cfg, "seeding", None)
    if seeding is not None:
        seeding.seed = seeds.streams if seeding.seed is None else seeding.seed
        seeding.env_id_offset = seeds.env_id_offset
    agent_cfg.device = device
    agent_cfg.seed = seeds.agent
    check_settings(env_cfg, agent_cfg, run.overrides)  # before any simulator starts
    # heavy: Isaac Lab (physics.support reads its sensor and terrain configs)
    from redline.physics.support import check_supported

    check_supported(env_cfg, device)  # physics=mujoco_cpu: a sensor or terrain it cannot simulate
    return PreparedEnv(env_task, device, env_cfg, agent_cfg)


def cpu_num_envs(env_cfg: Any, agent_cfg: Any) -> int | None:
    """The env count a CPU run gets when the command names none: the agent config's ``cpu_num_envs`` (an
    off-policy agent, whose update rather than the physics bounds a CPU run, asks for fewer envs than PPO), else the
    env config's; None when neither sets one."""
    agent_count = getattr(agent_cfg, "cpu_num_envs", None)
    if agent_count is None:
        return getattr(env_cfg, "cpu_num_envs", None)
    validation.check_range("agent.cpu_num_envs", agent_count, validation.COUNT)
    return int(agent_count)


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


def physics_preset(task: str, device: str, overrides: tuple[str, ...]) -> str:
    """The physics preset a run of ``task`` on ``device`` uses (:func:`physics_overrides`; ``newton_mjwarp``, the
    tasks' own default, where no ``physics=`` token chooses one)."""
    tokens = physics_overrides(task, device, overrides)
    chosen = [t.partition("=")[2] for t in tokens if t.partition("=")[0] == "physics"]
    return chosen[-1] if chosen else "newton_mjwarp"


def runner_cfg_dict(agent_cfg: Any) -> dict:
    """The ``train_cfg`` dict rsl_rl's runners take, with Isaac Lab's version shims applied to a copy."""
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab_rl.rsl_rl import handle_deprecated_rsl_rl_cfg

    cfg = agent_cfg.copy()
    return handle_deprecated_rsl_rl_cfg(cfg, importlib.metadata.version("rsl-rl-lib")).to_dict()
