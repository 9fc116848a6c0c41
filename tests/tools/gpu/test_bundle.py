"""The simulator bundle's parts: staged, carried one by one, verified and reassembled (no simulator, seconds)."""

from __future__ import annotations

import io
import lzma
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from redline.bench import gpu_pack
from redline.errors import UserError
from tools.gpu import bundle, gpu_sim

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two small distributions and redline's wheel in parts of 50 KiB (many parts)."""
    if gpu_pack.uv_program() is None and subprocess.run([sys.executable, "-m", "pip", "--version"]).returncode != 0:
        pytest.skip("neither uv nor pip can build redline's wheel here")
    dest = tmp_path_factory.mktemp("stage")
    bundle.stage(dest, part_mib=0.05, level=0, dists=("smmap", "gitdb"))
    return dest


def _received(staged: Path, into: Path) -> list[dict]:
    return [bundle.receive(staged, i, into) for i in range(len(bundle.plan(staged)))]


def test_parts_carried_one_by_one_reassemble_to_the_wheels(staged: Path, tmp_path: Path) -> None:
    manifest = bundle._manifest(staged)
    assert len(manifest["parts"]) >= 3 and all(p["bytes"] <= 0.05 * 2**20 for p in manifest["parts"])
    assert sum(p["bytes"] for p in manifest["parts"]) == manifest["archive"]["bytes"]
    got = _received(staged, tmp_path / "into")
    assert all(g["ok"] for g in got) and got[0]["missing"] and got[-1]["missing"] == []
    wheels = bundle.reassemble(tmp_path / "into", tmp_path / "wheels")
    assert sorted(w.name for w in wheels) == sorted(manifest["wheels"])
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            assert zf.testzip() is None and zf.namelist()[-1].endswith(".dist-info/RECORD")
            stored = all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
            assert stored or wheel.name.startswith("redline-")  # re-zipped uncompressed; redline's as built


def test_redlines_wheel_holds_every_tracked_module(staged: Path, tmp_path: Path) -> None:
    """Found by the rehearsal: ``.gitignore``'s ``outputs/`` once kept ``redline/outputs/`` out of the wheel."""
    _received(staged, tmp_path / "into")
    wheel = next(w for w in bundle.reassemble(tmp_path / "into", tmp_path / "wheels") if w.name.startswith("redline-"))
    tracked = subprocess.run(["git", "ls-files", "source/redline/*.py", "tasks/redline_tasks/*.py"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [p for p in tracked if p.removeprefix("source/").removeprefix("tasks/") not in names]
    assert tracked and missing == []


def test_a_corrupt_or_missing_part_is_one_line(staged: Path, tmp_path: Path) -> None:
    into = tmp_path / "into"
    _received(staged, into)
    part = into / bundle._manifest(staged)["parts"][1]["name"]
    part.write_bytes(b"x" + part.read_bytes()[1:])
    with pytest.raises(UserError, match="fails its SHA-256"):
        bundle.reassemble(into, tmp_path / "wheels")
    part.unlink()
    with pytest.raises(UserError, match="missing"):
        bundle.reassemble(into, tmp_path / "wheels")


def test_the_plan_carries_the_manifest_and_one_part_per_call(staged: Path) -> None:
    calls = bundle.plan(staged)
    parts = bundle._manifest(staged)["parts"]
    assert [c["carry"][1].split("/")[-1] for c in calls] == [p["name"] for p in parts]
    manifest_bytes = (staged / bundle.MANIFEST).stat().st_size
    assert [c["mib"] * 2**20 for c in calls] == [manifest_bytes + p["bytes"] for p in parts]  # the manifest counts
    assert all(c["carry"][0].endswith("manifest.json") for c in calls)
    assert calls[-1]["command"] == "bash scripts/gpu_sim_check.sh"
    assert calls[0]["command"].endswith(f"receive {staged.as_posix()} 0")


def test_a_wheel_from_the_installed_files_when_uv_has_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundle, "_uv_cache_entry", lambda *a: None)
    path, source = bundle.wheel_of("smmap", tmp_path)
    assert source == "installed" and path.name.startswith("smmap-") and path.name.endswith("-none-any.whl")
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        record = zf.read(names[-1]).decode()
    assert "smmap/__init__.py" in names and not any(n.endswith(("INSTALLER", ".pyc")) for n in names)
    assert "smmap/__init__.py,sha256=" in record


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["stage", "x", "--codec", "lz4"], "--codec: one of xz, zstd, got 'lz4'"),
        (["stage", "x", "--part-mib", "60"], "--part-mib: must be in (0, 5"),  # 64 less tree, manifest, margin
        (["plan", "nowhere"], "no manifest.json in nowhere (stage it first: python -m tools.gpu.bundle stage)"),
    ],
)
def test_bad_input_is_one_line(argv: list[str], message: str) -> None:
    cmd = [sys.executable, "-m", "tools.gpu.bundle", *argv]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)  # run from the repository root
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and message in done.stderr


