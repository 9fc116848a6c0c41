"""``python -m tools.gpu.bundle``: the simulator bundle for a bare GPU machine, in parts that fit one call each.

The device machine has torch 2.11 and numpy but no Isaac Lab, Newton or Warp, and a call carries at most 64 MiB of
working tree. :func:`stage` writes every wheel the GPU simulator run needs beyond the machine's image
(:data:`SIM_DISTS`, plus redline's own wheel) as an uncompressed tar, compresses it (:data:`CODECS`) and splits it
into parts of at most ``part_mib`` MiB, with a SHA-256 manifest. :func:`plan` gives the device calls that carry the
parts, one per call, into :data:`DEVICE_STAGE`; the last call's :func:`install` verifies and reassembles them and
installs the wheels with ``pip install --no-index --no-deps --target`` (the learner bundle's route,
:func:`redline.bench.gpu_pack.pack`).

:data:`SIM_DISTS` is the diff of what this venv has and the image lacks, restricted to the distributions whose
modules are in ``sys.modules`` after ``redline train`` (both learners) on ``Redline-Cartpole`` with
``physics=newton_mjwarp`` and after every redline task's env (Ant, flat and rough Go1, G1) built from a fresh asset
root and stepped, with the benches and ``scripts/walk_time.py`` imported (2026-12-05). :data:`DROPPED` says what of
the venv's packages beyond the image the GPU path never imports. Each wheel comes from uv's cache (the wheel as
downloaded, unpacked) or, where the cache lacks it, from the installed files (its ``RECORD``), re-zipped uncompressed
so the outer compression sees the raw bytes; its source is in the manifest.

This module's install half (:func:`receive`, :func:`reassemble`, :func:`install`) uses the standard library alone
(with :mod:`redline.errors` and :mod:`redline.bench.gpu_pack`, which do too): on the device it runs from the working
tree (``PYTHONPATH=source python3 -m tools.gpu.bundle``, from the repository root) before redline is installed.

A tool for another machine, not part of the installed package: nothing at run time imports it. The learner's
bundle (``redline bench gpu --pack``) is :mod:`redline.bench.gpu_pack`, whose wheel build :func:`stage` reuses.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import hashlib
import importlib.metadata
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from redline.bench.gpu_pack import build_redline_wheel, uv_program
from redline.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
"""The checkout this module runs from (``tools/gpu/bundle.py``)."""
SIM_DISTS = (
    "warp-lang",
    "usd-exchange",
    "mujoco",
    "isaaclab",
    "newton",
    "mujoco-warp",
    "newton-usd-schemas",
    "botocore",
    "shapely",
    "rtree",
    "trimesh",
    "meshio",
    "glfw",
    "gymnasium",
    "Farama-Notifications",
    "hydra-core",
    "omegaconf",
    "antlr4-python3-runtime",
    "prettytable",
    "wcwidth",
    "tensordict",
    "pyvers",
    "rsl-rl-lib",
    "GitPython",
    "gitdb",
    "smmap",
)
"""Distributions the GPU simulator run imports that the device image lacks (the installed versions are bundled)."""
IMAGE_DISTS = (
    "numpy",
    "scipy",
    "pillow",
    "PyYAML",
    "protobuf",
    "tensorboard",
    "rich",
    "tqdm",
    "packaging",
    "absl-py",
    "attrs",
    "charset-normalizer",
    "cloudpickle",
    "lazy-loader",
    "nvidia-ml-py",
    "fsspec",
    "filelock",
    "networkx",
    "sympy",
    "mpmath",
    "typing_extensions",
)
"""Distributions the same run imports that the image already has (KINDS.md): the rehearsal's clean venv gets these
beside torch, at this venv's versions (the image's may differ; the device check prints them)."""
DROPPED = {
    "omniverseclient": "Isaac Lab's Nucleus client; redline's assets are local (never imported)",
    "av": "video encoding (--video only; never imported by the check)",
    "open3d": "Isaac Lab's point-cloud tools (never imported)",
    "cmeel-boost": "pinocchio's stack (pin, eigenpy, coal, cmeel-*): IK controllers, never imported",
    "imgui-bundle": "Newton's viewer (headless run)",
    "pyopengl": "viewers (headless run)",
    "mypy": "dev tools (mypy, ruff, ipython, jedi)",
    "plotly": "Isaac Lab's dash/plotly tools (never imported)",
    "coacd": "convex decomposition at asset authoring (never imported)",
}
"""Packages of this venv beyond the image that the GPU path never imports, each family named once, and why."""
CODECS = {
    "xz": (["xz", "-T0", "-c"], 6, ["xz", "-d", "-T0", "-c"]),
    "zstd": (["zstd", "-T0", "--long=27", "-c", "-q"], 19, ["zstd", "-d", "--long=27", "-c", "-q"]),
}
"""Compressors: (compress, default level, decompress), each reading stdin and writing stdout. Measured on this
2-core host on the 704 MiB tar (2026-12-05): xz -6 161.4 MiB in 312 s, decoded in 10-12 s; zstd -19 --long=27
158.1 MiB in 322 s, decoded in 1.1 s; xz -0 204.3 MiB in 23 s. Both give 3 parts of 60 MiB; xz is the default as
Python's ``lzma`` decodes it where the machine has no ``xz`` program, while zstd needs its program on both machines
(not listed for the device image)."""
PART_MIB = 56.0
"""Default size of a part [MiB]: a call carries at most :data:`CALL_MIB` MiB, the working tree (~3.1 MiB), the
manifest and :data:`CALL_MARGIN_MIB` included. The device's xz -6 bundle (161.4 MiB) is still 3 parts."""
CALL_MIB = 64.0
"""The most one device call carries, working tree and carried paths together [MiB] (the device tool's limit)."""
CALL_MARGIN_MIB = 2.0
"""Room every call keeps free [MiB]: for the working tree to grow between staging and calling, and for a session's
own small carried folders. With 60-MiB parts a call carried 63.07 MiB and had 0.93 MiB of room."""
MANIFEST_MIB = 0.05
"""The most the carried ``manifest.json`` may weigh [MiB] (27 wheels' names and SHA-256s: ~9 KiB)."""
STAGE_DIR = Path("build") / "gpu-stage"
"""Where :func:`stage` writes the parts here, relative to the repo root (``build/`` is git-ignored, so it travels
only when a call's ``carry`` names it)."""
DEVICE_STAGE = "/tmp/redline-stage"
"""Where each device call copies its part; /tmp persists while the machine stays warm (30 s between calls)."""
DEVICE_SITE = "/tmp/redline-site"
"""The ``pip install --target`` folder on the device (put on PYTHONPATH over the image's torch)."""
ARCHIVE = "sim-bundle.tar"
"""The uncompressed archive's name; parts are ``ARCHIVE.<codec>.NN``."""
MANIFEST = "manifest.json"
"""The manifest's name, carried with every part."""


