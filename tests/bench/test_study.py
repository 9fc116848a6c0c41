"""``redline bench train``: the study's commands, resume and ``study.json``, on fake runs (no simulator)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from redline.bench import study
from redline.bench.study import StudyOptions, run_study, train_command
from redline.bench.study_stats import summarize_run
from redline.errors import UserError
from tests.bench.test_study_stats import records

PRECISION_TOKEN = "agent.algorithm.use_mixed_precision=false"


def test_unknown_opponent_and_missing_target_are_refused() -> None:
    with pytest.raises(UserError, match="--vs: unknown learner 'sb3'"):
        StudyOptions(vs="sb3")
    with pytest.raises(UserError, match="--target: no target for Redline-Ant"):
        StudyOptions(tasks=("Redline-Cartpole", "Redline-Ant"))


def test_learners_alternate_seed_by_seed() -> None:
    plan = study.study_plan(StudyOptions(seeds=(1, 2, 3)))
    assert [learner for _, _, learner in plan] == ["redline", "rsl_rl", "rsl_rl", "redline", "redline", "rsl_rl"]


def _extras(command: list[str]) -> list[str]:
    """What follows ``--run_name <learner>`` in a ``train_command``: device, precision and override tokens."""
    return command[command.index("--run_name") + 2 :]


def test_a_comparison_gives_both_learners_the_same_env_physics_agent_and_precision() -> None:
    tokens = ("env.scene.num_envs=32", "physics=newton_mjwarp", "agent.algorithm.gamma=0.98")
    opts = StudyOptions(overrides=tokens, device="cpu")
    ours = train_command(opts, "Redline-Cartpole", "redline", 1)
    theirs = train_command(opts, "Redline-Cartpole", "rsl_rl", 1)
    assert ours == [
        *("train", "--task", "Redline-Cartpole", "--learner", "redline", "--seed", "1", "--max_iterations", "100"),
        *("--run_name", "redline", "--device", "cpu", "--precision", "fp32", "agent.save_interval=1000000", *tokens),
    ]
    # rsl_rl ignores --precision: its fp32 is its agent config's use_mixed_precision=false, stated, not assumed
    assert _extras(theirs) == ["--device", "cpu", "agent.save_interval=1000000", *tokens, PRECISION_TOKEN]
    assert theirs[:8] == [*ours[:4], "rsl_rl", *ours[5:8]]  # same task and seed, the other learner


def test_without_a_comparison_the_redline_command_is_as_given() -> None:
    """``--vs none`` passes precision and overrides through unchanged (a resumed ablation keeps its runs)."""
    opts = StudyOptions(vs="none", precision="bf16", overrides=("agent.algorithm.use_mixed_precision=true",))
    assert _extras(train_command(opts, "Redline-Cartpole", "redline", 1)) == [
        *("--precision", "bf16", "agent.save_interval=1000000", "agent.algorithm.use_mixed_precision=true"),
    ]
    assert "--precision" not in train_command(StudyOptions(vs="none"), "Redline-Cartpole", "redline", 1)


def test_sac_runs_the_redline_learner_with_its_algorithm_token() -> None:
    """``--algorithm sac`` (alone): each run is ``redline train ... --algorithm sac``, the task's SAC agent."""
    command = train_command(StudyOptions(vs="none", algorithm="sac"), "Redline-Cartpole", "redline", 3)
    assert command[command.index("--algorithm") + 1] == "sac"
    assert "--algorithm" not in train_command(StudyOptions(vs="none"), "Redline-Cartpole", "redline", 3)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"precision": "bf16"}, "--precision bf16: rsl_rl runs fp32 in a comparison"),
        ({"precision": "auto"}, "--precision auto: rsl_rl runs fp32 in a comparison"),
        ({"overrides": ("agent.algorithm.use_mixed_precision=true",)}, "use_mixed_precision with --vs rsl_rl"),
        ({"overrides": ("agent.torch_compile_mode=default",)}, "torch_compile_mode with --vs rsl_rl: the redline"),
        ({"overrides": ("agent.check_for_nan=false",)}, "check_for_nan with --vs rsl_rl: the redline learner"),
        ({"learner_config": ("precision=bf16",)}, "--learner-config precision: the precision of a comparison"),
        ({"overrides": ("gamma=0.98",)}, "--override: 'gamma=0.98' is not env.<field>=<value>"),
        ({"overrides": ("env.scene.num_envs",)}, "--override: 'env.scene.num_envs' is not"),
        ({"algorithm": "sac"}, "--algorithm sac: only with --vs none (rsl_rl has PPO alone)"),
        ({"algorithm": "ddpg", "vs": "none"}, "--algorithm: unknown 'ddpg' (valid: ppo, sac, td3)"),
        (
            {"algorithm": "sac", "vs": "none", "learner_config": ("reshuffle_each_epoch=true",)},
            "--learner-config: PPOConfig fields, not for --algorithm sac",
        ),
    ],
)
def test_options_that_would_make_a_comparison_unequal_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)):
        StudyOptions(**kwargs)


