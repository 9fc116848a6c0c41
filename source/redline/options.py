"""The ``redline`` commands' options, declared once: frozen dataclasses whose field docstrings are the CLI's help.

:class:`RunOptions` holds what every run has (``redline train`` and ``redline play``), embedded as ``run`` in
:class:`TrainOptions` and :class:`PlayOptions`. The argparse arguments are generated from the fields
(:func:`add_arguments`): ``--<field>``, the help from the field's docstring, a ``bool`` as a switch, and the
argparse value type and any CLI-only detail from the field's ``metadata`` (:func:`option`). :func:`from_arguments`
builds the options back from the parsed arguments, :func:`to_argv` writes them as a command line (the torchrun
workers' command, :mod:`redline.commands.launch`). The argparse value types here reject a bad value with a message
argparse prefixes with the option's name (``--num_envs: must be a positive integer, got '-4'``).

Light on purpose (no torch, no Isaac Lab): the CLI builds its parser from these classes before anything heavy is
imported.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import itertools
import re
import textwrap
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

from redline.errors import UserError
from redline.outputs.folders import DEFAULT_LOG_ROOT
from redline.validation import MAX_SEED, check_precision


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
    from redline.seeding import STRATEGIES  # heavy (torch): imported only when --seeding is given

    if text not in STRATEGIES:
        raise argparse.ArgumentTypeError(f"unknown strategy '{text}' (valid: {', '.join(STRATEGIES)})")
    return text


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (no usage block) and raise :class:`UserError`."""

    def error(self, message: str) -> NoReturn:
        raise UserError(message)


def option(parse: Callable[[str], Any] | None = None, *, cli: bool = True, **field: Any) -> Any:
    """A dataclass field with its CLI details in ``metadata``.

    Args:
        parse: the argparse ``type`` turning the option's text into the value (it raises
            ``argparse.ArgumentTypeError`` with the valid values).
        cli: whether the field is an option (False: set otherwise, e.g. the trailing ``key=value`` overrides).
        field: :func:`dataclasses.field`'s arguments (``default=...``); ``cli_default=argparse.SUPPRESS`` leaves the
            option out of the parsed namespace when it is not given, so the dataclass default applies.
    """
    cli_default = field.pop("cli_default", dataclasses.MISSING)
    return dataclasses.field(metadata={"parse": parse, "cli": cli, "cli_default": cli_default}, **field)


VIDEO_LENGTH, VIDEO_INTERVAL = 200, 2000
"""``redline train --video``: Isaac Lab's ``--video_length`` and ``--video_interval`` defaults [env steps]."""


ALGORITHMS = {"ppo": "rsl_rl_cfg_entry_point", "sac": "rsl_rl_sac_cfg_entry_point", "td3": "rsl_rl_sac_cfg_entry_point"}
"""``redline train --algorithm``: each algorithm's agent entry point in a task's registration (PPO: rsl_rl's own key;
SAC and TD3: :data:`redline_tasks.registration.SAC_ENTRY_POINT`, the off-policy learner :mod:`redline.learning.sac`,
TD3 with :data:`ALGORITHM_OVERRIDES`)."""
OFF_POLICY = ("sac", "td3")
"""The ``--algorithm`` values trained by the off-policy learner."""
ALGORITHM_OVERRIDES: dict[str, tuple[str, ...]] = {"td3": ("agent.algorithm.variant=td3",)}
"""What an ``--algorithm`` sets in the agent config, before the command's own overrides."""


