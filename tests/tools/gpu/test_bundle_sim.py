"""The simulator bundle's CPU rehearsal (issue 38): staged into parts, carried and installed into a clean venv with
only torch, numpy and the device image's other packages, exactly as ``python -m tools.gpu.bundle plan`` says,
then Redline-Cartpole trains 2 iterations and Redline-Velocity-Flat-Go1 trains 2 (``scripts/gpu_sim_check.sh``).

``test_rehearsal_fast_level`` stages with ``xz -0`` (23 s instead of 5 min for the device's ``xz -6``; 4 parts
instead of 3), every wheel the device gets; the device's own level is the second test. Both run under
``--extended`` (2-6 min: outside CI's 20 min; run them before a device call, docs/gpu.md). As on the device,
Warp's kernel cache starts empty and no bytecode is read or written, so the stages' budgets are tried cold; an
install that fails is a failure, not a skip (the rehearsal would otherwise pass by never running).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from redline.bench import gpu_pack
from tools.gpu import bundle

ROOT = Path(__file__).resolve().parents[3]


def _uv() -> str:
    uv = gpu_pack.uv_program()
    if uv is None:
        pytest.fail("uv is not installed (the rehearsal's clean venv is made with it)")
    return uv


def clean_venv(path: Path) -> Path:
    """A venv with torch, numpy, the image's other packages the GPU path imports (:data:`bundle.IMAGE_DISTS`) and
    pip, at this venv's versions, linked from uv's cache (offline when its index pages are cached); its python."""
    uv = _uv()
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(path)], check=True)
    python = path / "bin" / "python"
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in ("torch", *bundle.IMAGE_DISTS)]
    base = [uv, "pip", "install", "-q", "--python", str(python), *pins, "pip"]
    if subprocess.run([*base, "--offline"], capture_output=True).returncode != 0:
        done = subprocess.run(base, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip() or "no output").splitlines()[-1]
            pytest.fail(f"uv could not make the clean venv: {last}")
    return python


def device_env(tmp: Path, python: Path) -> dict[str, str]:
    """``gpu_sim_check.sh``'s environment: the device's folders under ``tmp`` and its cold start, Warp's kernel
    cache and Python's bytecode cache empty, nothing written to the bytecode cache (each process compiles)."""
    warp, pyc = tmp / "warp-cache", tmp / "pycache"
    warp.mkdir()
    pyc.mkdir()
    return {
        **os.environ,
        "PYTHON": str(python), "STAGE": str(tmp / "build" / "gpu-stage"), "INTO": str(tmp / "device-stage"),
        "SITE": str(tmp / "device-site"), "OUT": str(tmp / "out"), "RUNS": str(tmp / "runs"),
        "WARP_CACHE_PATH": str(warp), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(pyc),
        "OMP_NUM_THREADS": "1",
    }  # fmt: skip


