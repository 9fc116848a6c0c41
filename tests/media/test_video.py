"""``redline play --video``: a playable mp4 under the run's ``videos/``; ``--viz`` without a viewer: one line."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from redline.cli import main
from redline.media.video import look_at, tile_grid


def test_look_at_points_the_cameras_minus_z_at_the_target() -> None:
    eye, target = np.array([-3.0, -1.0, 2.5]), np.array([0.0, 0.5, 2.0])
    rotation = look_at(eye, target)
    np.testing.assert_allclose(rotation.T @ rotation, np.eye(3), atol=1e-12)  # a rotation
    assert np.linalg.det(rotation) == pytest.approx(1.0)
    forward = (target - eye) / np.linalg.norm(target - eye)
    np.testing.assert_allclose(rotation @ [0.0, 0.0, -1.0], forward, atol=1e-12)
    assert (rotation @ [0.0, 1.0, 0.0])[2] > 0  # image up is world up
    assert [tile_grid(n) for n in (1, 2, 3, 4)] == [(1, 1), (1, 2), (2, 2), (2, 2)]


def test_viz_newton_without_a_display(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert main(["play", "--task", "Redline-Cartpole", "--viz", "newton"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["redline play: error: --viz newton: no display (DISPLAY is not set); use --video to record an mp4 "
                   "headless"]  # fmt: skip


def test_viz_kit_needs_isaac_sim(capsys: pytest.CaptureFixture) -> None:
    import importlib.util

    if importlib.util.find_spec("isaacsim") is not None:
        pytest.skip("Isaac Sim is installed here")
    assert main(["play", "--task", "Redline-Cartpole", "--viz", "kit"]) == 2
    assert "--viz kit: Isaac Sim is not installed" in capsys.readouterr().err
    assert main(["play", "--task", "Redline-Cartpole", "--viz", "vr"]) == 2
    assert "--viz: unknown viewer 'vr' (valid: newton, kit)" in capsys.readouterr().err


def _checkpoint(run_dir: Path, task: str = "Redline-Cartpole", num_obs: int = 4, num_actions: int = 1) -> Path:
    """An untrained redline checkpoint with ``task``'s shapes (Cartpole: 4 observations, 1 action), no simulator."""
    from redline.bench.shapes import DummyVecEnv
    from redline.envs import registry
    from redline.envs.prepare import runner_cfg_dict
    from redline.learning import PPO, PPOConfig

    _, agent_cfg = registry.load_cfgs(task, "rsl_rl_cfg_entry_point", [])
    cfg = PPOConfig.from_rsl_rl(runner_cfg_dict(agent_cfg), precision="fp32")
    env = DummyVecEnv(num_envs=4, num_obs=num_obs, num_actions=num_actions)
    state = PPO.from_env(env, cfg, "cpu").state_dict()
    run_dir.mkdir(parents=True)
    torch.save({**state, "iter": 0, "infos": None}, run_dir / "model_0.pt")
    return run_dir / "model_0.pt"


class _FullDiskRecorder:
    """A recorder whose third frame meets a full disk, after it wrote a partial file."""

    def __init__(self, path: Path, fps: int) -> None:
        self.path, self.frames, self.tiles = path, 0, 4
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"partial mp4")

    def capture(self) -> None:
        if self.frames == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.frames += 1

    def close(self) -> None:
        pass


def test_play_video_on_a_full_disk_is_one_line_naming_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The video is what `play --video` was asked for: a full disk is an output error (exit 74) naming the file, and
    the cut mp4 (unplayable without its index) is removed. Before: an OSError traceback."""
    from redline.bench.shapes import DummyVecEnv
    from redline.commands.play import _rollout_recorded
    from redline.errors import OutputError
    from redline.media import video

    env = DummyVecEnv(num_envs=4, seed=0)
    env.unwrapped = SimpleNamespace(step_dt=1 / 60)  # type: ignore[attr-defined]
    path = tmp_path / "videos" / "play_model_0.mp4"

    def policy(obs: Any) -> torch.Tensor:
        return torch.zeros(env.num_envs, env.num_actions)

    monkeypatch.setattr(video, "NewtonVideoRecorder", _FullDiskRecorder)
    with pytest.raises(OutputError) as failed:
        _rollout_recorded(env, policy, 20, path)
    assert failed.value.exit_status == 74
    assert str(failed.value) == f"video: could not write '{path}' (No space left on device); the export is kept"
    assert not path.exists()


def _frames(video: Path) -> list[np.ndarray]:
    import av

    with av.open(str(video)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(container.streams.video[0])]


@pytest.mark.sim
def test_play_video_writes_a_playable_mp4(tmp_path: Path) -> None:
    import av

    checkpoint = _checkpoint(tmp_path / "run")
    argv = ["play", "--task", "Redline-Cartpole", "--checkpoint", str(checkpoint), "--device", "cpu"]
    assert main([*argv, "--steps", "40", "--video"]) == 0
    video = tmp_path / "run" / "videos" / "play_model_0.mp4"
    assert video.stat().st_size > 5_000
    with av.open(str(video)) as container:
        stream = container.streams.video[0]
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(stream)]
        rate = stream.average_rate
    assert len(frames) == 20  # Cartpole steps at 60 Hz: every 2nd of 40 steps, at 30 frames/s
    assert rate == 30
    assert frames[0].shape == (480, 640, 3)  # 4 envs (play's default with --video) in a 2 x 2 grid of 320 x 240
    assert all(len(np.unique(f.reshape(-1, 3), axis=0)) > 20 for f in frames)  # a scene, not a blank frame
    assert not np.array_equal(frames[0], frames[-1])  # the carts move


@pytest.mark.sim
def test_a_robot_with_collision_geometry_only_is_drawn(tmp_path: Path) -> None:
    # the Go1's converted MJCF has collision shapes only; the camera used to see an empty floor under the sky
    checkpoint = _checkpoint(tmp_path / "run", "Redline-Velocity-Flat-Go1", num_obs=48, num_actions=12)
    argv = ["play", "--task", "Redline-Velocity-Flat-Go1", "--checkpoint", str(checkpoint), "--device", "cpu"]
    assert main([*argv, "--steps", "4", "--video"]) == 0
    frames = _frames(tmp_path / "run" / "videos" / "play_model_0.mp4")
    # sky and floor alone make every image row one colour; a robot makes some rows vary along them
    assert all(frame.astype(float).std(axis=1).max() > 10 for frame in frames)