def agent_overrides(algorithm: str, run: RunOptions) -> RunOptions:
    """``run`` with ``algorithm``'s :data:`ALGORITHM_OVERRIDES` before its own overrides."""
    extra = ALGORITHM_OVERRIDES.get(algorithm, ())
    return dataclasses.replace(run, overrides=(*extra, *run.overrides)) if extra else run


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunOptions:
    """What every run has: ``redline train``'s and ``redline play``'s options (``TrainOptions.run``,
    ``PlayOptions.run``), and what :func:`redline.envs.prepare.prepare_env` builds a task's configs from."""

    task: str
    """registered task id, e.g. Redline-Cartpole (see `redline list`); play uses its -Play twin when one is
    registered"""
    num_envs: int | None = option(positive_int, default=None)
    """parallel envs (default: the task's default for the device: cpu_num_envs on the CPU, the agent config's
    where it sets one, the play config's for play); with train's automatic one-process-per-core arrangement on the
    CPU, the total over the processes"""
    device: str | None = None
    """cpu | cuda | cuda:N (default: cuda:0 if present, else cpu)"""
    seed: int = option(seed, default=42)
    """seed of the env, its per-env streams and the learner (redline.seeding.plan) (default: 42)"""
    seeding: str | None = option(strategy, default=None)
    """shared | per_env | eval (default: the task's; per_env to train, eval in -Play twins)"""
    log_root: Path = option(Path, default=DEFAULT_LOG_ROOT)
    """folder holding <experiment>/<run>/, where play's `latest` looks (default: logs/redline)"""
    overrides: tuple[str, ...] = option(cli=False, default=())
    """Hydra-style overrides, ``env.<path>=<value>`` / ``agent.<path>=<value>`` / ``physics=<preset>``: the
    tokens after the options"""

    @property
    def physics(self) -> str | None:
        """The physics preset a ``physics=<preset>`` override chooses (the last one), or None: the default."""
        chosen = [t.partition("=")[2] for t in self.overrides if t.partition("=")[0] == "physics"]
        return chosen[-1] if chosen else None


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainOptions:
    """What ``redline train`` was asked to do."""

    run: RunOptions
    """The run's task, env count, device, seed, seeding, log root and overrides."""
    max_iterations: int | None = option(positive_int, default=None)
    """learning iterations (default: the agent config's max_iterations)"""
    algorithm: str = "ppo"
    """ppo (default) | sac (redline's off-policy SAC, the task's rsl_rl_sac_cfg_entry_point agent config; on the
    redline runner) | td3 (its FastTD3 variant: the same agent config with agent.algorithm.variant=td3)"""
    learner: str = "redline"
    """redline (default) | rsl_rl (rsl_rl 5.5.1's OnPolicyRunner, the anchor redline is measured against)"""
    precision: str | None = None
    """redline learner: auto (bf16 on CUDA GPUs that support it, else fp32) | bf16 | fp32 (default: the agent
    config's algorithm.use_mixed_precision: bf16 when true, else auto)"""
    capture: str = "auto"
    """redline learner: auto (CUDA graphs on a CUDA device, one process) | on | off: the update's capture
    (redline.learning.capture)"""
    resume: str | None = None
    """latest | RUN_DIR | PATH: continue from a checkpoint at its iteration + 1 (an interrupted run of this command
    in its own folder to its planned end; anything else as a new run of max_iterations more) | never: a new run
    (default: continue this command's unfinished run if there is one, else start fresh;
    redline.commands.train_resume)"""
    run_name: str | None = option(run_name, default=None)
    """suffix of the run folder name (one folder-name component)"""
    profile: bool = False
    """redline learner: a torch.profiler Chrome trace of one iteration to <run>/profile/trace.json"""
    logger: str | None = None
    """tensorboard | wandb (needs the wandb extra) | neptune: rsl_rl's log writer; a missing package or
    credentials is an error, never a fallback (default: the agent config's logger)"""
    log_project_name: str | None = None
    """W&B / Neptune project (default: the agent config's wandb_project / neptune_project)"""
    video: bool = False
    """record clips of training (Newton's Warp ray tracer, headless; the first 4 envs) to <run>/videos/train/ and
    log them to the logger"""
    video_length: int = option(positive_int, default=VIDEO_LENGTH, cli_default=argparse.SUPPRESS)
    """--video: env steps per clip (Isaac Lab's 200)"""
    video_interval: int = option(positive_int, default=VIDEO_INTERVAL, cli_default=argparse.SUPPRESS)
    """--video: env steps from one clip's start to the next, the first at step 0 (Isaac Lab's 2000)"""
    nproc: int | None = option(positive_int, default=None)
    """start N local processes under torchrun (redline.commands.launch); --num_envs is then per process"""
    distributed: bool = False
    """join torchrun's process group, one rank per process (torchrun ... -m redline.cli train --distributed)"""
    dist_timeout: float = option(timeout_seconds, default=120.0)
    """process-group timeout [s]: a rank that stops answering for this long is reported lost and training stops
    (120)"""
    no_memory_check: bool = False
    """start even when the memory estimate (redline.envs.memory) exceeds what this host / GPU has available"""

    def __post_init__(self) -> None:
        if self.precision is not None:
            check_precision(self.precision, "--precision")
        if self.algorithm not in ALGORITHMS:
            raise UserError(f"--algorithm: unknown algorithm '{self.algorithm}' (valid: {', '.join(ALGORITHMS)})")
        if self.algorithm in OFF_POLICY and self.learner != "redline":  # untested: stock isaaclab train runs that pair
            raise UserError(
                f"--learner: --algorithm {self.algorithm} runs on the redline runner (valid: --learner redline; "
                "rsl_rl's OnPolicyRunner with SAC: isaaclab train --agent rsl_rl_sac_cfg_entry_point)"
            )
        fixed = {t.partition("=")[0] for t in ALGORITHM_OVERRIDES.get(self.algorithm, ())}  # what the token sets
        clash = [key for key in (t.partition("=")[0] for t in self.run.overrides) if key in fixed]
        if clash:
            raise UserError(
                f"{clash[0]}: set by --algorithm {self.algorithm} (valid: leave it out, or --algorithm sac with it)"
            )
        if self.profile and self.learner != "redline":
            raise UserError(f"--profile: only with --learner redline (got --learner {self.learner})")

    @property
    def distributed_or_nproc(self) -> bool:
        """A multi-process run: a torchrun worker, or the command that starts them."""
        return self.distributed or self.nproc is not None