def rehearse(tmp: Path, level: int | None) -> dict:
    """Stage, make the clean venv, run the plan's calls with ``python3`` -> the clean venv's python and the device
    folders under ``tmp``; returns the manifest, the calls and the last call's output."""
    stage_dir = tmp / "build" / "gpu-stage"
    manifest = bundle.stage(stage_dir, level=level)
    python = clean_venv(tmp / "venv")
    env = device_env(tmp, python)
    into, site, out = Path(env["INTO"]), Path(env["SITE"]), Path(env["OUT"])
    calls = bundle.plan(stage_dir)
    outputs = []
    for call in calls[:-1]:
        assert call["command"].startswith("PYTHONPATH=source python3 -m tools.gpu.bundle receive")
        args = call["command"].split()[4:]  # receive DIR INDEX
        cmd = [str(python), "-m", "tools.gpu.bundle", *args, "--into", str(into)]
        done = subprocess.run(cmd, cwd=ROOT, env={**env, "PYTHONPATH": "source"}, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert calls[-1]["command"] == "bash scripts/gpu_sim_check.sh"
    cmd = ["bash", "scripts/gpu_sim_check.sh", "--device", "cpu", "--tiny", "--stages", "throughput"]
    last = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    cartpole = subprocess.run(
        [str(python), "-m", "redline.cli", "train", "--task", "Redline-Cartpole", "--num_envs", "8", "--device",
         "cpu", "--max_iterations", "2", "--log_root", str(tmp / "logs"), "physics=newton_mjwarp"],
        cwd=tmp, env={**env, "PYTHONPATH": str(site)}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return {"manifest": manifest, "calls": calls, "receive": outputs, "last": last, "out": out, "cartpole": cartpole,
            "python": python, "site": site, "env": env}  # fmt: skip


def check_rehearsal(r: dict) -> None:
    """What must hold whatever the level."""
    manifest, calls = r["manifest"], r["calls"]
    assert len(calls) == len(manifest["parts"]) >= 2  # the real bundle never fits one call
    for call in calls:
        assert len(call["carry"]) == 2 and call["carry"][0].endswith(bundle.MANIFEST)
        assert bundle.fits(bundle.working_tree_mib(), call["mib"]) and len(call["command"]) < 2000
    assert {w.split("-")[0] for w in manifest["wheels"]} >= {"warp_lang", "isaaclab", "newton", "redline"}
    assert "ok" in r["receive"][0] and "missing" in r["receive"][0]
    assert r["last"].returncode == 0, r["last"].stdout[-3000:] + r["last"].stderr[-2000:]
    assert sorted(p.name for p in r["out"].rglob("*")) == ["gpu_sim.json", "gpu_sim.log", "install.log"]
    result = json.loads((r["out"] / "gpu_sim.json").read_text())
    assert result["stages"]["throughput"]["ok"], result["stages"]["throughput"]  # inside its budget, cold
    run = result["stages"]["throughput"]["tasks"]["Redline-Velocity-Flat-Go1@4"]
    assert run["iterations"] == 2 and run["sps"] > 0
    assert "installed" in (r["out"] / "install.log").read_text()
    assert r["cartpole"].returncode == 0, r["cartpole"].stdout[-3000:] + r["cartpole"].stderr[-2000:]
    # the redline that ran is the bundle's, not this checkout's venv
    where = subprocess.run(
        [str(r["python"]), "-c", "import redline, warp, isaaclab; print(redline.__file__, warp.__file__)"],
        env={**r["env"], "PYTHONPATH": str(r["site"])}, capture_output=True, text=True, cwd="/",
    )  # fmt: skip
    assert where.stdout.count(str(r["site"])) == 2, where.stdout + where.stderr


@pytest.mark.sim
@pytest.mark.extended  # 140 s; run it before a device call (docs/gpu.md), CI keeps the bundle's unit tests
def test_rehearsal_fast_level(tmp_path: Path) -> None:
    r = rehearse(tmp_path, level=0)
    check_rehearsal(r)
    assert r["manifest"]["level"] == 0
    # the last call again, as on a warm machine after a failed check: the install is skipped
    again = subprocess.run(
        ["bash", "scripts/gpu_sim_check.sh", "--stages", "nonsense"], cwd=ROOT, env=r["env"], capture_output=True,
        text=True,
    )  # fmt: skip
    assert "already installed" in again.stdout
    assert again.returncode == 2 and again.stderr.strip().splitlines()[-1].startswith("gpu_sim: error: --stages")


@pytest.mark.sim
@pytest.mark.extended
def test_rehearsal_device_level(tmp_path: Path) -> None:
    r = rehearse(tmp_path, level=None)
    check_rehearsal(r)
    assert r["manifest"]["level"] == 6 and len(r["manifest"]["parts"]) == 3


def test_the_rehearsal_starts_cold(tmp_path: Path) -> None:
    """The device starts with no Warp kernels and no bytecode for the bundle; the rehearsal's budgets must too."""
    env = device_env(tmp_path, Path("python"))
    assert Path(env["WARP_CACHE_PATH"]).is_relative_to(tmp_path) and not any(Path(env["WARP_CACHE_PATH"]).iterdir())
    assert env["PYTHONDONTWRITEBYTECODE"] == "1" and not any(Path(env["PYTHONPYCACHEPREFIX"]).iterdir())
    assert not Path(env["RUNS"]).is_relative_to(Path(env["OUT"]))


@pytest.mark.parametrize("uv", [None, "uv"])
def test_an_install_failure_fails_the_rehearsal(
    uv: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No uv, or uv unable to install torch and the image's packages: the rehearsal fails (it skipped, silently)."""
    monkeypatch.setattr(gpu_pack, "uv_program", lambda: uv)
    failing = subprocess.CompletedProcess([], 1, "", "error: no index reachable")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: failing)
    with pytest.raises(BaseException) as raised:  # a skip is a BaseException too: it must not be one
        clean_venv(tmp_path / "venv")
    assert raised.type is pytest.fail.Exception, raised.type
