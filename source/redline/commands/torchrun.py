"""``python -m redline.commands.torchrun``: torchrun (the same arguments, the same agent) whose failures are one line.

Plain torchrun ends every failure with a traceback and a report box, and exits 1 whatever its workers said. Here:

- a worker that failed: the worker already said why in one line (``rank 0: rank 1 (node 1) of 2 stopped
  answering ...``, ``stopped by SIGTERM after iteration 7 ...``); the agent adds
  ``redline torchrun: rank 1 (local rank 0 on node 10.0.0.2) exited with status 143`` and exits with that worker's
  status (143 after SIGTERM, so a Slurm requeue hook sees the pre-emption);
- a worker killed by a signal (``kill -9``, the OOM killer), which could say nothing: the survivors name it as lost
  in one line each, the agent adds ``redline torchrun: rank 1 (local rank 1 on this node) was killed by SIGKILL;
  stopping the run`` and exits with :data:`WORKER_KILLED` (1; 128 + N would read as this command itself being
  killed by signal N);
- a rendezvous that gives up (a node that never arrived, an endpoint out of reach): one line naming the
  rendezvous, its endpoint, the node count it waited for and the join timeout; exit 1;
- the agent itself stopped by a signal: one line, exit 128 + the signal; the first SIGTERM, SIGINT, SIGHUP or
  SIGQUIT stops the workers as torchrun does (the agent passes it on and waits for them), a repeated one is passed on
  to the workers and raises nothing (:func:`stop_handler`: torchrun's own handler raised again inside the agent's
  shutdown, a ``--- Logging error ---`` traceback, and could end the agent before its workers had saved);
- ``redline train --nproc``'s launcher killed (:mod:`redline.commands.lifeline`): the agent kills its workers at
  once, saving nothing, says so in one line and exits 1;
- an elastic restart: the agents share one store server for all rounds of a job by default, so a restarted worker
  can read the address a dead worker of the previous round published there and fail to connect; here every round's
  workers get a fresh store (``TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1``, unless set otherwise);
- a network partition: torchrun's agent can block for good on a rendezvous store it no longer reaches (a store
  client whose peer vanished does not time out), after its workers ended; when every worker has been dead and
  unreaped for :data:`STUCK_S` seconds, one line names the store and the agent exits with the first worker's status.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

from redline.commands import lifeline

PROG = "redline torchrun"
WORKER_KILLED = 1
"""Exit status when a worker was killed by a signal: the run failed; it was neither stopped nor killed itself."""
STUCK_S = 20.0
"""How long every worker may lie dead and unreaped (the agent no longer looks) before the agent is ended [s]."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run torchrun with ``argv`` (its own command line); returns the exit status."""
    # heavy: torch, not before the CLI has parsed
    from torch.distributed import run as torch_run
    from torch.distributed.elastic.multiprocessing import api as processes
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.elastic.rendezvous.api import RendezvousError, RendezvousTimeoutError

    os.environ.setdefault("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1")  # a fresh worker store per round (docstring)
    args = torch_run.parse_args(list(sys.argv[1:] if argv is None else argv))
    threading.Thread(target=_watch_workers, args=(args.rdzv_endpoint,), daemon=True).start()
    lifeline.watch(_launcher_gone)
    # the agent installs this module attribute as its handler each time it starts workers
    handler = stop_handler(lambda s: processes.SignalException(f"got signal {s.name}", sigval=s))
    processes._terminate_process_handler = handler  # type: ignore[assignment]  # mypy reads a def as its own type
    try:
        torch_run.run(args)
    except ChildFailedError as exc:
        rank, failure = exc.get_first_failure()
        where = f"rank {rank} (local rank {failure.local_rank} on {args.local_addr or 'this node'})"
        if failure.exitcode < 0:
            _say(f"{where} was killed by {signal_name(-failure.exitcode)}; stopping the run")
            return WORKER_KILLED
        _say(f"{where} exited with status {failure.exitcode}; stopping")
        return failure.exitcode
    except RendezvousTimeoutError:
        join = _rdzv_conf(args.rdzv_conf).get("join_timeout", "600")
        _say(
            f"rendezvous '{args.rdzv_id}' at {args.rdzv_endpoint}: the {args.nnodes} nodes of --nnodes did not all "
            f"arrive within the join timeout of {join} s (a node never started, or cannot reach the endpoint)"
        )
        return 1
    except RendezvousError as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        _say(f"rendezvous '{args.rdzv_id}' at {args.rdzv_endpoint} failed: {reason}")
        return 1
    except processes.SignalException as exc:
        _say(f"stopped by {signal_name(exc.sigval)}; the workers were asked to stop too")
        return 128 + int(exc.sigval)
    return 0


def stop_handler(first: Callable[[signal.Signals], BaseException]) -> Callable[[int, FrameType | None], None]:
    """The agent's handler of its stop signals: the first raises ``first(signal)`` (torchrun's ``SignalException``:
    the agent passes the signal to its workers and waits for them); each later one is passed straight to the live
    workers and raises nothing, so the agent keeps waiting (a second Ctrl-C still reaches the workers at once)."""
    received: list[int] = []

    def handle(signum: int, frame: FrameType | None) -> None:
        if not received:
            received.append(signum)
            raise first(signal.Signals(signum))
        for pid, status in children().items():
            if status is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signum)  # each worker leads a session of its own, as torchrun passes signals on

    return handle


def _launcher_gone(pid: int) -> None:
    """``redline train --nproc``'s launcher has ended (killed: it outlives the agent otherwise): kill the workers,
    which save nothing, say so, and end."""
    workers = [worker for worker, status in children().items() if status is None]
    for worker in workers:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(worker, signal.SIGKILL)
    _say(
        f"the launching command (pid {pid}) was killed; its workers end at once, saving nothing (the same command "
        "continues from the newest checkpoint)"
    )
    os._exit(1)


def _watch_workers(endpoint: str, poll_s: float = 1.0) -> None:
    """End this process when all its workers have been dead but unreaped for :data:`STUCK_S` (see the module)."""
    stuck_since = None
    while True:
        time.sleep(poll_s)
        workers = children()
        dead = [status for status in workers.values() if status is not None]
        if not workers or len(dead) < len(workers):
            stuck_since = None
            continue
        stuck_since = stuck_since or time.monotonic()
        if time.monotonic() - stuck_since >= STUCK_S:
            _say(
                f"the workers ended (status {dead[0]}) but torchrun's agent has not looked for {STUCK_S:g} s: it is "
                f"blocked on the rendezvous store at {endpoint}, out of reach (a network partition?); exiting"
            )
            os._exit(dead[0] or 1)


def signal_name(signum: int) -> str:
    """``SIGKILL`` for 9; ``signal 40`` for a number without a name."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def children() -> dict[int, int | None]:
    """This process's children: pid -> exit status if it is a zombie (128 + N if killed by signal N), else None."""
    found: dict[int, int | None] = {}
    for task in Path(f"/proc/{os.getpid()}/task").glob("*"):
        try:
            pids = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in map(int, pids):
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] == "Z":
                wait_status = int(fields[-1])  # the exit_code field: a wait(2) status
                found[pid] = 128 + (wait_status & 0x7F) if wait_status & 0x7F else wait_status >> 8
            else:
                found[pid] = None
    return found


def _rdzv_conf(text: str) -> dict[str, str]:
    """``key=value,key=value`` (torchrun's ``--rdzv_conf``) as a dict."""
    pairs = (item.partition("=") for item in text.split(",") if item)
    return {key.strip(): value.strip() for key, _, value in pairs}


def _say(line: str) -> None:
    print(f"{PROG}: {line}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
