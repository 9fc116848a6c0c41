"""The ``redline`` commands' options: argparse value types shared by the commands and the benches, each rejecting a bad
value with a message argparse prefixes with the option's name (``--num_envs: must be a positive integer, got '-4'``),
and the arguments of a run and of ``redline train``, declared once for the CLI and for
:mod:`redline.bench.ablate`."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from redline.errors import UserError
from redline.validation import MAX_SEED


def _positive[N: (int, float)](cast: Callable[[str], N], kind: str) -> Callable[[str], N]:
    """An argparse ``type`` accepting values of ``cast`` above zero."""

    def parse(text: str) -> N:
        try:
            value = cast(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a positive {kind}, got '{text}'") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be a positive {kind}, got '{text}'")
        return value

    return parse


positive_int = _positive(int, "integer")
"""An integer > 0."""
positive_float = _positive(float, "number")
"""A number > 0."""

MAX_TIMEOUT_S = 7 * 24 * 3600.0
"""Longest process-group timeout ``--dist_timeout`` takes [s] (a week; ``inf`` and ``1e300`` overflow the
``timedelta`` torch.distributed converts it to)."""


def timeout_seconds(text: str) -> float:
    """A finite number of seconds in (0, :data:`MAX_TIMEOUT_S`]."""
    value = positive_float(text)
    if not value <= MAX_TIMEOUT_S:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds in (0, {MAX_TIMEOUT_S:g}] (a week), got '{text}'"
        )
    return value


def seed(text: str) -> int:
    """An integer seed in [0, 2^32 - 1] (numpy's range, which Isaac Lab's ``configure_seed`` uses)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, {MAX_SEED}], got '{text}'")
    return value


def run_name(text: str) -> str:
    """A run folder suffix: one path component (no separators, not ``.``/``..``), printable, at most 100 characters."""
    separators = any(c in text for c in "/\\\0")
    if not text or len(text) > 100 or text in (".", "..") or separators or not text.isprintable():
        raise argparse.ArgumentTypeError(
            f"must be one folder-name component (no '/', not '..', printable, <= 100 characters), got {text!r}"
        )
    return text


def strategy(text: str) -> str:
    """A seeding strategy name (:data:`redline.seeding.STRATEGIES`)."""
    from redline.seeding import STRATEGIES

    if text not in STRATEGIES:
        raise argparse.ArgumentTypeError(f"unknown strategy '{text}' (valid: {', '.join(STRATEGIES)})")
    return text


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (no usage block) and raise :class:`UserError`."""

    def error(self, message: str) -> NoReturn:
        raise UserError(message)


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """The options every run has (``redline train`` and ``redline play``)."""
    p.add_argument("--task", required=True, help="registered task id, e.g. Redline-Cartpole (see `redline list`)")
    p.add_argument(
        "--num_envs",
        type=positive_int,
        default=None,
        help="parallel envs (default: the task's default for the device)",
    )
    p.add_argument("--device", default=None, help="cpu | cuda | cuda:N (default: cuda:0 if present, else cpu)")
    p.add_argument("--seed", type=seed, default=42, help="seed of the env and the learner (default: 42)")
    p.add_argument(
        "--seeding",
        type=strategy,
        default=None,
        help="shared | per_env | eval (default: the task's; per_env to train, eval in -Play twins)",
    )
    p.add_argument(
        "--log_root",
        type=Path,
        default=Path("logs") / "redline",
        help="folder holding <experiment>/<run>/ (default: logs/redline)",
    )


def add_train_arguments(train: argparse.ArgumentParser) -> None:
    """``redline train``'s options (the run's, then its own)."""
    add_run_arguments(train)
    train.add_argument("--max_iterations", type=positive_int, help="(agent config's)")
    train.add_argument("--learner", default="redline", help="redline (default) | rsl_rl (rsl_rl 5.5.1, the anchor)")
    train.add_argument(
        "--precision",
        default=None,
        help="auto (bf16 on capable CUDA GPUs, else fp32) | bf16 | fp32 (default: the agent config's "
        "algorithm.use_mixed_precision: bf16 when true, else auto)",
    )
    train.add_argument(
        "--capture", default="auto", help="auto (CUDA graphs on a GPU, one process) | on | off: the update's capture"
    )
    train.add_argument("--resume", help="latest | RUN_DIR | PATH: continue from a checkpoint at its iteration + 1")
    train.add_argument("--run_name", type=run_name, help="suffix of the run folder name (one folder-name component)")
    train.add_argument("--profile", action="store_true", help="Chrome trace of one iteration (profile/trace.json)")
    # Isaac Lab's rsl_rl train script's logging and video options
    train.add_argument(
        "--logger",
        default=None,
        help="tensorboard | wandb (needs the wandb extra) | neptune: rsl_rl's log writer (default: agent.logger)",
    )
    train.add_argument("--log_project_name", default=None, help="W&B / Neptune project (agent.wandb_project, ...)")
    train.add_argument("--video", action="store_true", help="record clips of training to <run>/videos/train/")
    train.add_argument(
        "--video_length", type=positive_int, default=argparse.SUPPRESS, help="env steps per clip (Isaac Lab's 200)"
    )
    train.add_argument(
        "--video_interval", type=positive_int, default=argparse.SUPPRESS, help="env steps between clips (2000)"
    )
    # data-parallel training: torchrun ranks, gloo on the CPU, NCCL on CUDA GPUs
    train.add_argument("--nproc", type=positive_int, help="start N local processes under torchrun")
    train.add_argument("--distributed", action="store_true", help="join torchrun's process group (one rank)")
    train.add_argument("--dist_timeout", type=timeout_seconds, default=120.0, help="[s] (120)")
    train.add_argument(
        "--no_memory_check",
        action="store_true",
        help="start even when the memory estimate exceeds what this host / GPU has available",
    )


def overrides(extra: list[str]) -> tuple[str, ...]:
    """The tokens left after the options: Hydra-style ``key=value`` overrides; anything else is a
    :class:`UserError`."""
    for token in extra:
        if token.startswith("-") or "=" not in token:
            raise UserError(f"unrecognized argument '{token}' (options are --name value; overrides are key=value)")
    return tuple(extra)


def from_arguments[T](cls: type[T], args: argparse.Namespace, extra: list[str]) -> T:
    """``cls`` (an options dataclass) from the parsed arguments of the same names plus the overrides."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    make: Any = cls  # a dataclass whose fields mirror the parsed arguments
    return make(**{k: v for k, v in vars(args).items() if k in names}, overrides=overrides(extra))
