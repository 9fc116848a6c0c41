"""``python -m redline.commands.torchrun``: torchrun (the same arguments, the same agent) whose failures are one line.

Plain torchrun ends every failure with a traceback and a report box, and exits 1 whatever its workers said. Here:

- a worker that failed: the worker already said why in one line (``rank 0: rank 1 (node 1) of 2 stopped
  answering ...``, ``stopped by SIGTERM after iteration 7 ...``); the agent adds
  ``redline torchrun: rank 1 (local rank 0 on node 10.0.0.2) exited with status 143`` and exits with that worker's
  status (143 after SIGTERM, so a Slurm requeue hook sees the pre-emption; 128 + N for a worker killed by signal N);
- a rendezvous that gives up (a node that never arrived, an endpoint out of reach): one line naming the
  rendezvous, its endpoint, the node count it waited for and the join timeout; exit 1;
- the agent itself stopped by a signal: one line, exit 128 + the signal.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence

PROG = "redline torchrun"


def main(argv: Sequence[str] | None = None) -> int:
    """Run torchrun with ``argv`` (its own command line); returns the exit status."""
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.elastic.rendezvous.api import RendezvousError, RendezvousTimeoutError

    args = torchrun.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        torchrun.run(args)
    except ChildFailedError as exc:
        rank, failure = exc.get_first_failure()
        status = failure.exitcode if failure.exitcode >= 0 else 128 - failure.exitcode
        how = f"was killed by {signal.Signals(-failure.exitcode).name}" if failure.exitcode < 0 else "exited"
        node = args.local_addr or "this node"
        _say(f"rank {rank} (local rank {failure.local_rank} on {node}) {how} with status {status}; stopping")
        return status
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
    except SignalException as exc:
        _say(f"stopped by {signal.Signals(exc.sigval).name}; the workers were asked to stop too")
        return 128 + int(exc.sigval)
    return 0


def _rdzv_conf(text: str) -> dict[str, str]:
    """``key=value,key=value`` (torchrun's ``--rdzv_conf``) as a dict."""
    pairs = (item.partition("=") for item in text.split(",") if item)
    return {key.strip(): value.strip() for key, _, value in pairs}


def _say(line: str) -> None:
    print(f"{PROG}: {line}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
