"""The CLI's argument lists stay what they were before the run options were declared once (issue 39).

``tests/data/cli_arguments.json`` was captured from :func:`redline.cli.build_parser` before the options moved into
dataclasses: for ``redline`` itself and each subcommand (``train``, ``play``, ``list``, ``report``, ``assets``, each
``bench <name>``), every option's strings, dest, default, nargs, required flag, type name, choices and action, in
order. Help texts are left out on purpose: they are generated from the options' docstrings now and may be worded
differently; ``--help`` itself is checked to still print. Regenerate (only for a deliberate CLI change) with
``python -m tests.test_cli_arguments > tests/data/cli_arguments.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from redline.cli import BENCHES, build_parser, main

FIXTURE = Path(__file__).parent / "data" / "cli_arguments.json"
"""The argument lists captured before the change."""

COMMANDS = ["train", "play", "list", "report", "assets", *(f"bench {name}" for name in BENCHES)]
"""Each subcommand, by the words that select it."""


def _plain(value: Any) -> Any:
    """``value`` as JSON can hold it (argparse's SUPPRESS marker and paths as strings)."""
    if value is argparse.SUPPRESS:
        return "==SUPPRESS=="
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value if isinstance(value, int | float | str | bool | type(None)) else str(value)


def describe(parser: argparse.ArgumentParser) -> list[dict[str, Any]]:
    """``parser``'s own options, in order, without their help."""
    return [
        {
            "option_strings": list(a.option_strings),
            "dest": a.dest,
            "default": _plain(a.default),
            "nargs": a.nargs,
            "required": a.required,
            "type": getattr(a.type, "__name__", None) if a.type is not None else None,
            "choices": list(a.choices) if a.choices is not None else None,
            "action": type(a).__name__,
        }
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
    ]


def _subparser(parser: argparse.ArgumentParser, words: list[str]) -> argparse.ArgumentParser:
    for word in words:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


def capture() -> dict[str, list[dict[str, Any]]]:
    """Every subcommand's argument list (and the top-level parser's, under ``redline``)."""
    lists = {"redline": describe(build_parser())}
    for command in COMMANDS:
        words = command.split()
        lists[command] = describe(_subparser(build_parser(words), words))
    return lists


@pytest.mark.parametrize("command", ["redline", *COMMANDS])
def test_argument_list_is_unchanged(command: str) -> None:
    assert capture()[command] == json.loads(FIXTURE.read_text())[command]


@pytest.mark.parametrize("command", [["train"], ["play"], ["bench", "learner"]])
def test_help_still_prints(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*command, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: redline {' '.join(command)}")
    if command[0] in ("train", "play"):
        assert "--num_envs" in text and "--seed" in text and "--log_root" in text


if __name__ == "__main__":
    json.dump(capture(), sys.stdout, indent=1, sort_keys=True)
    print()
