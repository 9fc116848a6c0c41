"""Two test "nodes" on one machine: Linux network namespaces joined by a private veth link, each with its own address.

Each :class:`Node` is a namespace holding one end of the link (a /30, no default route, so no other address can be
reached) and its loopback; commands run in it with ``ip netns exec``. The names carry the process id and a counter,
so a crashed earlier run cannot block the next; :meth:`Cluster.close` deletes the namespaces (which removes the veth
pair with them). Needs root and iproute2's ``ip``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

_COUNTER = itertools.count()


def unavailable() -> str | None:
    """Why the harness cannot run here (not root, no ``ip``, namespaces refused), or None."""
    if not sys.platform.startswith("linux"):
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs as root)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    probe = f"rlprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()[:120]}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclasses.dataclass
class Node:
    """One namespace: a node with one address on the private link."""

    netns: str
    """Namespace name."""
    ifname: str
    """Its end of the veth link (gloo's ``GLOO_SOCKET_IFNAME``)."""
    address: str
    """Its IPv4 address on the link."""
    processes: list[subprocess.Popen] = dataclasses.field(default_factory=list)
    """What :meth:`start` started."""

    def start(self, argv: Sequence[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
        """Run ``argv`` in this namespace in a new session, stdout and stderr to ``log``."""
        environ = {**os.environ, "GLOO_SOCKET_IFNAME": self.ifname, "TP_SOCKET_IFNAME": self.ifname, **(env or {})}
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                ["ip", "netns", "exec", self.netns, *argv],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=environ,
                start_new_session=True,
            )
        self.processes.append(proc)
        return proc

    def pids(self) -> list[int]:
        """Every process in the namespace (torchrun's agent, its workers, whatever they started)."""
        listed = subprocess.run(["ip", "netns", "pids", self.netns], capture_output=True, text=True).stdout
        return [int(pid) for pid in listed.split()]

    def signal(self, signum: int) -> None:
        """Send ``signum`` to all of the node's processes, as Slurm signals a job step (torchrun starts each worker
        in its own session, so a process group would miss them)."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def workers(self, proc: subprocess.Popen) -> list[int]:
        """The process ids of ``proc``'s children (torchrun's workers on this node)."""
        try:
            text = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text()
        except OSError:
            return []
        return [int(pid) for pid in text.split()]

    def link_down(self) -> None:
        """Cut the link on this node's side: a partition (both processes live on, neither reaches the other)."""
        _ip("-n", self.netns, "link", "set", self.ifname, "down")

    def routes(self) -> str:
        """The namespace's routing table (only the link's own /30)."""
        return subprocess.run(["ip", "-n", self.netns, "route"], capture_output=True, text=True).stdout


class Cluster:
    """Two namespaces ``a`` and ``b`` joined by a veth pair on 10.254.<n>.0/30 (private to the two namespaces)."""

    def __init__(self) -> None:
        tag = f"{os.getpid() % 100000}x{next(_COUNTER)}"
        subnet = f"10.254.{os.getpid() % 250}"
        self.a = Node(f"rl{tag}a", f"rl{tag}a", f"{subnet}.1")
        self.b = Node(f"rl{tag}b", f"rl{tag}b", f"{subnet}.2")
        try:
            for node in (self.a, self.b):
                _ip("netns", "add", node.netns)
            _ip("link", "add", self.a.ifname, "type", "veth", "peer", "name", self.b.ifname)
            for node in (self.a, self.b):
                _ip("link", "set", node.ifname, "netns", node.netns)
                _ip("-n", node.netns, "addr", "add", f"{node.address}/30", "dev", node.ifname)
                _ip("-n", node.netns, "link", "set", node.ifname, "up")
                _ip("-n", node.netns, "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise

    @property
    def nodes(self) -> tuple[Node, Node]:
        """``(a, b)``."""
        return self.a, self.b

    def close(self) -> None:
        """Kill what the nodes still run (SIGKILL to each session) and delete both namespaces."""
        for node in self.nodes:
            node.signal(signal.SIGKILL)
            for proc in node.processes:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(10)
        for node in self.nodes:
            subprocess.run(["ip", "netns", "del", node.netns], capture_output=True)


def torchrun(
    node: Node,
    endpoint: Node,
    run_id: str,
    redline_args: Sequence[str | Path],
    host: bool,
    join_timeout_s: int = 120,
    max_restarts: int = 0,
    nnodes: int = 2,
) -> list[str]:
    """The command a user runs on ``node``: ``torchrun --nnodes 2 --nproc_per_node 1 --rdzv_backend c10d`` (through
    :mod:`redline.commands.torchrun`) with the rendezvous on ``endpoint``'s address, then ``redline train ...
    --distributed``.

    Args:
        host: this node hosts the rendezvous store (``is_host``; the namespaces share a hostname, so torchrun cannot
            tell by name).
        join_timeout_s: how long the rendezvous waits for the other node [s].
    """
    return [
        sys.executable,
        "-m",
        "redline.commands.torchrun",  # torchrun's own agent and arguments; its failures in one line
        "--nnodes",
        str(nnodes),
        "--nproc_per_node",
        "1",
        "--rdzv_backend",
        "c10d",
        "--rdzv_endpoint",
        f"{endpoint.address}:29400",
        "--rdzv_id",
        run_id,
        "--rdzv_conf",
        f"is_host={str(host).lower()},join_timeout={join_timeout_s}",
        "--local_addr",
        node.address,
        "--max_restarts",
        str(max_restarts),
        "-m",
        "redline.cli",
        *map(str, redline_args),
        "--distributed",
    ]


def wait_all(procs: Sequence[subprocess.Popen], timeout_s: float) -> list[int | None]:
    """Wait for every process up to ``timeout_s`` in all; their exit statuses (None: still running)."""
    deadline = time.monotonic() + timeout_s
    codes: list[int | None] = []
    for proc in procs:
        try:
            codes.append(proc.wait(max(deadline - time.monotonic(), 0.01)))
        except subprocess.TimeoutExpired:
            codes.append(None)
    return codes


def wait_for(predicate: Callable[[], object], timeout_s: float, poll_s: float = 0.2) -> bool:
    """Poll ``predicate()`` until it is true or ``timeout_s`` passes; returns its last value."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll_s)
    return bool(predicate())
