"""``python -m redline.bench.ablate FIELD=VALUE ... -- train ...``: the train command with PPOConfig fields set."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.bench import ablate
from redline.learning import PPOConfig
from redline.options import TrainOptions


def test_fields_are_json_values_of_ppo_config() -> None:
    assert ablate.parse_fields(["reshuffle_each_epoch=False", "num_mini_batches=8", "precision=fp32"]) == {
        "reshuffle_each_epoch": False,
        "num_mini_batches": 8,
        "precision": "fp32",
    }


def test_the_train_command_gets_the_options_and_the_fields_on_top_of_the_agent_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[tuple[TrainOptions, PPOConfig]] = []

    def fake_train(opts: TrainOptions) -> None:
        built.append((opts, PPOConfig.from_rsl_rl({"algorithm": {"class_name": "PPO"}}, precision="fp32")))

    monkeypatch.setattr(ablate, "train", fake_train)
    monkeypatch.setattr(ablate, "check_caches", lambda: None)
    monkeypatch.setattr(PPOConfig, "from_rsl_rl", PPOConfig.from_rsl_rl)  # restored after the test
    argv = ["train", "--task", "Redline-Cartpole", "--seed", "7", "--log_root", "out", "agent.save_interval=9"]
    assert ablate.main(["stratify_minibatches=true", "--", *argv]) == 0
    ((opts, cfg),) = built
    assert (opts.run.task, opts.run.seed, opts.run.log_root, opts.run.overrides) == (
        "Redline-Cartpole",
        7,
        Path("out"),
        ("agent.save_interval=9",),
    )
    assert cfg.stratify_minibatches and not cfg.reshuffle_each_epoch and cfg.precision == "fp32"


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        (["train", "--task", "T", "--nproc", "2"], "--nproc/--distributed: an ablation trains in one process"),
        (["train", "--task", "T", "--seed", "-1"], "argument --seed: must be an integer"),
        (["train", "--task", "T", "--bogus"], "unrecognized argument '--bogus'"),
        (["play", "--task", "T"], "expected 'train' after '--'"),
    ],
)
def test_bad_input_is_one_line(tail: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert ablate.main(["stratify_minibatches=true", "--", *tail]) == 2
    err = capsys.readouterr().err
    assert err.startswith("redline ablate: error: ") and message in err and err.count("\n") == 1
