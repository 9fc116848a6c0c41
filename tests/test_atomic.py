"""One atomic write for every file redline replaces in place: the old file or the new one, never a part."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from redline.atomic import write_atomic


@pytest.mark.parametrize(
    ("data", "expected"),
    [(b"\x00bytes", b"\x00bytes"), ("text, é", "text, é".encode()), (lambda f: f.write(b"written"), b"written")],
    ids=["bytes", "text", "writer"],
)
def test_bytes_text_or_a_writer_replace_the_file(tmp_path: Path, data: Any, expected: bytes) -> None:
    path = tmp_path / "file"
    path.write_text("old")
    write_atomic(path, data)
    assert path.read_bytes() == expected
    assert [p.name for p in tmp_path.iterdir()] == ["file"]  # no temporary file left


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("old")

    def full(f: BinaryIO) -> None:
        f.write(b"part of the new")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(OSError, match="No space left"):
        write_atomic(path, full)
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


def test_the_data_is_synced_before_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    def replace(src: Path, dst: Path) -> None:
        calls.append("replace")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    write_atomic(tmp_path / "file", "new")
    assert calls == ["fsync", "replace", "fsync"]  # the file's data, the rename, then the folder
