"""The task registry seen from redline: list, validate and load task configs (fresh copies every call)."""

from __future__ import annotations

import difflib
from typing import Any

from redline.errors import UserError

PLAY_SUFFIX = "-Play"
"""Suffix of a task's play twin (fewer envs, ``eval`` seeding)."""


def _registry() -> dict[str, Any]:
    # heavy: gymnasium (~0.3 s), not before the CLI has parsed
    import gymnasium as gym

    import redline_tasks  # noqa: F401  (registers the Redline-* tasks; light)
    from redline.physics.any_task import offer_on_registered_tasks  # heavy here: its module __getattr__ loads gymnasium

    offer_on_registered_tasks()  # physics=mujoco_cpu on tasks registered since (microseconds per task)
    return gym.registry


def redline_task_ids() -> list[str]:
    """Every registered ``Redline-*`` task id, sorted."""
    from redline_tasks import TASK_PREFIX  # registers every task: on first use, not when the CLI starts

    return sorted(task for task in _registry() if task.startswith(TASK_PREFIX))


def resolve_task_id(task: str) -> str:
    """Return ``task`` if it is registered (redline's or Isaac Lab's), else raise with close matches.

    Isaac Lab's own tasks, and those of the other installed ``isaaclab.tasks`` entry points (a user's project), are
    imported only when ``task`` is not a redline task (that import takes seconds).
    """
    if task in _registry():
        return task
    import isaaclab_tasks  # noqa: F401  (registers Isaac Lab's stock tasks)
    from isaaclab.cli import load_external_tasks

    load_external_tasks()  # as `isaaclab train` does
    if task in _registry():
        return task

    known = sorted(t for t in _registry() if t.startswith(("Redline-", "Isaac-")))
    if task in known:
        return task
    close = difflib.get_close_matches(task, known, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(close)}?" if close else f"valid redline tasks: {', '.join(redline_task_ids())}"
    raise UserError(f"--task: unknown task '{task}' ({hint})")


def play_twin(task: str) -> str:
    """The ``-Play`` twin of ``task`` when one is registered, else ``task`` itself."""
    if task.endswith(PLAY_SUFFIX):
        return task
    return task + PLAY_SUFFIX if task + PLAY_SUFFIX in _registry() else task


PRESET_KEYS = ("physics", "presets", "renderer")
"""Isaac Lab's preset selectors (``physics=newton_mjwarp``), passed through as they are."""


def load_cfgs(task: str, agent_entry_point: str, overrides: list[str]) -> tuple[Any, Any]:
    """Resolve ``(env_cfg, agent_cfg)`` for ``task`` with Hydra-style ``overrides`` (``env.a.b=1 agent.c=2``).

    Every override must name an existing field and keep its type (Isaac Lab would silently add a misspelt
    field or store ``"abc"`` in an int). Returns new config objects on every call, so callers may change them.
    """
    # heavy: Isaac Lab, imported only once the simulator is needed
    from isaaclab_tasks.utils import resolve_task_config

    if agent_entry_point not in _registry()[task].kwargs:
        raise UserError(f"--task: '{task}' has no '{agent_entry_point}' agent configuration")
    presets = [token for token in overrides if token.partition("=")[0] in PRESET_KEYS]
    try:
        env_cfg, agent_cfg = resolve_task_config(task, agent_entry_point, overrides=presets)
    except ValueError as err:
        raise _preset_error(err) from None
    if len(presets) == len(overrides):
        return env_cfg, agent_cfg  # field overrides are checked against the chosen presets' defaults
    defaults = {token: _lookup(env_cfg, agent_cfg, token) for token in overrides}
    new_env_cfg, new_agent_cfg = resolve_task_config(task, agent_entry_point, overrides=list(overrides))
    for token, default in defaults.items():
        if token.partition("=")[0] in PRESET_KEYS:
            continue
        value = _lookup(new_env_cfg, new_agent_cfg, token)
        if not _same_kind(default, value):
            raise UserError(f"override '{token}': expects {_kind_name(default)} (the default is {default!r})")
    return new_env_cfg, new_agent_cfg


def _preset_error(err: ValueError) -> Exception:
    """Isaac Lab's multi-line "Unknown preset(s)" table as one line; any other error as it is."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    if not lines or not lines[0].startswith("Unknown preset"):
        return err
    names = [line for line in lines[1:] if not line.startswith(("->", "Available", "'"))]
    return UserError(f"{lines[0]} (valid: {'; '.join(names)})")


def _lookup(env_cfg: Any, agent_cfg: Any, token: str) -> Any:
    """The current value of the field an override ``env.a.b=value`` names; a :class:`UserError` if none."""
    key = token.partition("=")[0]
    if key in PRESET_KEYS:
        return None
    root, _, path = key.partition(".")
    if root not in ("env", "agent") or not path:
        raise UserError(f"override '{token}': keys start with 'env.' or 'agent.' (or are {', '.join(PRESET_KEYS)})")
    node = env_cfg if root == "env" else agent_cfg
    walked = root
    for part in path.split("."):
        fields = node if isinstance(node, dict) else {k: v for k, v in vars(node).items() if not k.startswith("_")}
        if part not in fields:
            valid = ", ".join(sorted(fields))
            raise UserError(f"override '{token}': '{walked}' has no field '{part}' (valid: {valid})")
        node = fields[part]
        walked += f".{part}"
    return node


def _same_kind(default: Any, value: Any) -> bool:
    """Whether an override kept the field's kind of value (an int may fill a float field; a list or tuple takes a
    list or tuple whose elements keep the kind of the default's elements; a dict takes a dict)."""
    if default is None or value is None:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, int | float):
        return (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and (isinstance(default, float) or isinstance(value, int))
        )
    if isinstance(default, str):
        return isinstance(value, str)
    if isinstance(default, list | tuple):
        if not isinstance(value, list | tuple):
            return False
        kinds = [d for d in default if d is not None]
        return not kinds or all(any(_same_kind(d, v) for d in kinds) for v in value)
    if isinstance(default, dict):
        return isinstance(value, dict)
    return True


def _kind_name(default: Any) -> str:
    """The kind of value a field takes, in words: ``int``, ``list of int``, ``dict``."""
    if isinstance(default, list | tuple):
        kinds = sorted({type(d).__name__ for d in default if d is not None})
        return f"a list of {' or '.join(kinds)}" if kinds else "a list"
    return type(default).__name__


def apply_seeding(env_cfg: Any, strategy: str | None) -> None:
    """Set ``env_cfg.seeding.strategy`` (``--seeding``) and check the result (an override may have set it too);
    tasks without per-env seeding accept only ``shared``."""
    from redline.seeding import check_seed, parse_strategy  # heavy (torch): the CLI lists tasks without it

    if hasattr(env_cfg, "seeding"):
        if strategy is not None:
            env_cfg.seeding.strategy = strategy
        parse_strategy(env_cfg.seeding.strategy)
        if env_cfg.seeding.seed is not None:
            check_seed(env_cfg.seeding.seed)
    elif strategy not in (None, "shared"):
        raise UserError("--seeding: this task draws from Isaac Lab's global stream only (valid: shared)")
