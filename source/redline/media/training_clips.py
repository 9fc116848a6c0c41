"""``redline train --video``: clips of training, scheduled as Isaac Lab's rsl_rl train script schedules them.

Isaac Lab wraps the env in gymnasium's ``RecordVideo`` with ``step_trigger = step % video_interval == 0``: a clip of
``video_length`` env steps starts at env step 0, ``video_interval``, ``2 * video_interval``, ... and is written to
``<run>/videos/train/rl-video-step-<step>.mp4``. :class:`TrainingVideo` is that wrapper, with its frames ray-traced
headless by :class:`~redline.media.video.NewtonVideoRecorder` (the first 4 envs, the CPU included) at ``redline
play --video``'s frame rate. Without ``--video`` the env is not wrapped: training steps pay nothing for it. A clip
that cannot be written (a full disk) is said once on stderr and recording stops; training goes on (clips are not
essential outputs).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import gymnasium as gym
import torch

from redline.media.video import VIDEO_FPS, NewtonVideoRecorder
from redline.options import VIDEO_INTERVAL, VIDEO_LENGTH
from redline.outputs.metrics import warn_once


class Recorder(Protocol):
    """What :class:`TrainingVideo` needs of a recorder (:class:`~redline.media.video.NewtonVideoRecorder`)."""

    frames: int

    def capture(self) -> None: ...

    def close(self) -> None: ...


@dataclasses.dataclass(frozen=True)
class TrainingClip:
    """A finished clip (:class:`redline.runners.writers.Clip`)."""

    path: Path
    """The mp4."""
    fps: int
    """Its frame rate [frames / s]."""
    step: int
    """The env step it starts at."""

    def frames(self) -> torch.Tensor:
        """Its frames, ``(T, H, W, 3)`` uint8 RGB."""
        # optional: PyAV, only to encode a video
        import av
        import numpy as np

        with av.open(str(self.path)) as container:
            frames = [f.to_ndarray(format="rgb24") for f in container.decode(container.streams.video[0])]
        return torch.from_numpy(np.stack(frames))


def newton_recorder(path: Path, fps: int) -> Recorder:
    """The default recorder: Newton's Warp ray tracer over the running simulation."""
    return NewtonVideoRecorder(path, fps)


class TrainingVideo(gym.Wrapper):
    """Records a clip of ``length`` env steps every ``interval`` env steps (from the first) into ``folder``.

    A frame is rendered after every ``k``-th step of a clip, ``k = round(1 / (VIDEO_FPS * step_dt))`` (every 2nd
    Cartpole step), so a clip plays in real time at about 30 frames/s. A clip still running when the next one is due
    is closed first, as gymnasium's ``RecordVideo`` does.

    Args:
        env: the Isaac Lab env (below ``RslRlVecEnvWrapper``, where Isaac Lab puts ``RecordVideo``).
        folder: where the clips go (``<run>/videos/train``).
        length: env steps per clip (``--video_length``).
        interval: env steps between clip starts (``--video_interval``).
        recorder: ``recorder(path, fps)`` opens a clip (default: :func:`newton_recorder`).
    """

    def __init__(
        self,
        env: Any,
        folder: Path,
        length: int = VIDEO_LENGTH,
        interval: int = VIDEO_INTERVAL,
        recorder: Callable[[Path, int], Recorder] = newton_recorder,
    ) -> None:
        super().__init__(env)
        step_dt = float(env.unwrapped.step_dt)
        self.folder = folder
        self.length = length
        self.interval = interval
        self.every = max(1, round(1.0 / (VIDEO_FPS * step_dt)))
        """Env steps per frame."""
        self.fps = max(1, round(1.0 / (self.every * step_dt)))
        """Frame rate of the clips [frames / s]."""
        self.step_id = 0
        """Env steps taken through this wrapper."""
        self._open_recorder = recorder
        self._recorder: Recorder | None = None
        self._clip_start = 0
        self._finished: list[TrainingClip] = []
        self.failed = False
        """A clip could not be written: recording stopped for the rest of the run (said once)."""

    def step(self, action: Any) -> Any:
        result = self.env.step(action)
        if self.failed:
            self.step_id += 1
            return result
        try:
            if self.step_id % self.interval == 0:
                self._start()
            if self._recorder is not None:
                offset = self.step_id - self._clip_start
                if offset % self.every == 0:
                    self._recorder.capture()
                if offset + 1 >= self.length:
                    self.finish_clip()
        except OSError as exc:  # a full disk, a removed folder: videos are not essential, training goes on
            self._fail(exc)
        self.step_id += 1
        return result

    def _fail(self, exc: OSError) -> None:
        """Drop the clip being recorded and record no more; said once on stderr."""
        self.failed = True
        recorder, self._recorder = self._recorder, None
        if recorder is not None:
            with contextlib.suppress(Exception):
                recorder.close()
        warn_once("training videos", self._path(self._clip_start), exc)

    def _start(self) -> None:
        self.finish_clip()
        self._clip_start = self.step_id
        self._recorder = self._open_recorder(self._path(self.step_id), self.fps)

    def _path(self, step: int) -> Path:
        return self.folder / f"rl-video-step-{step}.mp4"

    def finish_clip(self) -> None:
        """Close the clip being recorded, if any (it joins :meth:`take_finished`'s list)."""
        if self._recorder is None:
            return
        recorder, self._recorder = self._recorder, None
        try:
            recorder.close()
        except OSError as exc:
            self._fail(exc)
            return
        clip = TrainingClip(self._path(self._clip_start), self.fps, self._clip_start)
        self._finished.append(clip)
        print(f"[redline] video: {clip.path} ({recorder.frames} frames)", flush=True)

    def take_finished(self) -> list[TrainingClip]:
        """The clips finished since the last call."""
        finished, self._finished = self._finished, []
        return finished

    def close(self) -> None:
        self.finish_clip()
        super().close()
