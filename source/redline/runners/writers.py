"""The run's log writer, chosen as rsl_rl 5.5.1 chooses it: ``cfg["logger"]`` names TensorBoard, W&B or Neptune.

rsl_rl's :class:`~rsl_rl.utils.WandbLogWriter` and :class:`~rsl_rl.utils.NeptuneLogWriter` are TensorBoard
``SummaryWriter`` subclasses that also send every scalar to their service, so
:class:`~redline.outputs.metrics.MetricsLog` writes through any of them unchanged. The ``logger`` value is Isaac Lab's
(``tensorboard``, ``wandb``, ``neptune``; projects in ``wandb_project`` / ``neptune_project``) or rsl_rl's dict form
``{"class_name": ..., **kwargs}``.

:func:`check_logger` runs before the simulator starts: a missing package or missing credentials is one line naming
the option; redline never falls back to TensorBoard on its own.
"""

from __future__ import annotations

import configparser
import importlib.util
import netrc
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Protocol
from urllib.parse import urlparse

import torch
from tensorboard.compat.proto.event_pb2 import Event, SessionLog

from redline.errors import UserError

LOGGERS = ("tensorboard", "wandb", "neptune")
"""``--logger`` values (Isaac Lab's ``RslRlBaseRunnerCfg.logger``)."""

_OFFLINE_MODES = {"offline", "dryrun", "disabled"}


def set_logger(agent_cfg: Any, logger: str | None, project: str | None) -> None:
    """``--logger`` / ``--log_project_name`` applied to an agent config as Isaac Lab's ``update_rsl_rl_cfg`` does:
    the flag replaces ``logger``; the project name goes to ``wandb_project`` and ``neptune_project`` (to the dict
    form's ``project_name``) when the logger is W&B or Neptune."""
    if logger is not None:
        agent_cfg.logger = logger
    if project is None:
        return
    if isinstance(agent_cfg.logger, dict):
        agent_cfg.logger = {**agent_cfg.logger, "project_name": project}
    elif agent_cfg.logger in ("wandb", "neptune"):
        agent_cfg.wandb_project = project
        agent_cfg.neptune_project = project


def check_logger(logger: Any, field: str) -> str:
    """Validate a ``logger`` setting where a run can still stop cheaply; returns its kind (``tensorboard``,
    ``wandb``, ``neptune``, or ``custom`` for another rsl_rl ``LogWriter`` class).

    Args:
        logger: the agent config's ``logger`` (a name, or rsl_rl's ``{"class_name": ...}`` dict).
        field: the option it came from, for the message (``--logger`` or ``agent.logger``).

    Raises:
        UserError: an unknown logger, a writer class that does not resolve, its package not installed, or no
            credentials for its service.
    """
    kind = _kind(logger, field)
    shown = f"{field} {logger}" if isinstance(logger, str) else field
    if kind == "wandb":
        if importlib.util.find_spec("wandb") is None:
            raise UserError(
                f"{shown}: the wandb package is not installed (install redline's extra: uv sync --extra wandb, or "
                "pip install wandb; or use --logger tensorboard)"
            )
        if not _wandb_credentials():
            raise UserError(
                f"{shown}: no W&B credentials (run `wandb login` or set WANDB_API_KEY; WANDB_MODE=offline logs "
                "locally without them)"
            )
    elif kind == "neptune":
        if importlib.util.find_spec("neptune") is None:
            raise UserError(f"{shown}: the neptune package is not installed (pip install neptune; or use --logger "
                            "tensorboard)")  # fmt: skip
        missing = [name for name in ("NEPTUNE_API_TOKEN", "NEPTUNE_USERNAME") if not os.environ.get(name)]
        if missing:
            raise UserError(f"{shown}: no Neptune credentials (set {' and '.join(missing)})")
    return kind


def _kind(logger: Any, field: str) -> str:
    if isinstance(logger, str):
        if logger not in LOGGERS:
            raise UserError(f"{field}: unknown logger '{logger}' (valid: {', '.join(LOGGERS)})")
        return logger
    if not isinstance(logger, dict) or not isinstance(logger.get("class_name"), str):
        raise UserError(f"{field}: must be one of {', '.join(LOGGERS)} or a dict with a 'class_name', got {logger!r}")
    # heavy: rsl_rl's utils load its log writers (seconds)
    from rsl_rl.utils import NeptuneLogWriter, WandbLogWriter, resolve_callable

    try:
        cls = resolve_callable(logger["class_name"])
    except (ImportError, AttributeError, ValueError) as exc:
        raise UserError(f"{field}: class_name '{logger['class_name']}' does not resolve ({exc})") from None
    if isinstance(cls, type) and issubclass(cls, WandbLogWriter):
        return "wandb"
    if isinstance(cls, type) and issubclass(cls, NeptuneLogWriter):
        return "neptune"
    return "custom"


def _wandb_credentials() -> bool:
    """W&B can start a run: offline or disabled, or an API key in the environment, in ``.netrc`` (``wandb login``)
    or in a settings file."""
    if os.environ.get("WANDB_MODE", "").lower() in _OFFLINE_MODES or os.environ.get("WANDB_DISABLED", "") == "true":
        return True
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return True
    host = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname or "api.wandb.ai"
    path = Path(os.environ.get("NETRC") or "~/.netrc").expanduser()
    try:
        if path.is_file() and netrc.netrc(path).authenticators(host):
            return True
    except (netrc.NetrcParseError, OSError):
        pass
    config_dir = Path(os.environ.get("WANDB_CONFIG_DIR") or "~/.config/wandb").expanduser()
    for settings in (config_dir / "settings", Path("wandb") / "settings"):  # `wandb offline` writes the second
        parser = configparser.ConfigParser()
        try:
            parser.read(settings)
        except configparser.Error:
            continue
        section = parser["default"] if parser.has_section("default") else {}
        if section.get("mode", "").lower() in _OFFLINE_MODES or section.get("api_key"):
            return True
    return False