@dataclasses.dataclass(frozen=True)
class DeviceTime:
    """The session's device time, as the plan spends it [s]: calls 1..N carry the parts, the last one installs and
    runs the first pass of the check; one more call (the working tree alone) reruns the failed stages or runs
    stage d. Start, transfer and install are estimates (the device tool's README; docs/gpu.md), not measurements."""

    budget: float = 900.0
    """A task's device time: 15 minutes, every start, call, idle wait and close counted."""
    start: float = 120.0
    """Starting a machine ("a minute or more"; a failed try costs 1-2 minutes)."""
    transfer: float = 30.0
    """One call carrying the manifest and a part (~60 MiB) there and its output back."""
    tree_only: float = 10.0
    """One call carrying the working tree alone (~3 MiB): the rerun."""
    install: float = 75.0
    """Verifying, reassembling and pip-installing the parts in the last call (~1 min)."""
    grace: float = 20.0
    """A pass's overrun past its deadline: the last child's SIGINT-to-SIGKILL wait."""
    give_back: float = 30.0
    """The idle window after the last reply before the machine goes back."""


def device_seconds(parts: int, deadline_s: float, rerun_s: float, t: DeviceTime = DeviceTime()) -> float:
    """Device time [s] of the plan: a start, ``parts`` carrying calls, the install, a first pass of ``deadline_s``,
    one rerun of ``rerun_s`` carrying only the working tree, and the idle window before the machine goes back."""
    first = t.start + parts * t.transfer + t.install + deadline_s + t.grace
    return first + t.tree_only + rerun_s + t.grace + t.give_back


# -------------------------------------------------------------------------------------------------------------------
# Stage (here)


