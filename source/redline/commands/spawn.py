"""``redline train --nproc N``'s processes on this host: torchrun started over the workers' command line, signals
passed on, and the workers of a torchrun agent that was killed adopted, stopped (each saves) and reaped
(:func:`run_torchrun`). What runs is decided before, once (:mod:`redline.commands.launch`)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from redline.commands import lifeline
from redline.device import gpus_for
from redline.errors import ExpectedExit, UserError

LOOPBACK_ENV = {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}
"""What ``--nproc`` (one node) sets for its workers: gloo's and NCCL's sockets on loopback only (``--standalone``
already puts the rendezvous store on localhost), and NCCL's asynchronous error handling, so a collective a dead rank
never joins fails within the process-group timeout instead of hanging."""

ORPHAN_STOP_S = 60.0
"""How long the workers of a killed torchrun agent get to save the iteration in progress after SIGTERM before they
are killed [s]."""
PR_SET_CHILD_SUBREAPER = 36
"""``prctl`` option (linux/prctl.h): orphaned descendants are re-parented to this process instead of init."""


def torchrun_command(nproc: int, worker_argv: Sequence[str]) -> list[str]:
    """The single-node torchrun command line (:mod:`redline.commands.torchrun`: a failed worker is one line and its
    exit status) that runs ``redline <worker_argv>`` on ``nproc`` processes, rendezvous on loopback at a free port
    (``--standalone``)."""
    return [
        sys.executable,
        "-m",
        "redline.commands.torchrun",  # torchrun whose failures are one line with the worker's status
        "--standalone",
        f"--nproc_per_node={nproc}",
        "-m",
        "redline.cli",
        *worker_argv,
    ]


def run_torchrun(nproc: int, worker_argv: Sequence[str], device: str | None) -> int:
    """Run ``redline <worker_argv>`` on ``nproc`` local processes under torchrun (``device``: the workers',
    None: CUDA if present); returns its exit status.

    torchrun's agent runs in a process group of its own, so a SIGTERM or Ctrl-C to this command's group reaches it
    once, passed on from here (twice, from the group and from here, it used to raise again inside the agent's
    shutdown: a ``--- Logging error ---`` traceback); should this process be killed instead (SIGKILL to its group
    included), the agent and the workers see it gone and end at once, saving nothing (:mod:`.lifeline`).

    torchrun starts each worker in a session of its own, so a torchrun agent killed by a signal (``kill -9`` of the
    process whose command line also ends in ``--distributed``) would leave its workers training on, unseen. This
    process adopts them instead (a child subreaper), stops them with SIGTERM (each saves the iteration in progress,
    as on a pre-emption) and ends in one line.

    Raises:
        UserError: more processes than CUDA GPUs on a CUDA device.
        ExpectedExit: torchrun's agent was killed by a signal (exit status 1, after its workers were stopped).
    """
    gpus = gpus_for(device)
    if gpus and nproc > gpus:
        raise UserError(f"--nproc: {nproc} processes but {gpus} CUDA GPU(s); use --nproc <= {gpus} or --device cpu")
    command = torchrun_command(nproc, worker_argv)
    print(f"[redline] starting {nproc} processes: {' '.join(command[1:])}", file=sys.stderr, flush=True)
    _adopt_orphans()
    env = {**os.environ, **LOOPBACK_ENV, lifeline.LAUNCHER_ENV: lifeline.token()}  # the agent and workers watch us
    child = subprocess.Popen(command, env=env, process_group=0)  # not in our group: a group signal reaches it once

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
    from redline.commands.torchrun import signal_name  # torchrun's module imports torch.distributed: heavy

    stopped = stop_orphans()
    raise ExpectedExit(
        f"torchrun's agent (pid {child.pid}) was killed by {signal_name(-status)}; stopped its {stopped} worker(s) "
        "with SIGTERM (each saves the iteration in progress; continue with --resume)"
    )


def _adopt_orphans() -> None:
    """Become the reaper of this process's orphaned descendants (Linux; elsewhere nothing happens)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def stop_orphans(wait_s: float = ORPHAN_STOP_S) -> int:
    """SIGTERM to every live child of this process (the workers of a dead torchrun agent, adopted by
    :func:`_adopt_orphans`), SIGKILL to those still alive after ``wait_s``; reaps them all; returns how many."""
    from redline.commands.torchrun import children  # torchrun's module imports torch.distributed: heavy

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
