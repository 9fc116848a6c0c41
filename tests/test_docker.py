"""Static checks of the container files (no Docker engine runs on these machines)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def _instructions(path: Path) -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", path.read_text())  # join continuation lines
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


def test_dockerfile_runs_as_non_root_with_frozen_deps_and_redline_entrypoint() -> None:
    steps = _instructions(ROOT / "docker" / "Dockerfile")
    users = [arg for op, arg in steps if op == "USER"]
    assert users and users[-1] not in ("root", "0")
    runs = " ".join(arg for op, arg in steps if op == "RUN")
    assert "uv sync --frozen" in runs and "--no-dev" in runs
    assert ("ENTRYPOINT", '["redline"]') in steps
    for op, arg in steps:
        if op in ("ENV", "ARG"):
            assert not re.search(r"(TOKEN|SECRET|PASSWORD|API_KEY)", arg, re.IGNORECASE), arg
    copied = " ".join(arg for op, arg in steps if op == "COPY")
    for needed in ("pyproject.toml", "uv.lock", "source", "tasks"):
        assert needed in copied


def test_dockerignore_keeps_logs_caches_and_git_out() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv", "logs", ".cache"} <= ignored


DOCKERFILES = ("Dockerfile", "Dockerfile.isaacsim")
SECRET = re.compile(r"(TOKEN|SECRET|PASSW|API_?KEY|CREDENTIAL|NGC_KEY|PRIVATE)", re.IGNORECASE)
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def _from_images(steps: list[tuple[str, str]]) -> list[str]:
    """The image each ``FROM`` names, with ``${ARG}`` replaced by the ``ARG``'s default."""
    args = dict(arg.split("=", 1) for op, arg in steps if op == "ARG" and "=" in arg)
    images = []
    for op, arg in steps:
        if op == "FROM":
            image = next(t for t in arg.split() if not t.startswith("--"))
            images.append(re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), image))
    return images


@pytest.mark.parametrize("name", DOCKERFILES)
def test_every_from_is_pinned_by_digest_or_required(name: str) -> None:
    """A base is pinned by digest, or is a build argument without a default (the build then fails until the user
    names one) — never an unpinned tag or a digest of the wrong release."""
    steps = _instructions(ROOT / "docker" / name)
    images = _from_images(steps)
    required = {f"${{{arg}}}" for op, arg in steps if op == "ARG" and "=" not in arg}
    assert images and all(DIGEST.search(image) or image in required for image in images), images


def _cuda_major_of_torch() -> str:
    """The CUDA major version of the torch build uv.lock pins (its nvidia-cuda-runtime wheel)."""
    lock = (ROOT / "uv.lock").read_text()
    match = re.search(r'name = "nvidia-cuda-runtime(?:-cu\d+)?"\nversion = "(\d+)\.', lock)
    assert match, "no nvidia-cuda-runtime package in uv.lock"
    return match.group(1)


@pytest.mark.parametrize(
    ("unset", "line"),
    [
        ("SLURM_NNODES", "train.sbatch: SLURM_NNODES is not set: submit this script with sbatch (Slurm sets "),
        ("", "train.sbatch: scontrol is not on PATH: run this script on a Slurm node, through sbatch"),
    ],
)
def test_the_slurm_batch_outside_slurm_is_one_line(unset: str, line: str, tmp_path: Path) -> None:
    """Half-set Slurm variables, or no Slurm at all: one line and exit 2 before anything is created. Before: bash's
    'SLURM_NNODES: unbound variable' after a logs/ folder was made, or 'scontrol: command not found' and 127."""
    env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_NODELIST": "node[1-2]", "SLURM_NNODES": "2", "SLURM_JOB_ID": "7"}
    env.pop(unset, None)
    path = ROOT / "docker" / "slurm" / "train.sbatch"
    done = subprocess.run(["bash", str(path), "--task", "Redline-Ant"], cwd=tmp_path, env=env, capture_output=True)
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith(line), (done.returncode, lines)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("path", ["docker/Dockerfile", "docker/apptainer.def"])
def test_cuda_base_matches_the_locked_torch(path: str) -> None:
    """A CUDA 12 base under torch's CUDA 13 wheels (or the reverse) is a mismatch the first GPU run finds."""
    text = (ROOT / path).read_text()
    bases = re.findall(r"nvidia/cuda:(\d+)\.\d+\.\d+-runtime-ubuntu24\.04@sha256:", text)
    assert bases and set(bases) == {_cuda_major_of_torch()}, bases


@pytest.mark.parametrize("name", DOCKERFILES)
def test_the_user_does_not_collide_with_the_bases_uid_1000(name: str) -> None:
    """Ubuntu 24.04 images have user 'ubuntu' with uid 1000: `useradd --uid 1000` fails unless it is removed first."""
    runs = [arg for op, arg in _instructions(ROOT / "docker" / name) if op == "RUN"]
    adds = [run for run in runs if "useradd" in run]
    assert adds, "no non-root user is created"
    for run in adds:
        uid = re.search(r"--uid (\d+)", run)
        if uid and uid.group(1) == "1000":
            assert run.index("userdel") < run.index("useradd"), run


@pytest.mark.parametrize("name", DOCKERFILES)
def test_dependencies_are_installed_before_the_source_is_copied(name: str) -> None:
    """The dependency layer (gigabytes) depends on the lock file only, so a source edit reuses it."""
    steps = _instructions(ROOT / "docker" / name)
    copy_source = next(i for i, (op, arg) in enumerate(steps) if op == "COPY" and re.search(r"\bsource\b", arg))
    install = next(
        i for i, (op, arg) in enumerate(steps) if op == "RUN" and ("--no-install-project" in arg or "-r /tmp" in arg)
    )
    assert install < copy_source
    assert not any(op == "COPY" and re.search(r"\b(source|tasks)\b", arg) for op, arg in steps[:install])