def stage(
    dest: Path,
    part_mib: float = PART_MIB,
    codec: str = "xz",
    level: int | None = None,
    dists: tuple[str, ...] = SIM_DISTS,
) -> dict[str, Any]:
    """Write the bundle's parts and manifest into ``dest`` (emptied first).

    Args:
        dest: the stage folder (:data:`STAGE_DIR` for the device plan).
        part_mib: the most one part may weigh [MiB]; with the working tree, the manifest and
            :data:`CALL_MARGIN_MIB` it must fit :data:`CALL_MIB` (:func:`part_limit_mib`).
        codec: a key of :data:`CODECS`.
        level: the compression level (None: the codec's default; CI's rehearsal uses xz's 0, 14x faster).
        dists: the distributions to bundle besides redline (installed versions).

    Returns:
        The manifest: ``parts`` (name, bytes, sha256), ``archive`` (the compressed whole), ``wheels`` (file, bytes,
        sha256, source), ``unpacked_bytes`` and ``seconds`` of each step.
    """
    if codec not in CODECS:
        raise UserError(f"--codec: one of {', '.join(CODECS)}, got '{codec}'")
    limit = part_limit_mib(working_tree_mib())
    if not 0 < part_mib <= limit:
        raise UserError(
            f"--part-mib: must be in (0, {limit:.2f}] (a call carries {CALL_MIB:.0f} MiB: this working tree, the "
            f"manifest and {CALL_MARGIN_MIB:.0f} MiB of margin take the rest), got {part_mib}"
        )
    if dest.exists():
        shutil.rmtree(dest)
    wheels_dir = dest / "wheels"
    wheels_dir.mkdir(parents=True)
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    wheels: dict[str, dict[str, Any]] = {_redline_wheel(wheels_dir).name: {"source": "uv build"}}
    for name in dists:
        path, source = wheel_of(name, wheels_dir)
        wheels[path.name] = {"source": source}
    for name, row in wheels.items():
        row.update(bytes=(wheels_dir / name).stat().st_size, sha256=_sha256(wheels_dir / name))
    seconds["wheels"] = time.perf_counter() - start
    start = time.perf_counter()
    tar = dest / ARCHIVE
    with tarfile.open(tar, "w", format=tarfile.PAX_FORMAT) as archive:
        for name in sorted(wheels):
            archive.add(wheels_dir / name, arcname=name, filter=_plain)
    unpacked = tar.stat().st_size
    shutil.rmtree(wheels_dir)
    seconds["tar"] = time.perf_counter() - start
    start = time.perf_counter()
    packed = dest / f"{ARCHIVE}.{codec}"
    compress, default, _ = CODECS[codec]
    _pipe([*compress, f"-{default if level is None else level}"], tar, packed)
    tar.unlink()
    seconds["compress"] = time.perf_counter() - start
    parts = _split(packed, int(part_mib * 2**20))
    manifest = {
        "codec": codec,
        "archive": {"name": packed.name, "bytes": packed.stat().st_size, "sha256": _sha256(packed)},
        "parts": parts,
        "unpacked_bytes": unpacked,
        "wheels": wheels,
        "python": f"cp{sys.version_info.major}{sys.version_info.minor}",
        "level": default if level is None else level,
        "commit": _commit(),
        "seconds": seconds,
    }
    packed.unlink()
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def wheel_of(name: str, dest: Path) -> tuple[Path, str]:
    """The installed version of distribution ``name`` as a wheel in ``dest`` (stored, not deflated).

    Returns:
        The wheel's path and its source: ``uv cache`` (the downloaded wheel's files) or ``installed`` (the files
        its ``RECORD`` lists in this environment, without ``__pycache__`` and the installer's own files).
    """
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise UserError(f"bundle: distribution '{name}' is not installed in {sys.prefix}") from None
    info = Path(str(dist._path))  # type: ignore[attr-defined]  # its .dist-info folder
    cached = _uv_cache_entry(dist.metadata["Name"], dist.version, info.name)
    if cached is not None:
        files = [(p, p.relative_to(cached).as_posix()) for p in sorted(cached.rglob("*")) if p.is_file()]
        files = [(p, arc) for p, arc in files if "__pycache__" not in arc]
        return _write_wheel(dest, info, files, record=None), "uv cache"
    site = info.parent
    files = []
    for entry in dist.files or []:
        path = Path(str(entry.locate())).resolve()
        if path.is_relative_to(site.resolve()) and path.is_file() and "__pycache__" not in entry.parts:
            arc = path.relative_to(site.resolve()).as_posix()
            if arc.split("/")[-1] not in ("INSTALLER", "REQUESTED", "RECORD", "direct_url.json", "uv_cache.json"):
                files.append((path, arc))
    return _write_wheel(dest, info, files, record=f"{info.name}/RECORD"), "installed"


