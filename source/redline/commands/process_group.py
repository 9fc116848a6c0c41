"""Multi-process training: ``redline train --nproc N`` starts torchrun; ``--distributed`` joins its process group.

Each rank runs its own envs (``--num_envs`` is per process, as in Isaac Lab) with global env ids offset by the env
counts of lower ranks, so ``per_env`` seeding gives the union of all ranks' envs the streams of one process with all
envs. NCCL on CUDA (``cuda:LOCAL_RANK``), gloo on CPU. Only rank 0 writes logs and checkpoints and shows progress.

On the CPU without ``--nproc``, ``redline train`` fills the cores by itself (:func:`auto_nproc`): one process per core,
the command's env count (there a total) split evenly over them, each process with one core's threads. Measured on
2 cores (docs/performance.md): one MuJoCo-C thread per process in its own process beats two threads in one process,
because everything outside the physics (observations, rewards, resets, inference, the update) then runs on both cores
too. With ``per_env`` seeding the run is the same experiment as one process with all envs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from redline.errors import ExpectedExit, UserError
from redline.host import cores_per_process

TORCHRUN_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
"""Environment variables torchrun gives each worker; ``--distributed`` needs all of them."""


@dataclasses.dataclass(frozen=True)
class DistContext:
    """This process's place in the process group."""

    rank: int
    """Global rank (seeds and env ids use it; never the local rank)."""
    world_size: int
    """Number of ranks over all nodes."""
    local_rank: int
    """Rank on this node: the CUDA device index."""
    device: str
    """``cuda:LOCAL_RANK`` or ``cpu``."""
    backend: str
    """``nccl`` or ``gloo``."""
    timeout_s: float
    """Process-group timeout [s]: a collective waiting longer than this fails and names the lost rank."""


LOOPBACK_ENV = {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}
"""What ``--nproc`` (one node) sets for its workers: gloo's and NCCL's sockets on loopback only (``--standalone``
already puts the rendezvous store on localhost), and NCCL's asynchronous error handling, so a collective a dead rank
never joins fails within the process-group timeout instead of hanging."""


MIN_ENVS_PER_RANK = 256
"""Fewest envs per process the automatic arrangement gives a rank. Measured on 2 cores (docs/performance.md,
2026-12-03): the Go1 with 1024 envs ran 1.19x faster as 2 x 512 (quiet; 2.2x with the cores contended), Cartpole
with 256 slower as 2 x 128 (each process
pays the whole per-step overhead of Isaac Lab and the per-minibatch all-reduce for half the envs)."""


def auto_nproc(total_envs: int, cores: int, min_envs: int = MIN_ENVS_PER_RANK) -> int:
    """Processes for a CPU run of ``total_envs`` envs on ``cores`` cores: the most ranks, at most one per core, that
    split the envs evenly with at least ``min_envs`` each; 1 when no such split exists."""
    for nproc in range(cores, 1, -1):
        if total_envs % nproc == 0 and total_envs // nproc >= min_envs:
            return nproc
    return 1


def with_num_envs(argv: Sequence[str], num_envs: int) -> list[str]:
    """``argv`` with its env count (``--num_envs N``, ``--num_envs=N``, ``env.scene.num_envs=N``) replaced by
    ``--num_envs num_envs``."""
    kept = [token for token in _without(argv, "--num_envs") if not token.startswith("env.scene.num_envs=")]
    return [*kept, "--num_envs", str(num_envs)]


def torchrun_command(nproc: int, argv: Sequence[str]) -> list[str]:
    """The single-node torchrun command line (:mod:`redline.commands.torchrun`: a failed worker is one line and its
    exit status) that runs ``redline <argv> --distributed`` on ``nproc`` processes.

    Args:
        nproc: processes to start (``--nproc_per_node``); rendezvous on loopback at a free port (``--standalone``).
        argv: the ``redline`` arguments (``train ...``) without ``--nproc``.
    """
    return [
        sys.executable,
        "-m",
        "redline.commands.torchrun",  # torchrun whose failures are one line with the worker's status
        "--standalone",
        f"--nproc_per_node={nproc}",
        "-m",
        "redline.cli",
        *argv,
        "--distributed",
    ]


def strip_nproc(argv: Sequence[str]) -> list[str]:
    """``argv`` without its ``--nproc N`` / ``--nproc=N`` option."""
    return _without(argv, "--nproc")


def _without(argv: Sequence[str], option: str) -> list[str]:
    """``argv`` without ``option VALUE`` / ``option=VALUE``."""
    out: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token == option:
            skip = True
        elif not token.startswith(f"{option}="):
            out.append(token)
    return out


ORPHAN_STOP_S = 60.0
"""How long the workers of a killed torchrun agent get to save the iteration in progress after SIGTERM before they
are killed [s]."""
PR_SET_CHILD_SUBREAPER = 36
"""``prctl`` option (linux/prctl.h): orphaned descendants are re-parented to this process instead of init."""


