"""A HOME that cannot hold Warp's kernel cache or the asset root (read-only, unset) is one line naming the folder and
the variable that moves it, exit 2, before Isaac Lab is imported (:mod:`redline.caches`). Before issue 22's last
items a read-only HOME ended in Isaac Lab's config loading with
``OSError: [Errno 30] Read-only file system: '<home>/.cache'`` and a traceback."""

from __future__ import annotations

import errno
import os
import pathlib
from pathlib import Path
from typing import Any

import pytest

from redline.caches import check_caches
from redline.cli import main
from redline.errors import UserError


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("WARP_CACHE_PATH", "REDLINE_ASSET_ROOT", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_a_read_only_home_names_warps_cache_and_its_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def read_only(*args: Any) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(os, "write", read_only)
    with pytest.raises(UserError) as caught:
        check_caches()
    monkeypatch.undo()
    assert str(caught.value) == (
        f"Warp's kernel cache: cannot write to '{tmp_path / 'home' / '.cache' / 'warp'}' (Read-only file system); set "
        "WARP_CACHE_PATH to a writable folder"
    )


def test_an_unwritable_cache_is_refused_by_the_cli_before_isaac_lab(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("WARP_CACHE_PATH", "/proc/redline-warp")
    assert main(["train", "--task", "Redline-Cartpole", "--device", "cpu", "--nproc", "1"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "redline train: error: Warp's kernel cache: cannot write to '/proc/redline-warp' (No such file or directory); "
        "set WARP_CACHE_PATH to a writable folder"
    ]


def test_an_asset_root_that_cannot_be_written_names_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARP_CACHE_PATH", str(tmp_path / "warp"))
    monkeypatch.setenv("REDLINE_ASSET_ROOT", "/proc/redline-assets")
    with pytest.raises(UserError, match=r"^asset root: cannot write to '/proc/redline-assets") as caught:
        check_caches()
    assert str(caught.value).endswith("; set REDLINE_ASSET_ROOT to a writable folder")


def test_no_home_at_all_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """A container's uid without a user-database entry and no HOME: Warp would cache under a folder named '~'."""

    def unknown(cls: Any) -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("HOME")
    monkeypatch.setattr(pathlib.Path, "home", classmethod(unknown))
    with pytest.raises(UserError, match=r"^HOME is not set and uid \d+ has no home folder in the user database; set "):
        check_caches()


def test_writable_caches_pass_and_hold_the_assets(tmp_path: Path) -> None:
    check_caches()
    assert (tmp_path / "home" / ".cache" / "warp").is_dir()
    assert list((tmp_path / "home" / ".cache" / "redline" / "assets").rglob("cartpole.usd"))


def test_assets_into_an_unwritable_root_is_one_line(capsys: pytest.CaptureFixture) -> None:
    """Before: ``redline assets --root /proc/redline-assets`` ended in a FileNotFoundError traceback."""
    assert main(["assets", "--root", "/proc/redline-assets"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "redline assets: error: --root: cannot write to '/proc/redline-assets' (No such file or directory)"
    ]