@dataclasses.dataclass(frozen=True, kw_only=True)
class PlayOptions:
    """What ``redline play`` was asked to do."""

    run: RunOptions
    """The run's task, env count, device, seed, seeding, log root and overrides."""
    checkpoint: str = "latest"
    """latest (newest run of the task's experiment) | RUN_DIR | PATH to model_<it>.pt"""
    steps: int = option(positive_int, default=500)
    """env steps to run before stopping (default: 500)"""
    video: bool = False
    """record an mp4 of the first envs headless to <run>/videos/ (Newton's Warp ray tracer); num_envs then
    defaults to the number of envs shown"""
    viz: str | None = None
    """open a viewer: newton (Newton's OpenGL viewer; needs a display) | kit (needs Isaac Sim) (default:
    headless)"""


def _fields(cls: type) -> Iterator[tuple[type, dataclasses.Field, Any]]:
    """``(owner, field, type)`` for each field of ``cls``, the fields of an embedded options dataclass in its place."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            yield from _fields(hints[f.name])
        else:
            yield cls, f, hints[f.name]


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings of ``cls``'s fields (the string right below each), whitespace folded to spaces."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for node, after in itertools.pairwise(body):
        is_doc = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and is_doc:
            docs[node.target.id] = " ".join(str(after.value.value).split())  # type: ignore[attr-defined]
    return docs


def help_of(cls: type, name: str) -> str:
    """The help text of ``cls``'s option ``name``: its docstring, reST markup dropped."""
    return re.sub(r":\w+:`~?([^`]+)`|``([^`]+)``", lambda m: m[1] or m[2], field_docs(cls)[name])


def add_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """``--<field>`` options for each field of ``cls`` (an options dataclass, its embedded ones first), in order."""
    for owner, f, kind in _fields(cls):
        if not f.metadata.get("cli", True):
            continue
        name, text = f"--{f.name}", help_of(owner, f.name).replace("%", "%%")
        if f.default is dataclasses.MISSING:
            parser.add_argument(name, required=True, help=text)
        elif kind is bool:
            parser.add_argument(name, action="store_true", help=text)
        else:
            cli_default = f.metadata.get("cli_default", dataclasses.MISSING)
            default = f.default if cli_default is dataclasses.MISSING else cli_default
            parse: Any = f.metadata.get("parse")  # None: the text itself
            parser.add_argument(name, type=parse, default=default, help=text)


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """``redline train``'s options (the run's, then its own): the CLI and :mod:`redline.bench.ablate` read them."""
    add_arguments(parser, TrainOptions)


def overrides(extra: list[str]) -> tuple[str, ...]:
    """The tokens left after the options: Hydra-style ``key=value`` overrides; anything else is a
    :class:`UserError`."""
    for token in extra:
        if token.startswith("-") or "=" not in token:
            raise UserError(f"unrecognized argument '{token}' (options are --name value; overrides are key=value)")
    return tuple(extra)


def from_arguments[T](cls: type[T], args: argparse.Namespace, extra: list[str]) -> T:
    """``cls`` (an options dataclass) from the parsed arguments of its fields' names, the trailing ``key=value``
    tokens as the overrides; a field the namespace lacks keeps its default."""
    parsed = {**vars(args), "overrides": overrides(extra)}
    hints = typing.get_type_hints(cls)
    values = {
        f.name: from_arguments(hints[f.name], args, extra)
        if dataclasses.is_dataclass(hints[f.name])
        else parsed[f.name]
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.name in parsed or dataclasses.is_dataclass(hints[f.name])
    }
    make: Any = cls  # a dataclass whose fields mirror the parsed arguments
    return make(**values)


def to_argv(opts: Any) -> list[str]:
    """``opts`` (an options dataclass) as the command line that :func:`from_arguments` reads back into equal options:
    ``--<field>=<value>`` for each option away from its default, a switch for a true ``bool``, then the
    overrides."""
    argv: list[str] = []
    values = _values(opts)
    for _, f, kind in _fields(type(opts)):
        value = values[f.name]
        if not f.metadata.get("cli", True) or value == f.default:
            continue
        argv.append(f"--{f.name}" if kind is bool else f"--{f.name}={value}")  # '=': a value may start with '-'
    return [*argv, *values.get("overrides", ())]


def _values(opts: Any) -> dict[str, Any]:
    """The values of ``opts``'s fields, an embedded options dataclass's in its place."""
    values: dict[str, Any] = {}
    for f in dataclasses.fields(opts):
        value = getattr(opts, f.name)
        values |= _values(value) if dataclasses.is_dataclass(value) else {f.name: value}
    return values
