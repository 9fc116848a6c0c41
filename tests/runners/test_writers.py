"""The log writer the ``logger`` setting chooses (rsl_rl's writers), checked before any simulator; W&B offline."""

from __future__ import annotations

import dataclasses
import importlib.util
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

from redline.errors import UserError
from redline.runners import writers
from redline.runners.writers import check_logger, log_video, open_writer, purge_from, set_logger

REAL_FIND_SPEC = importlib.util.find_spec


def _packages(monkeypatch: pytest.MonkeyPatch, installed: set[str], missing: set[str]) -> None:
    """Pretend the packages in ``installed`` are importable and those in ``missing`` are not."""

    def find_spec(name: str, *args: Any) -> Any:
        if name in missing:
            return None
        if name in installed:
            return SimpleNamespace(name=name)
        return REAL_FIND_SPEC(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No W&B or Neptune credentials anywhere: environment, ``.netrc``, settings files; returns the home folder."""
    for name in ("WANDB_MODE", "WANDB_DISABLED", "WANDB_API_KEY", "WANDB_IDENTITY_TOKEN_FILE", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name in ("NEPTUNE_API_TOKEN", "NEPTUNE_USERNAME"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("NETRC", raising=False)
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(home / ".config" / "wandb"))
    monkeypatch.chdir(tmp_path)
    return home


def test_unknown_logger_names_the_field_and_the_choices() -> None:
    with pytest.raises(UserError, match=r"^--logger: unknown logger 'mlflow' \(valid: tensorboard, wandb, neptune\)$"):
        check_logger("mlflow", "--logger")
    with pytest.raises(UserError, match=r"^agent.logger: class_name 'no.such:Writer' does not resolve"):
        check_logger({"class_name": "no.such:Writer"}, "agent.logger")
    with pytest.raises(UserError, match=r"^agent.logger: must be one of tensorboard, wandb, neptune or a dict"):
        check_logger(3, "agent.logger")
    assert check_logger("tensorboard", "--logger") == "tensorboard"


@pytest.mark.parametrize(
    ("logger", "expected"),
    [
        ("wandb", "--logger wandb: the wandb package is not installed (install redline's extra: uv sync --extra wandb"),
        ("neptune", "--logger neptune: the neptune package is not installed (pip install neptune; or use --logger "),
    ],
)
def test_a_missing_package_is_one_line(logger: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _packages(monkeypatch, set(), {"wandb", "neptune"})
    with pytest.raises(UserError) as info:
        check_logger(logger, "--logger")
    assert str(info.value).startswith(expected) and "\n" not in str(info.value)


def test_missing_credentials_are_one_line(monkeypatch: pytest.MonkeyPatch, no_credentials: Path) -> None:
    _packages(monkeypatch, {"wandb", "neptune"}, set())
    with pytest.raises(UserError, match=r"^--logger wandb: no W&B credentials \(run `wandb login` or set WANDB_API"):
        check_logger("wandb", "--logger")
    with pytest.raises(UserError, match=r"^agent.logger neptune: no Neptune credentials \(set NEPTUNE_API_TOKEN and "):
        check_logger("neptune", "agent.logger")
    monkeypatch.setenv("NEPTUNE_API_TOKEN", "t")
    with pytest.raises(UserError, match=r"\(set NEPTUNE_USERNAME\)$"):
        check_logger("neptune", "--logger")
    monkeypatch.setenv("NEPTUNE_USERNAME", "u")
    assert check_logger("neptune", "--logger") == "neptune"
    # rsl_rl's dict form is checked as the writer class it names
    with pytest.raises(UserError, match=r"^agent.logger: no W&B credentials"):
        check_logger({"class_name": "WandbLogWriter", "project_name": "p"}, "agent.logger")


@pytest.mark.parametrize("source", ["offline", "api_key", "netrc", "settings"])
def test_wandb_credentials_are_found_where_wandb_looks(
    source: str, monkeypatch: pytest.MonkeyPatch, no_credentials: Path
) -> None:
    _packages(monkeypatch, {"wandb"}, set())
    if source == "offline":
        monkeypatch.setenv("WANDB_MODE", "offline")
    elif source == "api_key":
        monkeypatch.setenv("WANDB_API_KEY", "k" * 40)
    elif source == "netrc":
        (no_credentials / ".netrc").write_text("machine api.wandb.ai\n  login user\n  password secret\n")
        (no_credentials / ".netrc").chmod(0o600)
    else:  # `wandb offline` in this folder
        Path("wandb").mkdir()
        Path("wandb/settings").write_text("[default]\nmode = offline\n")
    assert check_logger("wandb", "--logger") == "wandb"


def test_set_logger_as_isaac_labs_update_rsl_rl_cfg() -> None:
    cfg = SimpleNamespace(logger="tensorboard", wandb_project="isaaclab", neptune_project="isaaclab")
    set_logger(cfg, None, "mine")  # a project name alone changes nothing for TensorBoard, as in Isaac Lab
    assert (cfg.logger, cfg.wandb_project, cfg.neptune_project) == ("tensorboard", "isaaclab", "isaaclab")
    set_logger(cfg, "wandb", "mine")
    assert (cfg.logger, cfg.wandb_project, cfg.neptune_project) == ("wandb", "mine", "mine")
    cfg.logger = {"class_name": "WandbLogWriter", "project_name": "a"}
    set_logger(cfg, None, "b")
    assert cfg.logger == {"class_name": "WandbLogWriter", "project_name": "b"}


def test_tensorboard_is_the_default_writer(tmp_path: Path) -> None:
    from torch.utils.tensorboard import SummaryWriter

    for cfg in (None, {}, {"logger": "tensorboard"}):
        writer = open_writer(tmp_path, cfg)
        assert type(writer) is SummaryWriter
        writer.close()


def tensorboard_steps(run_dir: Path) -> dict[str, list[int]]:
    """Each scalar tag's steps as TensorBoard reads a run folder's event files back (its purges applied)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    events.Reload()
    return {tag: [e.step for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_a_purge_drops_the_earlier_events_of_its_step_and_after(tmp_path: Path) -> None:
    """An attempt logged steps 0-4 and was killed; the run continues at step 2 in a new writer (a new event file)."""
    first = open_writer(tmp_path)
    for step in range(5):
        first.add_scalar("Loss/value", float(step), step)
    first.close()
    again = open_writer(tmp_path)
    purge_from(again, 2)
    for step in (2, 3):
        again.add_scalar("Loss/value", 10.0 + step, step)
    again.close()
    assert tensorboard_steps(tmp_path) == {"Loss/value": [0, 1, 2, 3]}  # without the purge: [0, 1, 2, 3, 4, 2, 3]
    purge_from(object(), 2)  # a writer without TensorBoard events: nothing to mark


@dataclasses.dataclass(frozen=True)
class _Clip:
    path: Path
    fps: int = 30

    def frames(self) -> torch.Tensor:
        return torch.zeros(2, 8, 12, 3, dtype=torch.uint8)


class _Writer:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def add_video(self, tag: str, video: torch.Tensor, step: int, fps: int) -> None:
        self.calls.append(("video", tag, tuple(video.shape), step, fps))

    def add_text(self, tag: str, text: str, step: int) -> None:
        self.calls.append(("text", tag, text, step))


def test_a_clip_goes_to_tensorboard_as_a_video_or_as_its_path(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setattr(writers, "_told_moviepy", False)
    _packages(monkeypatch, set(), {"moviepy"})
    writer = _Writer()
    log_video(writer, _Clip(Path("/run/videos/train/rl-video-step-0.mp4")), 3)
    log_video(writer, _Clip(Path("/run/videos/train/rl-video-step-20.mp4")), 5)
    assert writer.calls == [
        ("text", "Video/train", "/run/videos/train/rl-video-step-0.mp4", 3),
        ("text", "Video/train", "/run/videos/train/rl-video-step-20.mp4", 5),
    ]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "TensorBoard shows videos only with moviepy installed" in err[0]  # said once

    _packages(monkeypatch, {"moviepy"}, set())
    writer = _Writer()
    log_video(writer, _Clip(Path("clip.mp4"), fps=30), 7)
    assert writer.calls == [("video", "Video/train", (1, 2, 3, 8, 12), 7, 30)]  # (N, T, C, H, W)


def _tiny_mp4(path: Path) -> None:
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        rng = np.random.default_rng(0)
        for _ in range(4):
            frame = av.VideoFrame.from_ndarray(rng.integers(0, 255, (48, 64, 3), dtype=np.uint8), format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def test_redline_runner_logs_to_wandb_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--logger wandb`` end to end through rsl_rl's WandbLogWriter, offline: the scalars, the config, the
    checkpoints and a training clip land in the local W&B run; TensorBoard events are still written."""
    pytest.importorskip("wandb")
    from redline.bench.shapes import DummyVecEnv, rsl_rl_cfg
    from redline.learning import PPOConfig
    from redline.runners.redline_runner import RedlineRunner

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "run"
    clip = _Clip(run_dir / "videos" / "train" / "rl-video-step-0.mp4")
    _tiny_mp4(clip.path)
    clips = [[clip], []]
    train_cfg = {**rsl_rl_cfg({"steps": 8, "hidden": [16, 16]}, bf16=False), "logger": "wandb"}
    train_cfg["wandb_project"] = "redline-test"
    cfg = PPOConfig.from_rsl_rl(train_cfg, precision="fp32")
    runner = RedlineRunner(DummyVecEnv(num_envs=16), cfg, run_dir, "cpu", seed=0, save_interval=1, train_cfg=train_cfg)
    runner.learn(2, videos=lambda: clips.pop(0))

    (offline,) = (tmp_path / "wandb").glob("offline-run-*")
    (records,) = offline.glob("run-*.wandb")
    wanted = (b"redline-test", b"Train/mean_reward", b"Loss/value", b"Perf/total_fps", b"train_cfg", b"video")
    deadline = time.monotonic() + 60.0  # on a busy host W&B's service process may still be writing after finish()
    while not all(w in records.read_bytes() for w in wanted) and time.monotonic() < deadline:  # (CI, 2026-12-06)
        time.sleep(0.5)
    data = records.read_bytes()
    for expected in wanted:
        assert expected in data, expected
    files = offline / "files"
    assert (files / "model_0.pt").is_file() and (files / "model_1.pt").is_file()  # rsl_rl's save_model uploads
    assert list(files.rglob("*.mp4")), sorted(p.name for p in files.rglob("*"))  # the clip, once
    assert list(run_dir.glob("events.out.tfevents.*"))  # the W&B writer is a SummaryWriter too


class Refusing:
    """A log writer whose service refuses to start a run (rsl_rl's dict form names it)."""

    def __init__(self, log_dir: str, project_name: str) -> None:
        raise RuntimeError(f"wandb.init failed\nnetwork unreachable for project {project_name}")


REFUSING = {"class_name": "tests.runners.test_writers:Refusing", "project_name": "p"}


def test_a_service_that_refuses_a_run_is_one_line(tmp_path: Path) -> None:
    assert check_logger(REFUSING, "agent.logger") == "custom"
    with pytest.raises(UserError) as info:
        open_writer(tmp_path, {"logger": REFUSING})
    assert str(info.value) == (
        "agent.logger: tests.runners.test_writers:Refusing could not start a run (network unreachable for project p)"
    )