def test_study_json_records_what_reached_each_learner(tmp_path: Path) -> None:
    opts = StudyOptions(
        seeds=(1,),
        out=tmp_path / "s",
        bootstrap_reps=20,
        overrides=("physics=mujoco_cpu",),
        learner_config=("reshuffle_each_epoch=false",),
    )
    run_study(opts, FakeTrainer())
    result = json.loads((tmp_path / "s" / "study.json").read_text())
    assert result["applied"] == {
        "redline": {
            "precision": "fp32",
            "overrides": ["physics=mujoco_cpu"],
            "learner_config": ["reshuffle_each_epoch=false"],
        },
        "rsl_rl": {"precision": "fp32", "overrides": ["physics=mujoco_cpu", PRECISION_TOKEN], "learner_config": []},
    }
    assert result["differences"] == ["learner_config reshuffle_each_epoch=false: the redline learner only"]


class FakeTrainer:
    """Stands in for a training subprocess: a made-up learning curve per (learner, seed); can fail on call k."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.calls: list[tuple[str, int]] = []
        self.fail_on = fail_on

    def __call__(self, opts: StudyOptions, task: str, learner: str, seed: int) -> dict[str, Any]:
        self.calls.append((learner, seed))
        if self.fail_on is not None and len(self.calls) == self.fail_on:
            raise UserError("bench train: simulated crash")
        speed = 1.0 if learner == "redline" else 0.5  # redline climbs twice as fast: reaches 4.9 earlier
        rewards = [min(5.0, speed * (i + 1) + 0.01 * seed) for i in range(12)]
        record = {"task": task, "learner": learner, "seed": seed, "command": train_command(opts, task, learner, seed)}
        return {**record, **summarize_run(records(rewards), opts.targets[task])}


def test_study_writes_json_and_plot_and_redline_wins_on_fake_runs(tmp_path: Path) -> None:
    opts = StudyOptions(seeds=(1, 2, 3, 4), out=tmp_path / "s", bootstrap_reps=100)
    result = run_study(opts, FakeTrainer())
    cart = json.loads((tmp_path / "s" / "study.json").read_text())["tasks"]["Redline-Cartpole"]
    assert (tmp_path / "s" / "study.png").stat().st_size > 1000
    assert cart["learners"]["redline"]["env_steps_to_target"]["iqm"] == 500.0  # 1.0 * 5 + 0.01 s >= 4.9 at it 4
    assert cart["learners"]["rsl_rl"]["env_steps_to_target"]["iqm"] == 1000.0  # 0.5 * 10 >= 4.9 at it 9
    assert cart["p_improvement"]["env_steps_to_target"]["p"] == 1.0
    assert cart["p_improvement"]["final_reward"]["p"] == 0.5  # both end at 5.0: all ties
    assert "censored" in result["censoring"]


def test_resume_keeps_finished_runs_and_runs_only_the_missing(tmp_path: Path) -> None:
    opts = StudyOptions(seeds=(1, 2, 3), out=tmp_path / "s", bootstrap_reps=50)
    with pytest.raises(UserError, match="simulated crash"):
        run_study(opts, FakeTrainer(fail_on=4))
    assert len(list((tmp_path / "s" / "runs").rglob("seed*.json"))) == 3  # each recorded as it finished
    with pytest.raises(UserError, match="already holds runs; pass --resume"):
        run_study(opts, FakeTrainer())
    resumed = FakeTrainer()
    opts = StudyOptions(seeds=(1, 2, 3), out=tmp_path / "s", bootstrap_reps=50, resume=True)
    result = run_study(opts, resumed)
    assert resumed.calls == [("redline", 2), ("redline", 3), ("rsl_rl", 3)]
    assert result["tasks"]["Redline-Cartpole"]["learners"]["rsl_rl"]["runs"] == 3


def test_resume_reruns_a_run_whose_command_changed(tmp_path: Path) -> None:
    run_study(StudyOptions(seeds=(1,), out=tmp_path / "s", bootstrap_reps=20), FakeTrainer())
    ablation = StudyOptions(
        seeds=(1,), out=tmp_path / "s", bootstrap_reps=20, resume=True, overrides=("agent.algorithm.gamma=0.98",)
    )
    again = FakeTrainer()
    run_study(ablation, again)
    assert again.calls == [("redline", 1), ("rsl_rl", 1)]  # an override reaches both learners: both rerun
    learner_only = dataclasses.replace(ablation, learner_config=("reshuffle_each_epoch=false",))
    once_more = FakeTrainer()
    run_study(learner_only, once_more)
    assert once_more.calls == [("redline", 1)]  # the rsl_rl run's command is unchanged: kept


def test_command_line_options() -> None:
    parser = argparse.ArgumentParser()
    study.add_arguments(parser)
    args = parser.parse_args(
        ["--tasks", "Redline-Cartpole,Redline-Ant", "--seed-list", "3,5", "--target", "Redline-Ant=1000"]
    )
    opts = study.options_from_args(args)
    assert opts.tasks == ("Redline-Cartpole", "Redline-Ant") and opts.seeds == (3, 5)
    assert opts.targets == {"Redline-Cartpole": 4.9, "Redline-Ant": 1000.0}
    assert opts.iterations("Redline-Ant") == opts.iterations("Redline-Cartpole") == study.DEFAULT_MAX_ITERATIONS
    with pytest.raises(SystemExit):
        parser.parse_args(["--target", "4.9"])
    per_task = [
        "--tasks",
        "Redline-Cartpole,Redline-Ant",
        "--max_iterations",
        "Redline-Ant=300",
        "--max_iterations",
        "80",
    ]
    opts = study.options_from_args(parser.parse_args([*per_task, "--target", "Redline-Ant=1000"]))
    assert opts.iterations("Redline-Ant") == 300 and opts.iterations("Redline-Cartpole") == 80
    assert "300" in study.train_command(opts, "Redline-Ant", "redline", 1)
    for bad in ("0", "Redline-Ant=x", "Redline-Ant=-3"):
        with pytest.raises(SystemExit):
            parser.parse_args(["--max_iterations", bad])


def test_learner_config_runs_the_redline_learner_through_ablate() -> None:
    opts = StudyOptions(learner_config=("reshuffle_each_epoch=false",))
    command = train_command(opts, "Redline-Cartpole", "redline", 1)
    assert command[:3] == ["reshuffle_each_epoch=false", "--", "train"]
    assert "--" not in train_command(opts, "Redline-Cartpole", "rsl_rl", 1)
    with pytest.raises(UserError, match="--learner-config: 'reshufle=false'"):
        StudyOptions(learner_config=("reshufle=false",))
