"""``redline play --video``: a playable mp4 under the run's ``videos/``; ``--viz`` without a viewer: one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from redline.cli import main
from redline.commands.video import look_at, tile_grid


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


def _cartpole_checkpoint(run_dir: Path) -> Path:
    """An untrained redline checkpoint with Cartpole's shapes (4 observations, 1 action), no simulator needed."""
    from redline.envs import registry
    from redline.envs.prepare import runner_cfg_dict
    from redline.learning import PPO, PPOConfig
    from redline.learning.testing import DummyVecEnv

    _, agent_cfg = registry.load_cfgs("Redline-Cartpole", "rsl_rl_cfg_entry_point", [])
    cfg = PPOConfig.from_rsl_rl(runner_cfg_dict(agent_cfg), precision="fp32")
    state = PPO.from_env(DummyVecEnv(num_envs=4, num_obs=4, num_actions=1), cfg, "cpu").state_dict()
    run_dir.mkdir(parents=True)
    torch.save({**state, "iter": 0, "infos": None}, run_dir / "model_0.pt")
    return run_dir / "model_0.pt"


@pytest.mark.sim
def test_play_video_writes_a_playable_mp4(tmp_path: Path) -> None:
    import av

    checkpoint = _cartpole_checkpoint(tmp_path / "run")
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