def launch(nproc: int, argv: Sequence[str], device: str | None) -> int:
    """Run ``redline train`` on ``nproc`` local processes under torchrun; returns its exit status.

    torchrun starts each worker in a session of its own, so a torchrun agent killed by a signal (``kill -9`` of the
    process whose command line also ends in ``--distributed``) would leave its workers training on, unseen. This
    process adopts them instead (a child subreaper), stops them with SIGTERM (each saves the iteration in progress,
    as on a pre-emption) and ends in one line.

    Raises:
        UserError: more processes than CUDA GPUs on a CUDA device.
        ExpectedExit: torchrun's agent was killed by a signal (exit status 1, after its workers were stopped).
    """
    import torch

    if (device is None or device.startswith("cuda")) and torch.cuda.is_available():
        gpus = torch.cuda.device_count()
        if nproc > gpus:
            raise UserError(f"--nproc: {nproc} processes but {gpus} CUDA GPU(s); use --nproc <= {gpus} or --device cpu")
    command = torchrun_command(nproc, strip_nproc(argv))
    print(f"[redline] starting {nproc} processes: {' '.join(command[1:])}", file=sys.stderr, flush=True)
    _adopt_orphans()
    child = subprocess.Popen(command, env={**os.environ, **LOOPBACK_ENV})

    def forward(signum: int, frame: object) -> None:
        child.send_signal(signum)  # torchrun's agent passes it to every worker; they save and stop together

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        status = child.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if status >= 0:
        return status
    from redline.commands.torchrun import signal_name

    stopped = stop_orphans()
    raise ExpectedExit(
        f"torchrun's agent (pid {child.pid}) was killed by {signal_name(-status)}; stopped its {stopped} worker(s) "
        "with SIGTERM (each saves the iteration in progress; continue with --resume)"
    )


def _adopt_orphans() -> None:
    """Become the reaper of this process's orphaned descendants (Linux; elsewhere nothing happens)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def stop_orphans(wait_s: float = ORPHAN_STOP_S) -> int:
    """SIGTERM to every live child of this process (the workers of a dead torchrun agent, adopted by
    :func:`_adopt_orphans`), SIGKILL to those still alive after ``wait_s``; reaps them all; returns how many."""
    from redline.commands.torchrun import children

    pids = [pid for pid, status in children().items() if status is None]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    left = set(pids)
    while left:
        for pid in list(left):
            try:
                ended = os.waitpid(pid, os.WNOHANG)[0] != 0
            except ChildProcessError:  # reaped already
                ended = True
            if not ended and time.monotonic() >= deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                ended = True
            if ended:
                left.discard(pid)
        if left:
            time.sleep(0.1)
    return len(pids)


def init(device: str | None, timeout_s: float) -> DistContext:
    """Join the process group torchrun prepared (``env://``) and pick this rank's device.

    Args:
        device: the ``--device`` option: None / ``cuda*`` use ``cuda:LOCAL_RANK`` when CUDA exists, else the CPU.
        timeout_s: the process group's timeout [s].

    Raises:
        UserError: not started by torchrun, or the rendezvous cannot be reached within ``timeout_s``.
    """
    missing = [k for k in TORCHRUN_ENV if k not in os.environ]
    if missing:
        raise UserError(
            f"--distributed: not started by torchrun ({', '.join(missing)} unset); use `redline train --nproc N ...` "
            "or `torchrun --nproc_per_node N -m redline.cli train --distributed ...`"
        )
    if timeout_s <= 0:
        raise UserError(f"--dist_timeout: must be > 0 seconds, got {timeout_s:g}")
    import torch
    import torch.distributed as dist

    rank, world, local = (_rank_variable(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    if world < 1 or not 0 <= rank < world:
        raise UserError(f"--distributed: RANK={rank} and WORLD_SIZE={world} (valid: 0 <= RANK < WORLD_SIZE)")
    if "LOCAL_WORLD_SIZE" in os.environ:  # Isaac Lab's USD spawner reads it with int() too
        per_node = _rank_variable("LOCAL_WORLD_SIZE")
        if not local < per_node <= world:
            raise UserError(
                f"--distributed: LOCAL_WORLD_SIZE={per_node} and LOCAL_RANK={local} "
                "(valid: 0 <= LOCAL_RANK < LOCAL_WORLD_SIZE <= WORLD_SIZE)"
            )
    use_cuda = (device is None or device.startswith("cuda")) and torch.cuda.is_available()
    if device is not None and device.startswith("cuda") and not torch.cuda.is_available():
        raise UserError(f"--device: '{device}' requested but CUDA is not available (valid here: cpu)")
    if use_cuda:
        if local >= torch.cuda.device_count():
            raise UserError(f"--nproc: local rank {local} but only {torch.cuda.device_count()} CUDA GPU(s)")
        torch.cuda.set_device(local)
    target = f"cuda:{local}" if use_cuda else "cpu"
    backend = "nccl" if use_cuda else "gloo"
    address = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    try:
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
    except Exception as exc:  # DistStoreError, TimeoutError, RuntimeError, depending on where it failed
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise UserError(
            f"--distributed: rank {rank} could not join the process group at {address} within {timeout_s:g} s "
            f"({reason})"
        ) from exc
    if not use_cuda:
        torch.set_num_threads(cores_per_process())  # processes x threads = cores (redline.host)
    return DistContext(rank, world, local, target, backend, timeout_s)


def _rank_variable(name: str) -> int:
    """A torchrun variable as a non-negative integer; anything else is a one-line :class:`UserError`."""
    text = os.environ[name]
    if not text.strip().isdigit():
        raise UserError(f"--distributed: {name}={text!r} is not a non-negative integer (set by torchrun)")
    return int(text)


def shutdown() -> None:
    """Leave the process group (if one was joined)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def barrier() -> None:
    """Wait for every rank (a no-op without a process group)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
