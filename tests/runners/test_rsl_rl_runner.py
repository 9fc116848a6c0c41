"""The anchor runner (rsl_rl's OnPolicyRunner) keeps rsl_rl's writer choice and logs training clips."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from redline.bench.shapes import DummyVecEnv, rsl_rl_cfg
from redline.runners.rsl_rl_runner import RslRlRunner
from tests.runners.test_writers import _Clip


def test_clips_go_to_the_writer_rsl_rl_chose(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from torch.utils.tensorboard import SummaryWriter

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "moviepy" else real_find_spec(n, *a))
    monkeypatch.setattr("redline.runners.writers._told_moviepy", True)  # no notice
    cfg = {**rsl_rl_cfg({"steps": 8, "hidden": [16, 16]}, bf16=False), "max_iterations": 2, "save_interval": 10}
    clips = [[_Clip(tmp_path / "videos" / "train" / "rl-video-step-0.mp4")], []]
    runner = RslRlRunner(DummyVecEnv(num_envs=16), cfg, str(tmp_path), "cpu", videos=lambda: clips.pop(0))
    runner.learn(2)
    assert type(runner.logger.writer) is SummaryWriter  # cfg has no "logger": rsl_rl's default, TensorBoard
    events = EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    events.Reload()
    (event,) = events.Tensors("Video/train/text_summary")
    assert event.step == 0 and b"rl-video-step-0.mp4" in event.tensor_proto.string_val[0]


def test_a_writer_that_cannot_start_is_one_line(tmp_path: Path) -> None:
    from redline.errors import UserError
    from tests.runners.test_writers import REFUSING

    cfg = {**rsl_rl_cfg({"steps": 8, "hidden": [16, 16]}, bf16=False), "max_iterations": 1, "logger": REFUSING}
    runner = RslRlRunner(DummyVecEnv(num_envs=16), cfg, str(tmp_path), "cpu")
    with pytest.raises(UserError, match=r"^agent.logger: tests.runners.test_writers:Refusing could not start a run"):
        runner.learn(1)