@pytest.mark.parametrize("path", ["docker/Dockerfile", "docker/Dockerfile.isaacsim", "docker/apptainer.def"])
def test_uv_is_pinned(path: str) -> None:
    text = (ROOT / path).read_text()
    installs = re.findall(r"install [^\n]*?\buv\b(\S*)", text)
    assert installs, "uv is not installed here"
    for suffix in installs:
        assert suffix.startswith("==") or "UV_VERSION" in text, suffix


@pytest.mark.parametrize("name", DOCKERFILES)
def test_non_root_no_secrets_frozen_install(name: str) -> None:
    steps = _instructions(ROOT / "docker" / name)
    users = [arg for op, arg in steps if op == "USER"]
    assert users and users[-1] not in ("root", "0")
    for op, arg in steps:
        if op in ("ENV", "ARG"):
            assert not SECRET.search(arg), arg
    runs = " ".join(arg for op, arg in steps if op == "RUN")
    assert "--frozen" in runs and "--no-dev" in runs
    assert ("VOLUME", '["/workspace/logs"]') in steps


def test_compose_reserves_gpus_shm_and_a_log_volume() -> None:
    compose = yaml.safe_load((ROOT / "docker" / "docker-compose.yaml").read_text())
    services = compose["services"]
    assert {"train", "train-multigpu", "train-torchrun", "isaacsim"} <= set(services)
    for name, service in services.items():
        devices = service["deploy"]["resources"]["reservations"]["devices"]
        assert any(d["driver"] == "nvidia" and "gpu" in d["capabilities"] for d in devices), name
        assert service["shm_size"] and any(v.endswith(":/workspace/logs") for v in service["volumes"]), name
        for value in service.get("environment", []):
            assert "=" not in value, f"{name}: {value} (pass secrets and EULA answers from the host, not the file)"
        dockerfile = ROOT / "docker" / Path(service["build"]["dockerfile"]).name
        assert dockerfile.is_file(), dockerfile
    assert services["train-multigpu"]["deploy"]["resources"]["reservations"]["devices"][0]["count"] == "all"
    assert "--nproc" in services["train-multigpu"]["command"]
    torchrun = services["train-torchrun"]
    assert torchrun["entrypoint"] == ["torchrun"] and "--distributed" in torchrun["command"]


def test_apptainer_definition() -> None:
    text = (ROOT / "docker" / "apptainer.def").read_text()
    header = dict(
        line.split(":", 1) for line in text.split("\n%", 1)[0].splitlines() if line and not line.startswith("#")
    )
    assert header["Bootstrap"].strip() == "docker"
    assert DIGEST.search(header["From"].strip())
    sections = {m.group(1): m.group(2) for m in re.finditer(r"^%(\w+)\n(.*?)(?=^%|\Z)", text, re.M | re.S)}
    assert {"files", "environment", "post", "runscript"} <= set(sections)
    assert "uv sync --frozen --no-dev" in sections["post"]
    assert 'exec redline "$@"' in sections["runscript"]
    for line in sections["files"].split("\n"):
        if line.strip():
            source = line.split()[0]
            assert (ROOT / source).exists(), source
    assert not SECRET.search(sections["environment"])


def test_slurm_batch_is_multi_node_torchrun() -> None:
    path = ROOT / "docker" / "slurm" / "train.sbatch"
    subprocess.run(["bash", "-n", str(path)], check=True)  # parses as bash
    text = path.read_text()
    directives = dict(
        re.match(r"#SBATCH --([\w-]+)=(\S+)", line).groups()  # type: ignore[union-attr]
        for line in text.splitlines()
        if line.startswith("#SBATCH")
    )
    assert {"nodes", "ntasks-per-node", "gpus-per-node"} <= set(directives)
    assert directives["ntasks-per-node"] == "1"  # one torchrun per node
    assert "/" not in directives["output"]  # Slurm opens it before the script could create a folder
    assert re.fullmatch(r"(B:)?TERM@\d+", directives["signal"])  # SIGTERM ahead of the limit: the ranks checkpoint
    command = re.sub(r"\\\n\s*", " ", text)
    for needed in (
        '--nnodes="$SLURM_NNODES"',
        "--rdzv_backend c10d",
        "--rdzv_endpoint=",
        "redline.cli train --distributed",
    ):
        assert needed in command, needed


@pytest.mark.parametrize("path", ["docker/Dockerfile", "docker/apptainer.def"])
def test_what_the_local_build_found(path: str) -> None:
    """Found by building docker/Dockerfile for real (docs/containers.md): rsl_rl imports GitPython, which raises at
    import without a git executable, so `redline train` died in a base without git; and a `chown -R` of the venv
    after `uv sync` copies the whole ~8 GB venv into another layer."""
    text = re.sub(r"\\\n", " ", (ROOT / path).read_text())
    apt = [line for line in text.splitlines() if "apt-get install" in line]
    assert apt and all(re.search(r"\bgit\b", line) for line in apt), apt
    assert not re.search(r"chown -R \S+ \S*\.venv", text)
    if path.endswith("Dockerfile"):  # uv's download cache stays out of the layers (a cache mount)
        syncs = [line for line in text.splitlines() if "uv sync" in line]
        assert syncs and all("--mount=type=cache,target=/root/.cache/uv" in line for line in syncs), syncs
