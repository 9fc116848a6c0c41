"""The run options declared once: the CLI generated from the dataclasses, and options -> argv -> options round trips
(the torchrun workers' command is written this way)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from redline import options
from redline.cli import build_parser
from redline.errors import UserError
from redline.options import PlayOptions, RunOptions, TrainOptions, from_arguments, help_of, to_argv

RUNS = [
    RunOptions(task="Redline-Cartpole"),
    RunOptions(
        task="Redline-Go1-Flat",
        num_envs=512,
        device="cpu",
        seed=0,
        seeding="per_env",
        log_root=Path("-logs/x y=z"),
        overrides=("env.sim.dt=0.01", "physics=mujoco_cpu"),
    ),
]
"""A run with every default, and one with none."""


def _read(command: str, argv: list[str]) -> object:
    args, extra = build_parser([command]).parse_known_args([command, *argv])
    return from_arguments(TrainOptions if command == "train" else PlayOptions, args, extra)


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"max_iterations": 3, "learner": "rsl_rl", "precision": "fp32", "capture": "off", "resume": "latest"},
        {"run_name": "-a b", "profile": True, "logger": "wandb", "log_project_name": "p", "video": True},
        {"video_length": 7, "video_interval": 9, "distributed": True, "dist_timeout": 5.5, "no_memory_check": True},
        {"nproc": 2},
    ],
)
def test_train_options_survive_the_command_line(run: RunOptions, extra: dict) -> None:
    opts = TrainOptions(run=run, **extra)
    assert _read("train", to_argv(opts)) == opts


@pytest.mark.parametrize("run", RUNS)
def test_play_options_survive_the_command_line(run: RunOptions) -> None:
    for opts in (PlayOptions(run=run), PlayOptions(run=run, checkpoint="logs/x", steps=9, video=True, viz="kit")):
        assert _read("play", to_argv(opts)) == opts


def test_options_are_passed_by_name_only() -> None:
    with pytest.raises(TypeError):
        RunOptions("Redline-Cartpole")  # type: ignore[misc]


def test_every_option_has_its_docstring_as_help() -> None:
    """Help comes from the field docstrings, reST markup dropped; the run's options read the same in train and play."""
    for cls in (RunOptions, TrainOptions, PlayOptions):
        docs = options.field_docs(cls)
        assert set(docs) == {f.name for f in dataclasses.fields(cls)}, cls
    assert help_of(RunOptions, "device") == "cpu | cuda | cuda:N (default: cuda:0 if present, else cpu)"
    assert "``" not in help_of(RunOptions, "overrides")
    train_help = build_parser(["train"])._subparsers._group_actions[0].choices["train"].format_help()  # type: ignore[union-attr]
    assert "seed of the env, its per-env streams and the learner" in " ".join(train_help.split())


def test_the_physics_preset_is_the_last_physics_override() -> None:
    assert RunOptions(task="T").physics is None
    assert RunOptions(task="T", overrides=("physics=a", "env.x=1", "physics=b")).physics == "b"


def test_bad_options_are_one_line_naming_the_field() -> None:
    with pytest.raises(UserError, match=r"^--precision: unknown precision 'fp8' \(valid: auto, bf16, fp32\)$"):
        TrainOptions(run=RUNS[0], precision="fp8")
    with pytest.raises(UserError, match=r"^--profile: only with --learner redline"):
        TrainOptions(run=RUNS[0], profile=True, learner="rsl_rl")


def test_algorithm_is_ppo_by_default_and_sac_by_token() -> None:
    from redline.options import ALGORITHMS

    assert TrainOptions(run=RUNS[0]).algorithm == "ppo"
    assert TrainOptions(run=RUNS[0], algorithm="sac").algorithm == "sac"
    with pytest.raises(UserError, match=r"^--algorithm: unknown algorithm 'ddpg' \(valid: ppo, sac, td3\)$"):
        TrainOptions(run=RUNS[0], algorithm="ddpg")
    assert TrainOptions(run=RUNS[0], algorithm="sac", capture="on").capture == "on"  # SAC's step is captured too
    with pytest.raises(UserError, match=r"^--learner: --algorithm sac runs on the redline runner"):
        TrainOptions(run=RUNS[0], algorithm="sac", learner="rsl_rl")
    from redline_tasks.registration import SAC_ENTRY_POINT

    assert ALGORITHMS["sac"] == SAC_ENTRY_POINT  # the token picks the entry point every task registers


def test_td3_is_the_off_policy_config_with_its_variant_first() -> None:
    """``--algorithm td3``: the SAC entry point with ``agent.algorithm.variant=td3`` before the command's overrides;
    an override of the variant beside it is refused in one line (it would contradict the token)."""
    from redline.options import ALGORITHMS, agent_overrides

    run = dataclasses.replace(RUNS[0], overrides=("agent.algorithm.batch_size=64",))
    assert ALGORITHMS["td3"] == ALGORITHMS["sac"]
    assert agent_overrides("td3", run).overrides == ("agent.algorithm.variant=td3", "agent.algorithm.batch_size=64")
    assert agent_overrides("sac", run) is run and agent_overrides("ppo", run) is run
    with pytest.raises(UserError, match=r"^--learner: --algorithm td3 runs on the redline runner"):
        TrainOptions(run=RUNS[0], algorithm="td3", learner="rsl_rl")
    clash = dataclasses.replace(RUNS[0], overrides=("agent.algorithm.variant=sac",))
    with pytest.raises(UserError, match=r"^agent\.algorithm\.variant: set by --algorithm td3 \(valid: leave it out"):
        TrainOptions(run=clash, algorithm="td3")
    assert TrainOptions(run=clash, algorithm="sac").algorithm == "sac"  # the stock way to ask for a variant
