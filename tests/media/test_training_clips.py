"""``redline train --video``: Isaac Lab's clip schedule, ray-traced headless, written under the run and logged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from redline.media.training_clips import TrainingVideo


class _Env(gym.Env):
    """A stand-in Isaac Lab env: Cartpole's control step (120 Hz physics, decimation 2)."""

    step_dt = 1 / 60

    def step(self, action: Any) -> Any:
        return None, 0.0, False, False, {}


class _Recorder:
    opened: list[tuple[Path, int]] = []

    def __init__(self, path: Path, fps: int) -> None:
        _Recorder.opened.append((path, fps))
        self.frames = 0
        self.closed = False

    def capture(self) -> None:
        self.frames += 1

    def close(self) -> None:
        self.closed = True


def test_clips_follow_isaac_labs_step_trigger(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A clip of ``length`` steps starts at every step that is a multiple of ``interval``, the first at step 0."""
    _Recorder.opened = []
    video = TrainingVideo(_Env(), tmp_path, length=5, interval=8, recorder=_Recorder)
    assert (video.every, video.fps) == (2, 30)  # every 2nd 60 Hz step: real time at 30 frames/s
    for _ in range(20):
        video.step(None)
    clips = video.take_finished()
    assert [c.step for c in clips] == [0, 8]  # the clip from step 16 is still running
    assert [c.path.name for c in clips] == ["rl-video-step-0.mp4", "rl-video-step-8.mp4"]
    assert [p for p, _ in _Recorder.opened] == [tmp_path / f"rl-video-step-{s}.mp4" for s in (0, 8, 16)]
    assert video.take_finished() == []
    video.finish_clip()  # the end of training closes the running clip
    assert [c.step for c in video.take_finished()] == [16]
    out = capsys.readouterr().out
    assert "rl-video-step-0.mp4 (3 frames)" in out  # steps 0, 2, 4 of a 5-step clip


def test_a_clip_due_while_one_runs_closes_it_first(tmp_path: Path) -> None:
    video = TrainingVideo(_Env(), tmp_path, length=10, interval=4, recorder=_Recorder)
    for _ in range(9):
        video.step(None)
    assert [c.step for c in video.take_finished()] == [0, 4]  # as gymnasium's RecordVideo: cut at the next start


@pytest.mark.sim
class _FullDisk(_Recorder):
    def capture(self) -> None:
        import errno
        import os

        if self.frames == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.frames += 1


def test_a_clip_that_cannot_be_written_warns_once_and_training_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """Videos are not essential: a full disk stops the recording, not the run."""
    from redline.outputs import metrics

    monkeypatch.setattr(metrics, "_warned", set(), raising=False)
    _Recorder.opened = []
    video = TrainingVideo(_Env(), tmp_path, length=8, interval=10, recorder=_FullDisk)
    for _ in range(40):
        video.step(None)  # every env step still goes through
    video.finish_clip()
    assert video.step_id == 40 and video.take_finished() == []
    assert len(_Recorder.opened) == 1  # no clip is started after the failure
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"[redline] warning: training videos: could not write '{tmp_path / 'rl-video-step-0.mp4'}' (No space left "
        "on device); continuing without it"
    ]


def test_train_video_writes_clips_under_the_run_and_logs_them(tmp_path: Path) -> None:
    import av
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from redline.cli import main

    log_root = tmp_path / "logs"
    argv = ["train", "--task", "Redline-Cartpole", "--num_envs", "4", "--device", "cpu", "--log_root", str(log_root)]
    assert main([*argv, "--max_iterations", "2", "--video", "--video_length", "3", "--video_interval", "20"]) == 0
    (run,) = (log_root / "redline_cartpole").iterdir()
    clips = sorted((run / "videos" / "train").glob("*.mp4"))
    assert [c.name for c in clips] == ["rl-video-step-0.mp4", "rl-video-step-20.mp4"]  # 2 x 16 steps
    for clip in clips:
        with av.open(str(clip)) as container:
            frames = [f.to_ndarray(format="rgb24") for f in container.decode(container.streams.video[0])]
        assert len(frames) == 2 and frames[0].shape == (480, 640, 3)  # steps 0 and 2 of 3; 4 envs in 2 x 2 tiles
        assert all(len(np.unique(f.reshape(-1, 3), axis=0)) > 20 for f in frames)  # a scene, not a blank frame
    assert [json.loads(line)["iteration"] for line in (run / "metrics.jsonl").read_text().splitlines()] == [0, 1]
    events = EventAccumulator(str(run), size_guidance={"tensors": 0, "images": 0})
    events.Reload()
    tags = events.Tags()
    # logged at the iteration each clip finished in: as a video with moviepy installed, else as its path
    assert "Video/train" in tags["images"] or "Video/train/text_summary" in tags["tensors"], tags