def _uv_cache_entry(name: str, version: str, info_name: str) -> Path | None:
    """uv's unpacked copy of the wheel of ``name==version`` (the folder holding ``info_name``), or None."""
    uv = uv_program()
    root = os.environ.get("UV_CACHE_DIR")
    if not root and uv:
        out = subprocess.run([uv, "cache", "dir"], capture_output=True, text=True)
        root = out.stdout.strip() if out.returncode == 0 else None
    base = Path(root or Path.home() / ".cache" / "uv")
    normal = re.sub(r"[-_.]+", "-", name).lower()
    for wheels in sorted(base.glob("wheels-v*"), reverse=True):
        for entry in sorted((wheels / "pypi" / normal).glob(f"{version}-*")):
            if entry.is_dir() and (entry / info_name).is_dir():
                return entry.resolve()
    return None


def _write_wheel(dest: Path, info: Path, files: list[tuple[Path, str]], record: str | None) -> Path:
    """Zip ``files`` (path, name in the wheel) into a wheel named from ``info``'s ``WHEEL`` tags; dist-info last,
    fixed timestamps (the same files give the same bytes). ``record``: write a fresh RECORD at that name."""
    tags = [
        line.split(":", 1)[1].strip() for line in (info / "WHEEL").read_text().splitlines() if line.startswith("Tag:")
    ]
    parts = [sorted({t.split("-")[i] for t in tags}) for i in range(3)]
    stem = info.name.removesuffix(".dist-info")
    path = dest / f"{stem}-{'-'.join('.'.join(p) for p in parts)}.whl"
    files = sorted(files, key=lambda f: (f[1].startswith(info.name), f[1].endswith("/RECORD"), f[1]))
    rows = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for src, arc in files:
            zinfo = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            zinfo.external_attr = (src.stat().st_mode & 0xFFFF) << 16
            data = src.read_bytes()
            zf.writestr(zinfo, data)
            digest = hashlib.sha256(data).digest()
            rows.append(f"{arc},sha256={_b64(digest)},{len(data)}")
        if record is not None:
            zinfo = zipfile.ZipInfo(record, date_time=(1980, 1, 1, 0, 0, 0))
            zinfo.external_attr = 0o644 << 16
            zf.writestr(zinfo, "\n".join([*rows, f"{record},,"]) + "\n")
    return path


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _redline_wheel(dest: Path) -> Path:
    """redline's wheel from this working tree (``uv build``, else ``pip wheel``), written into ``dest``."""
    build_redline_wheel(dest)
    found = sorted(dest.glob("redline-*.whl"))
    if not found:
        raise UserError(f"bundle: no redline wheel was written to {dest}")
    return found[-1]


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """A tar member without owner or time (the same wheels give the same archive)."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    return info


def _pipe(cmd: list[str], src: Path, out: Path) -> None:
    """``cmd < src > out``; a missing program or a failure is a one-line :class:`UserError`."""
    if shutil.which(cmd[0]) is None:
        raise UserError(f"bundle: '{cmd[0]}' is not installed (needed for --codec {cmd[0]})")
    with src.open("rb") as fin, out.open("wb") as fout:
        done = subprocess.run(cmd, stdin=fin, stdout=fout, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise UserError(f"bundle: {' '.join(cmd)} failed: {done.stderr.decode().strip()[-200:]}")


def _split(path: Path, part_bytes: int) -> list[dict[str, Any]]:
    """Cut ``path`` into ``path.NN`` files of at most ``part_bytes`` bytes; their names, sizes and SHA-256."""
    parts: list[dict[str, Any]] = []
    with path.open("rb") as f:
        while chunk := f.read(part_bytes):
            part = path.with_name(f"{path.name}.{len(parts):02d}")
            part.write_bytes(chunk)
            parts.append({"name": part.name, "bytes": len(chunk), "sha256": hashlib.sha256(chunk).hexdigest()})
    return parts


def _commit() -> str:
    """This checkout's commit, ``+dirty`` when it has changes (redline's wheel is built from the working tree)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") if head.returncode == 0 else "unknown"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