def test_receive_names_a_bad_index(staged: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"part index must be in 0\.\.\d+ \(or -1: the last\), got 99"):
        bundle.receive(staged, 99, tmp_path)


def test_travelling_bytes_count_what_the_device_tool_sends(tmp_path: Path) -> None:
    """Tracked and untracked-not-ignored files, shared/ (ignored or not), the carry paths, a link as a link."""
    root = tmp_path / "repo"
    (root / "build" / "stage").mkdir(parents=True)
    (root / "shared").mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    sizes = {".gitignore": b"build/\nshared/\n*.log\n", "tracked.py": b"t" * 100, "untracked.py": b"u" * 50}
    for name, data in {**sizes, "ignored.log": b"i" * 1000, "shared/x": b"s" * 30}.items():
        (root / name).write_bytes(data)
    for name, data in {"build/stage/part.00": b"p" * 2000, "build/stage/manifest.json": b"m" * 7}.items():
        (root / name).write_bytes(data)
    (tmp_path / "big").write_bytes(b"b" * 10_000)
    (root / "link").symlink_to(tmp_path / "big")
    subprocess.run(["git", "-C", str(root), "add", ".gitignore", "tracked.py"], check=True)
    tree = sum(map(len, sizes.values())) + 30 + len(str(tmp_path / "big"))  # the link's own size
    assert bundle.travelling_bytes(root) == tree
    assert bundle.travelling_bytes(root, ("build/stage/part.00", "build/stage/manifest.json")) == tree + 2007
    assert bundle.travelling_bytes(root, ("build/stage", "build/stage/part.00")) == tree + 2007  # each file once


def test_this_working_tree_and_a_part_fit_one_call_with_the_margin(staged: Path) -> None:
    """With 60-MiB parts a call carried 63.07 of 64 MiB: the default part, this working tree (as the device tool
    counts it) and the manifest must leave :data:`bundle.CALL_MARGIN_MIB` free."""
    tree = bundle.working_tree_mib()
    assert bundle.CALL_MARGIN_MIB >= 2.0
    assert bundle.fits(tree, bundle.PART_MIB + bundle.MANIFEST_MIB), f"{tree:.2f} MiB of working tree"
    assert bundle.part_limit_mib(tree) >= bundle.PART_MIB
    manifest = bundle._manifest(staged)  # the device's has 27 wheels: a manifest that size, long names and all
    per_wheel = (staged / bundle.MANIFEST).stat().st_size / len(manifest["wheels"])
    assert 2 * per_wheel * (len(bundle.SIM_DISTS) + 1) <= bundle.MANIFEST_MIB * 2**20
    assert not bundle.fits(3.0, 60.0 + 0.01)  # the old plan's call, now flagged


def test_the_plan_leaves_time_for_one_rerun_inside_the_device_budget() -> None:
    """docs/gpu.md: the 3 calls of the xz -6 bundle, the first pass at the script's deadline, and one rerun of the
    same length fit a task's 15 device minutes; the first pass's stages fit that deadline."""
    script = (ROOT / "scripts" / "gpu_sim_check.sh").read_text()
    deadline = float(re.search(r"^DEADLINE=\$\{DEADLINE:-(\d+)\}", script, re.M).group(1))  # type: ignore[union-attr]
    first = re.search(r"^STAGES=\$\{STAGES:-([a-z_,]+)\}", script, re.M).group(1).split(",")  # type: ignore[union-attr]
    assert bundle.device_seconds(3, deadline, deadline) <= bundle.DeviceTime().budget
    assert sum(gpu_sim.GPU.budgets[s] for s in first) <= deadline
    assert sum(gpu_sim.GPU.budgets[s] for s in gpu_sim.STAGES if s not in first) <= deadline  # the rerun's slot
    assert deadline + 60 + bundle.DeviceTime().install <= 600  # the last call's timeout_s, under 10 minutes


def test_decompressing_reads_past_the_end_of_archive_blocks(tmp_path: Path) -> None:
    """tarfile's stream mode stops at the end-of-archive blocks; what the compressor still has to write after them
    (here 4 MiB of padding, far more than a pipe holds) must be read, or ``xz`` dies of SIGPIPE and a good archive is
    reported as undecodable (CI, 2026-12-06: by timing, on the rehearsal's 204 MiB archive)."""
    if shutil.which("xz") is None:
        pytest.skip("needs the xz program (Python's lzma reader has no pipe)")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("a.txt")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"hello"))
    path = tmp_path / "a.tar.xz"
    path.write_bytes(lzma.compress(raw.getvalue() + bytes(4 << 20)))
    with bundle._decompressed(path, "xz") as stream, tarfile.open(fileobj=stream, mode="r|") as archive:
        archive.extractall(tmp_path / "out", filter="data")
    assert (tmp_path / "out" / "a.txt").read_bytes() == b"hello"