def open_writer(run_dir: Path, train_cfg: dict | None = None, env_cfg: Any = None) -> Any:
    """The writer ``train_cfg["logger"]`` names, built as rsl_rl's ``Logger.init_logging_writer`` builds it.

    Args:
        run_dir: the run folder (TensorBoard events; W&B and Neptune name their run after it).
        train_cfg: rsl_rl's runner config (``logger``, ``wandb_project``, ``neptune_project``); None: TensorBoard.
        env_cfg: the env config, uploaded with ``train_cfg`` to W&B or Neptune.

    Raises:
        UserError: the service refused to start a run (one line; checked before the simulator where possible).
    """
    # heavy: torch, not before the CLI has parsed
    from torch.utils.tensorboard import SummaryWriter

    logger = "tensorboard" if train_cfg is None else train_cfg.get("logger", "tensorboard")
    if logger == "tensorboard":
        return SummaryWriter(log_dir=str(run_dir), flush_secs=10)
    # heavy: rsl_rl's utils load its log writers (seconds)
    from rsl_rl.utils import LogWriter, resolve_class

    assert train_cfg is not None
    if isinstance(logger, str):  # Isaac Lab's names -> rsl_rl's dict form (what its deprecated aliases map to)
        names = {"wandb": ("WandbLogWriter", "wandb_project"), "neptune": ("NeptuneLogWriter", "neptune_project")}
        class_name, project_key = names[logger]
        logger = {"class_name": class_name, "project_name": train_cfg.get(project_key)}
    writer_class, kwargs = resolve_class(logger)
    try:
        writer = writer_class(log_dir=str(run_dir), **kwargs)
    except Exception as exc:  # W&B / Neptune raise their own types; the user gets one line naming the option
        raise start_error(logger, exc) from exc
    if isinstance(writer, LogWriter):  # rsl_rl's store_config reads the env config through to_dict()
        env_dict = env_cfg.to_dict() if hasattr(env_cfg, "to_dict") else dict(env_cfg or {})
        writer.store_config(SimpleNamespace(to_dict=lambda: env_dict), train_cfg)
    return writer


def purge_from(writer: Any, step: int) -> None:
    """Mark in ``writer``'s TensorBoard events that the run (re)starts at ``step``, as TensorBoard's own
    ``SummaryWriter(purge_step=step)`` does: TensorBoard then drops the events of step ``step`` and after that the
    folder's earlier event files hold (those an interrupted attempt logged after its checkpoint, of iterations the
    continued run does again). A writer without TensorBoard events (a custom ``LogWriter``) is left alone."""
    file_writer = getattr(writer, "file_writer", None)  # SummaryWriter's, and W&B's / Neptune's (its subclasses)
    if file_writer is not None:
        file_writer.add_event(Event(step=step, session_log=SessionLog(status=SessionLog.START)))


def start_error(logger: Any, exc: Exception) -> UserError:
    """The one-line error for a log writer whose service refused to start a run (``exc``)."""
    name = logger["class_name"] if isinstance(logger, dict) else logger
    detail = (str(exc).strip().splitlines() or [type(exc).__name__])[-1].strip()[:200]
    return UserError(f"agent.logger: {name} could not start a run ({detail})")


class Clip(Protocol):
    """A finished training clip (:class:`redline.media.training_clips.TrainingVideo` makes them)."""

    @property
    def path(self) -> Path:
        """The mp4."""
        ...

    @property
    def fps(self) -> int:
        """Its frame rate [frames / s]."""
        ...

    def frames(self) -> torch.Tensor:
        """Its frames, ``(T, H, W, 3)`` uint8 RGB (decoded on demand)."""
        ...


def log_video(writer: Any, clip: Clip, iteration: int) -> None:
    """Log a finished training clip: uploaded through an rsl_rl ``LogWriter`` (W&B), and into TensorBoard as a video
    when moviepy (TensorBoard's encoder) is installed, else as its file path (said once on stderr)."""
    # heavy: rsl_rl's utils load its log writers (seconds)
    from rsl_rl.utils import LogWriter

    if isinstance(writer, LogWriter):
        writer.save_video(clip.path, iteration)
    if not hasattr(writer, "add_video"):
        return
    if importlib.util.find_spec("moviepy") is not None:
        video = clip.frames().permute(0, 3, 1, 2).unsqueeze(0)  # (1, T, 3, H, W), as add_video takes it
        writer.add_video("Video/train", video, iteration, fps=clip.fps)
        return
    global _told_moviepy
    if not _told_moviepy:
        print(
            "[redline] video: TensorBoard shows videos only with moviepy installed (pip install moviepy); logging "
            "each clip's path as text (Video/train)",
            file=sys.stderr,
            flush=True,
        )
        _told_moviepy = True
    writer.add_text("Video/train", str(clip.path), iteration)


_told_moviepy = False
"""The moviepy notice was printed (once per process)."""
