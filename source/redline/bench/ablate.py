"""Run ``redline train`` with fields of the redline learner's :class:`~redline.learning.PPOConfig` set (ablations).

``python -m redline.bench.ablate reshuffle_each_epoch=false -- train --task Redline-Cartpole ...`` trains exactly as
``redline train --task Redline-Cartpole ... --nproc 1`` except that every :class:`PPOConfig` the agent config yields
gets the given fields on top (PPOConfig fields such as the ablation switches have no place in Isaac Lab's agent
configs, so ``agent.algorithm.*`` overrides cannot reach them). The arguments after ``--`` are read as ``redline
train`` reads them (:func:`redline.options.add_train_arguments`) and handed to the train command
(:func:`redline.commands.train.train`) in this process, where the fields are set: torchrun's workers would not get
them, so ``--nproc`` and ``--distributed`` are refused. ``redline bench train --learner-config`` uses it.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from typing import Any

from redline import options
from redline.caches import check_caches
from redline.commands.train import train
from redline.errors import ExpectedExit, OutputError, UserError
from redline.host import tune_allocator
from redline.learning import PPOConfig
from redline.options import TrainOptions


def parse_fields(items: Sequence[str]) -> dict[str, Any]:
    """``["name=value", ...]`` -> PPOConfig fields; values are JSON (``true``, ``4``, ``"fp32"``) or plain strings.

    Raises:
        UserError: an item without ``=`` or a name that is not a PPOConfig field (one line naming it).
    """
    known = {f.name for f in dataclasses.fields(PPOConfig)} - {"actor", "critic"}
    fields: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or name not in known:
            raise UserError(
                f"--learner-config: '{item}' is not PPOConfig_FIELD=VALUE (fields: {', '.join(sorted(known))})"
            )
        try:
            fields[name] = json.loads(text.lower() if text.lower() in ("true", "false") else text)
        except json.JSONDecodeError:
            fields[name] = text
    return fields


def train_options(argv: Sequence[str]) -> TrainOptions:
    """``train ARGS`` -> the train command's options, read as ``redline train`` reads them; one process only.

    Raises:
        UserError: not ``train ...``, a bad option or override (as ``redline train`` says it), ``--nproc`` or
            ``--distributed``.
    """
    if not argv or argv[0] != "train":
        raise UserError(f"expected 'train' after '--', got {' '.join(argv) or 'nothing'}")
    parser = options.Parser(prog="redline train")
    options.add_train_arguments(parser)
    args, extra = parser.parse_known_args(list(argv[1:]))
    if args.nproc is not None or args.distributed:
        raise UserError(
            "--nproc/--distributed: an ablation trains in one process (torchrun's workers would not get the fields)"
        )
    return options.from_arguments(TrainOptions, args, extra)


def main(argv: Sequence[str]) -> int:
    """``FIELD=VALUE ... -- train <redline train arguments>``: the train command with the fields applied; its exit
    status (bad input: one line, 2)."""
    argv = list(argv)
    if "--" not in argv:
        print("usage: python -m redline.bench.ablate FIELD=VALUE ... -- train --task ...", file=sys.stderr)
        return 2
    split = argv.index("--")
    try:
        fields = parse_fields(argv[:split])
        opts = train_options(argv[split + 1 :])
    except UserError as exc:
        print(f"redline ablate: error: {exc}", file=sys.stderr)
        return 2
    base = PPOConfig.from_rsl_rl.__func__  # type: ignore[attr-defined]

    def from_rsl_rl(cls: type[PPOConfig], runner_cfg: Any, precision: str | None = None, **kw: Any) -> PPOConfig:
        return base(cls, runner_cfg, precision, **{**fields, **kw})

    PPOConfig.from_rsl_rl = classmethod(from_rsl_rl)  # type: ignore[method-assign,assignment]
    tune_allocator()  # as redline train does, before the first large tensor (redline.host)
    try:
        check_caches()  # Warp's kernel cache and the asset root, before Isaac Lab is imported (redline.caches)
        train(opts)
    except ExpectedExit as exc:  # bad input (2), an unwritable output (74), a stop signal (128 + signal)
        print(f"redline train: {'error: ' if isinstance(exc, UserError | OutputError) else ''}{exc}", file=sys.stderr)
        return exc.exit_status
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