# -------------------------------------------------------------------------------------------------------------------
# Plan


def plan(stage_dir: Path = STAGE_DIR) -> list[dict[str, Any]]:
    """The device calls that carry the parts in ``stage_dir`` and run the check, in order.

    Each is ``{"command", "carry", "mib"}``: one short command, its ``carry`` list (the manifest and one part) and
    what that list weighs [MiB]. Calls 1..N-1 copy their part to :data:`DEVICE_STAGE` and check its SHA-256
    (:func:`receive`); the last does the same, then ``scripts/gpu_sim_check.sh`` reassembles, verifies, installs and
    runs the check. The machine stays warm 30 s after a call: make the next call at once.
    """
    manifest = _manifest(stage_dir)
    calls = []
    last = len(manifest["parts"]) - 1
    for i, part in enumerate(manifest["parts"]):
        carry = [(stage_dir / MANIFEST).as_posix(), (stage_dir / part["name"]).as_posix()]
        receive_cmd = f"PYTHONPATH=source python3 -m tools.gpu.bundle receive {stage_dir.as_posix()} {i}"
        command = "bash scripts/gpu_sim_check.sh" if i == last else receive_cmd
        calls.append({"command": command, "carry": carry, "mib": sum(Path(c).stat().st_size for c in carry) / 2**20})
    return calls


def show_plan(stage_dir: Path = STAGE_DIR) -> None:
    """Print :func:`plan`'s calls, the working tree's size and each call's total against :data:`CALL_MIB`."""
    tree = working_tree_mib()
    calls = plan(stage_dir)
    print(f"{len(calls)} device calls; working tree {tree:.1f} MiB travels with each (limit {CALL_MIB:.0f} MiB):")
    for i, call in enumerate(calls, 1):
        total = tree + call["mib"]
        flag = "" if fits(tree, call["mib"]) else f"  OVER {CALL_MIB - CALL_MARGIN_MIB:.0f} MiB: stage smaller parts"
        print(f"  call {i}: carry {json.dumps(call['carry'])} ({call['mib']:.1f} MiB, {total:.1f} in all){flag}")
        print(f"          command: {call['command']}")
    print("Make each call within 30 s of the last one's reply (the machine's warm window); if a call finds a")
    print("cold machine (its parts listed as missing), start again from call 1.")


def fits(tree_mib: float, carry_mib: float) -> bool:
    """Whether a call of this working tree and this carry [MiB] leaves :data:`CALL_MARGIN_MIB` of :data:`CALL_MIB`."""
    return tree_mib + carry_mib + CALL_MARGIN_MIB <= CALL_MIB


def part_limit_mib(tree_mib: float) -> float:
    """The biggest part [MiB] that :func:`fits` one call beside a working tree of ``tree_mib`` and the manifest."""
    return CALL_MIB - CALL_MARGIN_MIB - MANIFEST_MIB - tree_mib


def working_tree_mib(root: Path = ROOT) -> float:
    """What a device call sends besides ``carry`` [MiB] (:func:`travelling_bytes` of ``root`` alone)."""
    return travelling_bytes(root) / 2**20


def travelling_bytes(root: Path, carry: tuple[str, ...] = ()) -> int:
    """The bytes a device call sends from the checkout ``root``, counted as the device tool counts them: tracked and
    untracked-not-ignored files, the folder ``shared/`` where the checkout has one, and the ``carry`` paths (files,
    or folders with everything under them), each file once; a symbolic link travels as a link (its own size)."""
    out = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=False,
    )
    if out.returncode != 0:
        raise UserError(f"plan: {root} is not a git checkout (the working tree's size is what a call carries)")
    paths = {root / p for p in out.stdout.decode().split("\0") if p}
    for top in [root / "shared", *(root / c for c in carry)]:
        paths |= {top} if top.is_symlink() or top.is_file() else set(top.rglob("*"))
    return sum(p.lstat().st_size for p in paths if p.is_symlink() or p.is_file())


# -------------------------------------------------------------------------------------------------------------------
# Install (there; standard library only)


