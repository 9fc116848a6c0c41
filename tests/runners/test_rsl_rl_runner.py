"""The anchor runner (rsl_rl's OnPolicyRunner) keeps rsl_rl's writer choice and logs training clips."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from redline.bench.shapes import DummyVecEnv, rsl_rl_cfg
from redline.outputs import run_folder
from redline.outputs.checkpoints import load_checkpoint
from redline.runners.rsl_rl_runner import FRESH_RESETS_WARNING, RslRlRunner
from tests.runners.test_writers import _Clip, tensorboard_steps


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


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _continue_after_a_kill(run_dir: Path, checkpoint: int) -> RslRlRunner:
    """What a ``kill -9`` after iteration 3's record leaves, then ``redline train`` again: the metrics trimmed to
    ``checkpoint`` (:func:`redline.outputs.run_folder.trimmed_metrics`), a new runner resumed from it."""
    trimmed = run_folder.trimmed_metrics(run_dir / "metrics.jsonl", checkpoint)
    if trimmed is not None:
        (run_dir / "metrics.jsonl").write_text(trimmed)
    cfg = {**rsl_rl_cfg({"steps": 8, "hidden": [16, 16]}, bf16=False), "max_iterations": 2, "save_interval": 2}
    runner = RslRlRunner(DummyVecEnv(num_envs=16), cfg, str(run_dir), "cpu")
    runner.resume(load_checkpoint(run_dir / f"model_{checkpoint}.pt"))
    return runner


def test_a_resumed_rsl_rl_run_continues_its_steps_and_clock_and_says_the_envs_start_fresh(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = {**rsl_rl_cfg({"steps": 8, "hidden": [16, 16]}, bf16=False), "max_iterations": 4, "save_interval": 2}
    RslRlRunner(DummyVecEnv(num_envs=16), cfg, str(tmp_path), "cpu").learn(4)  # model_0, model_2, model_3
    saved = load_checkpoint(tmp_path / "model_2.pt")
    assert saved["env_steps"] == 3 * 8 * 16 and saved["wall_time_s"] >= _metrics(tmp_path)[2]["wall_time_s"]
    capsys.readouterr()
    _continue_after_a_kill(tmp_path, 2).learn(1)  # iteration 3 again
    assert FRESH_RESETS_WARNING in capsys.readouterr().err.splitlines()
    rows = _metrics(tmp_path)
    assert [r["iteration"] for r in rows] == [0, 1, 2, 3]
    assert [r["env_steps"] for r in rows] == [8 * 16 * (i + 1) for i in range(4)]  # not restarted at 0 mid-file
    clock = [r["wall_time_s"] for r in rows]
    assert clock == sorted(clock) and clock[3] > saved["wall_time_s"]


def test_a_continued_run_drops_the_events_logged_after_its_checkpoint(tmp_path: Path) -> None:
    """TensorBoard shows each iteration once: the events an interrupted attempt wrote after the checkpoint it is
    continued from (iterations 2 and 3 here) are purged, as ``metrics.jsonl`` is trimmed."""
    cfg = {**rsl_rl_cfg({"steps": 8, "hidden": [16, 16]}, bf16=False), "max_iterations": 4, "save_interval": 1}
    RslRlRunner(DummyVecEnv(num_envs=16), cfg, str(tmp_path), "cpu").learn(4)
    (tmp_path / "model_2.pt").unlink()  # as if killed before it was saved
    (tmp_path / "model_3.pt").unlink()
    _continue_after_a_kill(tmp_path, 1).learn(2)  # iterations 2 and 3 again
    steps = tensorboard_steps(tmp_path)
    assert steps["Loss/value"] == [0, 1, 2, 3], steps
    assert all(s == sorted(set(s)) for s in steps.values()), steps  # each step of each tag appears once
