"""``redline train --logger/--log_project_name`` reach the config both learners read, as Isaac Lab's script sets it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from redline.commands.preflight import prepare
from redline.envs.prepare import runner_cfg_dict
from redline.options import RunOptions, TrainOptions


@pytest.mark.parametrize("learner", ["redline", "rsl_rl"])
def test_the_flags_reach_rsl_rls_runner_config(learner: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: object() if name == "wandb" else real_find_spec(name, *a)
    )
    monkeypatch.setenv("WANDB_MODE", "offline")
    opts = TrainOptions(
        run=RunOptions(task="Redline-Cartpole", device="cpu", log_root=tmp_path),
        learner=learner,
        logger="wandb",
        log_project_name="legs",
    )
    cfg = runner_cfg_dict(prepare(opts).env.agent_cfg)  # what RedlineRunner and rsl_rl's OnPolicyRunner are given
    assert (cfg["logger"], cfg["wandb_project"], cfg["neptune_project"]) == ("wandb", "legs", "legs")
    default = runner_cfg_dict(prepare(TrainOptions(run=opts.run)).env.agent_cfg)
    assert (default["logger"], default["wandb_project"]) == ("tensorboard", "isaaclab")  # the agent config's