def receive(stage_dir: Path, index: int, into: Path = Path(DEVICE_STAGE)) -> dict[str, Any]:
    """Copy part ``index`` and the manifest from ``stage_dir`` (as carried) into ``into`` and verify its SHA-256.

    Returns:
        ``{"part", "ok", "present", "missing", "arrived_s"}``: the parts ``into`` now holds and lacks, and how long
        ago the carried part was written [s] (the transfer's end, as the device's clock saw it).
    """
    manifest = _manifest(stage_dir)
    count = len(manifest["parts"])
    if not -count <= index < count:
        raise UserError(f"receive: part index must be in 0..{count - 1} (or -1: the last), got {index}")
    part = manifest["parts"][index]
    src = stage_dir / part["name"]
    if not src.is_file():
        raise UserError(f"receive: {src} was not carried (name it in the call's carry)")
    into.mkdir(parents=True, exist_ok=True)
    arrived = time.time() - src.stat().st_mtime
    shutil.copyfile(stage_dir / MANIFEST, into / MANIFEST)
    shutil.copyfile(src, into / part["name"])
    ok = _sha256(into / part["name"]) == part["sha256"]
    present = [p["name"] for p in manifest["parts"] if _part_ok(into / p["name"], p)]
    missing = [p["name"] for p in manifest["parts"] if p["name"] not in present]
    return {"part": part["name"], "ok": ok, "present": present, "missing": missing, "arrived_s": arrived}


def _part_ok(path: Path, part: dict[str, Any]) -> bool:
    return path.is_file() and path.stat().st_size == part["bytes"]


def reassemble(stage: Path, out: Path) -> list[Path]:
    """Verify every part in ``stage`` against its manifest, join them, verify the whole, decompress and unpack the
    wheels into ``out``, and verify each wheel; returns the wheels. Any mismatch is a one-line :class:`UserError`."""
    manifest = _manifest(stage)
    for part in manifest["parts"]:
        path = stage / part["name"]
        if not path.is_file():
            raise UserError(f"reassemble: part {part['name']} is missing from {stage} (the machine went cold?)")
        if _sha256(path) != part["sha256"]:
            raise UserError(f"reassemble: part {part['name']} fails its SHA-256 (carry it again)")
    whole = stage / manifest["archive"]["name"]
    with whole.open("wb") as f:
        for part in manifest["parts"]:
            with (stage / part["name"]).open("rb") as src:
                shutil.copyfileobj(src, f, 1 << 22)
    if _sha256(whole) != manifest["archive"]["sha256"]:
        raise UserError(f"reassemble: {whole.name} fails its SHA-256 after joining the parts")
    out.mkdir(parents=True, exist_ok=True)
    with _decompressed(whole, manifest["codec"]) as stream, tarfile.open(fileobj=stream, mode="r|") as archive:
        archive.extractall(out, filter="data")
    whole.unlink()
    wheels = []
    for name, row in manifest["wheels"].items():
        path = out / name
        if not path.is_file() or _sha256(path) != row["sha256"]:
            raise UserError(f"reassemble: wheel {name} is missing or fails its SHA-256")
        wheels.append(path)
    return wheels


class _decompressed:
    """A readable stream of ``path`` decompressed by ``codec`` (its program, or Python's lzma for xz)."""

    def __init__(self, path: Path, codec: str) -> None:
        self.path, self.codec = path, codec
        self.proc: subprocess.Popen[bytes] | None = None
        self.file: Any = None

    def __enter__(self) -> Any:
        cmd = CODECS[self.codec][2]
        if shutil.which(cmd[0]) is not None:
            self.proc = subprocess.Popen([*cmd, str(self.path)], stdout=subprocess.PIPE)
            return self.proc.stdout
        if self.codec != "xz":
            raise UserError(f"reassemble: '{cmd[0]}' is not installed on this machine (the bundle is {self.codec})")
        self.file = lzma.open(self.path, "rb")
        return self.file

    def __exit__(self, *exc: object) -> None:
        if self.file is not None:
            self.file.close()
        if self.proc is not None:
            assert self.proc.stdout is not None
            if exc[0] is None:  # tarfile stops at the end-of-archive blocks: read the padding after them, else the
                while self.proc.stdout.read(1 << 20):  # decompressor may still be writing when the pipe closes
                    pass  # and dies of SIGPIPE (a good archive reported as undecodable, by timing)
            self.proc.stdout.close()
            if self.proc.wait() != 0 and exc[0] is None:
                raise UserError(f"reassemble: {self.codec} could not decompress {self.path.name}")


