"""Either learner behind the same calls (:func:`redline.runners.make.make_runner`): train, save, restore, continue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.bench.shapes import DummyVecEnv, rsl_rl_cfg
from redline.learning import PPOConfig
from redline.outputs.checkpoints import load_checkpoint
from redline.runners.make import LEARNERS, RunnerRequest, make_runner
from redline.runners.stop import STARTUP, StopRequest


@pytest.mark.parametrize("learner", LEARNERS)
def test_both_learners_train_save_and_continue_through_the_same_calls(learner: str, tmp_path: Path) -> None:
    cfg = {**rsl_rl_cfg({"steps": 8, "hidden": [16, 16]}, bf16=False), "max_iterations": 2, "save_interval": 10}
    learner_cfg = PPOConfig.from_rsl_rl(cfg, precision="fp32") if learner == "redline" else None
    request = RunnerRequest(cfg, tmp_path, "cpu", seed=0, save_interval=10, learner_cfg=learner_cfg)
    make_runner(learner, DummyVecEnv(num_envs=16), request).learn(2, False, StopRequest(STARTUP))
    checkpoint = load_checkpoint(tmp_path / "model_1.pt")
    assert checkpoint["iter"] == 1 and "actor_state_dict" in checkpoint

    again = make_runner(learner, DummyVecEnv(num_envs=16), request)
    again.restore(checkpoint)
    again.learn(1, False, StopRequest(STARTUP))
    assert load_checkpoint(tmp_path / "model_2.pt")["iter"] == 2  # continued at the saved iteration + 1
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["iteration"] for r in records] == [0, 1, 2]
