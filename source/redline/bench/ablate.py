"""Run ``redline train`` with fields of the redline learner's :class:`~redline.learning.PPOConfig` set (ablations).

``python -m redline.bench.ablate reshuffle_each_epoch=false -- train --task Redline-Cartpole ...`` trains exactly as
``redline train --task Redline-Cartpole ...`` except that every :class:`PPOConfig` the agent config yields gets the
given fields on top (PPOConfig fields such as the ablation switches have no place in Isaac Lab's agent configs, so
``agent.algorithm.*`` overrides cannot reach them). ``redline bench train --learner-config`` uses it.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from typing import Any

from redline.errors import UserError
from redline.learning import PPOConfig


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


def main(argv: Sequence[str]) -> int:
    """``FIELD=VALUE ... -- <redline arguments>``: run the redline CLI with the fields applied; its exit status."""
    argv = list(argv)
    if "--" not in argv:
        print("usage: python -m redline.bench.ablate FIELD=VALUE ... -- train --task ...", file=sys.stderr)
        return 2
    split = argv.index("--")
    try:
        fields = parse_fields(argv[:split])
    except UserError as exc:
        print(f"redline ablate: error: {exc}", file=sys.stderr)
        return 2
    base = PPOConfig.from_rsl_rl.__func__  # type: ignore[attr-defined]

    def from_rsl_rl(cls: type[PPOConfig], runner_cfg: Any, precision: str | None = None, **kw: Any) -> PPOConfig:
        return base(cls, runner_cfg, precision, **{**fields, **kw})

    PPOConfig.from_rsl_rl = classmethod(from_rsl_rl)  # type: ignore[method-assign,assignment]
    from redline.cli import main as redline_main

    return redline_main(argv[split + 1 :])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