def install(stage: Path, site: Path, python: str = sys.executable) -> dict[str, Any]:
    """:func:`reassemble` the parts in ``stage`` and install the wheels into ``site`` with ``python -m pip install
    --no-index --no-deps --target`` (nothing fetched, nothing resolved). Returns the wheels and the seconds of each
    step; ``site`` then goes on PYTHONPATH."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=stage) as tmp:
        wheels = reassemble(stage, Path(tmp))
        unpacked = time.perf_counter() - start
        cmd = [python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-compile"]
        cmd += ["--no-cache-dir", "--upgrade", "--target", str(site), *map(str, wheels)]
        done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise UserError(f"install: pip install --target {site} failed: {last}")
    total = time.perf_counter() - start
    return {
        "site": str(site),
        "wheels": [w.name for w in wheels],
        "reassemble_s": unpacked,
        "install_s": total - unpacked,
    }


def _manifest(stage_dir: Path) -> dict[str, Any]:
    path = stage_dir / MANIFEST
    if not path.is_file():
        raise UserError(f"bundle: no {MANIFEST} in {stage_dir} (stage it first: python -m tools.gpu.bundle stage)")
    result: dict[str, Any] = json.loads(path.read_text())
    return result


def summary(manifest: dict[str, Any]) -> str:
    """The manifest in a few lines for people: the parts' sizes, the total and the biggest wheels [MiB]."""
    mib = 2**20
    parts = ", ".join(f"{p['bytes'] / mib:.1f}" for p in manifest["parts"])
    wheels = sorted(manifest["wheels"].items(), key=lambda kv: -kv[1]["bytes"])
    lines = [
        f"{len(manifest['parts'])} parts of {parts} MiB ({manifest['archive']['bytes'] / mib:.1f} MiB "
        f"{manifest['codec']} from {manifest['unpacked_bytes'] / mib:.1f} MiB of {len(wheels)} stored wheels)",
        "seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in manifest["seconds"].items()),
    ]
    lines += [f"  {row['bytes'] / mib:7.1f} MiB  {name}  ({row['source']})" for name, row in wheels[:8]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m tools.gpu.bundle {stage,plan,receive,install}``; bad input is one line and exit 2."""
    parser = argparse.ArgumentParser(prog="python -m tools.gpu.bundle", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("stage", help="write the parts and manifest (here)")
    p.add_argument("dir", nargs="?", type=Path, default=STAGE_DIR)
    p.add_argument("--part-mib", type=float, default=PART_MIB, help=f"the most a part weighs [MiB] ({PART_MIB:.0f})")
    p.add_argument("--codec", default="xz", help=f"{' | '.join(CODECS)} (xz)")
    p.add_argument("--level", type=int, default=None, help="compression level (the codec's default: xz 6)")
    p = sub.add_parser("plan", help="print the device calls")
    p.add_argument("dir", nargs="?", type=Path, default=STAGE_DIR)
    p = sub.add_parser("receive", help="copy one carried part into the device's stage folder and check it (there)")
    p.add_argument("dir", type=Path)
    p.add_argument("index", type=int)
    p.add_argument("--into", type=Path, default=Path(DEVICE_STAGE))
    p = sub.add_parser("install", help="verify, reassemble and pip-install the parts (there)")
    p.add_argument("stage", type=Path, nargs="?", default=Path(DEVICE_STAGE))
    p.add_argument("--site", type=Path, default=Path(DEVICE_SITE))
    args = parser.parse_args(argv)
    try:
        if args.verb == "stage":
            print(summary(stage(args.dir, args.part_mib, args.codec, args.level)))
        elif args.verb == "plan":
            show_plan(args.dir)
        elif args.verb == "receive":
            got = receive(args.dir, args.index, args.into)
            state = "ok" if got["ok"] else "FAILS ITS SHA-256: carry it again"
            print(
                f"{got['part']} {state}; arrived {got['arrived_s']:.1f} s ago; present {len(got['present'])}, "
                f"missing {got['missing'] or 'none'}"
            )
            return 0 if got["ok"] else 1
        else:
            done = install(args.stage, args.site)
            print(
                f"installed {len(done['wheels'])} wheels into {done['site']} "
                f"(reassemble {done['reassemble_s']:.1f} s, pip {done['install_s']:.1f} s)"
            )
    except UserError as exc:
        print(f"bundle {args.verb}: error: {exc}", file=sys.stderr)
        return exc.exit_status
    return 0


if __name__ == "__main__":
    sys.exit(main())
