"""Two nodes for real: ``torchrun --nnodes 2 --rdzv_backend c10d`` in two network namespaces joined by a veth link
(tests/multinode/netns.py), gloo on the CPU, the real simulator.

- equivalence: 2 nodes x 32 envs hold 1 process x 64 envs' weights; only global rank 0 writes; figures are global;
- faults across nodes: a node's processes killed, the link cut (a partition), a node that never arrives, SIGTERM
  to one node: each a one-line message naming the lost rank and node, a non-zero exit within the timeout, no hang,
  whole checkpoints;
- elastic restart: under ``--max_restarts 1`` a killed worker restarts, resumes from the run's latest checkpoint by
  itself and continues the iteration count.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from redline.outputs.run_search import intact
from tests.multinode import netns
from tests.multinode.netns import Cluster, torchrun, wait_all, wait_for

pytestmark = [pytest.mark.sim, pytest.mark.multinode]

TRAIN = ["train", "--task", "Redline-Cartpole", "--device", "cpu", "--seeding", "per_env", "--precision", "fp32"]
DIST_TIMEOUT_S = 20
"""``--dist_timeout`` of the fault runs [s]: above the skew of two simulator start-ups (the ranks pass a barrier just
before building their scenes; the first collective waits for the slower build), short enough for CI."""
PARTITION_TIMEOUT_S = 10
"""``--dist_timeout`` of the partition run [s], which both sides wait out after the cut: still far above the
measured skew at the first collective after that barrier (4-50 ms, 2026-12-03, on 2 loaded cores), as long as no
rank can fall 10 s behind the other within an iteration of 8 envs."""
FAULT_ARGS = [
    *TRAIN,
    "--num_envs",
    "8",
    "--max_iterations",
    "1000",
    "agent.save_interval=1",
    "agent.algorithm.num_learning_epochs=1",
    "agent.algorithm.num_mini_batches=2",
]
"""A run that ends only by a fault: small, a checkpoint every iteration, a short update (2 minibatches, so each
iteration still makes several collectives: gathers and one all-reduce per minibatch)."""
ONE_LINE = "stopped answering during"


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """Two fresh namespaces on a private link, deleted after the test (failed or not)."""
    reason = netns.unavailable()
    if reason is not None:
        pytest.skip(reason)
    made = Cluster()
    try:
        yield made
    finally:
        made.close()


def _records(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def _runs(log_root: Path) -> list[Path]:
    return sorted(log_root.glob("redline_cartpole/*"))


def _params(path: Path) -> torch.Tensor:
    state = torch.load(path, weights_only=True)
    tensors = [*state["actor_state_dict"].values(), *state["critic_state_dict"].values()]
    return torch.cat([t.float().reshape(-1) for t in tensors])


def _start_pair(
    cluster: Cluster, tmp_path: Path, args: list[str | Path], run_id: str, **kw: object
) -> tuple[subprocess.Popen, subprocess.Popen]:
    """torchrun on both nodes (node a hosts the rendezvous), their output in ``tmp_path/{a,b}.log``."""
    a, b = cluster.nodes
    pa = a.start(torchrun(a, a, run_id, args, host=True, **kw), tmp_path / "a.log")  # type: ignore[arg-type]
    pb = b.start(torchrun(b, a, run_id, args, host=False, **kw), tmp_path / "b.log")  # type: ignore[arg-type]
    return pa, pb


def _logs(tmp_path: Path) -> str:
    return "\n".join(f"--- {n}.log\n{(tmp_path / f'{n}.log').read_text()[-4000:]}" for n in "ab")


def test_two_nodes_match_one_process(cluster: Cluster, tmp_path: Path) -> None:
    """3 iterations: 2 nodes x 32 envs and 1 process x 64 envs (per-env seeding, fp32) end with the same weights
    (1e-5 relative); only global rank 0's node writes (each node has its own log root); env steps, SPS's step count
    and the episode statistics are global; the namespaces reach only each other."""
    assert cluster.a.routes().strip().count("\n") == 0 and "/30" in cluster.a.routes()  # the link's /30 alone
    common = [*TRAIN, "--max_iterations", "3"]
    a, b = cluster.nodes
    pa = a.start(
        torchrun(a, a, "equal", [*common, "--num_envs", "32", "--log_root", tmp_path / "a"], host=True),
        tmp_path / "a.log",
    )
    pb = b.start(
        torchrun(b, a, "equal", [*common, "--num_envs", "32", "--log_root", tmp_path / "b"], host=False),
        tmp_path / "b.log",
    )
    one = subprocess.run(
        [sys.executable, "-m", "redline.cli", *common, "--num_envs", "64", "--log_root", tmp_path / "one"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert one.returncode == 0, one.stderr[-3000:]
    assert wait_all([pa, pb], 900) == [0, 0], _logs(tmp_path)

    written = [_runs(tmp_path / n) for n in "ab"]
    assert sorted(map(len, written)) == [0, 1], written  # one node (global rank 0's) wrote one run, the other nothing
    (two,) = written[0] or written[1]
    (single,) = _runs(tmp_path / "one")
    ref = _params(single / "model_2.pt")
    assert (_params(two / "model_2.pt") - ref).abs().max() <= 1e-5 * ref.abs().max()

    records, reference = _records(two), _records(single)
    assert [r["env_steps"] for r in records] == [r["env_steps"] for r in reference]  # 64 global envs
    assert all(r["world_size"] == 2 and r["allreduce_s"] > 0 for r in records)
    for key in ("mean_episode_length", "mean_reward"):  # the same 64 envs' episodes, gathered over both nodes
        assert [r[key] for r in records] == pytest.approx([r[key] for r in reference], rel=1e-4), key


LOST = re.compile(r"rank (\d): rank (\d) \(node (\d)\) of 2 stopped answering during \w+")
"""The one line a surviving rank prints for a lost one."""


def _train_until(
    cluster: Cluster, tmp_path: Path, records: int, run_id: str, timeout_s: int = DIST_TIMEOUT_S, **kw: object
) -> tuple[Path, ...]:
    """Start the fault run on both nodes (process-group timeout ``timeout_s``) and wait until its run folder has
    ``records`` iterations."""
    procs = _start_pair(
        cluster,
        tmp_path,
        [*FAULT_ARGS, "--dist_timeout", timeout_s, "--log_root", tmp_path / "logs"],
        run_id,
        **kw,
    )
    started = wait_for(lambda: any(len(_records(r)) >= records for r in _runs(tmp_path / "logs")), 600)
    assert started and all(p.poll() is None for p in procs), _logs(tmp_path)
    (run,) = _runs(tmp_path / "logs")
    return (run, *procs)  # type: ignore[return-value]


def _whole_checkpoints(run: Path) -> list[int]:
    """The iterations of the run's checkpoints, after checking each is a whole archive (no temporary file left)."""
    saved = sorted(run.glob("model_*.pt"), key=lambda p: int(p.stem.split("_")[1]))
    assert all(intact(p) for p in saved), saved
    return [int(p.stem.split("_")[1]) for p in saved]


def _lost_line(log: str) -> re.Match:
    found = LOST.search(log)
    assert found is not None, log[-3000:]
    assert found.group(1) != found.group(2)  # names the other rank, with its node
    assert found.group(3) == found.group(2)  # one rank per node: rank r is node r
    return found


def test_node_killed_mid_iteration(cluster: Cluster, tmp_path: Path) -> None:
    """SIGKILL to node b's processes (torchrun's agent and its worker) mid-run: node a's rank names the lost rank
    and node in one line and its torchrun exits non-zero at once (a closed connection, no timeout needed)."""
    run, pa, _ = _train_until(cluster, tmp_path, 2, "killed")
    cluster.b.signal(signal.SIGKILL)
    start = time.monotonic()
    (status,) = wait_all([pa], DIST_TIMEOUT_S + 60)
    took = time.monotonic() - start
    assert status not in (0, None), _logs(tmp_path)
    assert took < DIST_TIMEOUT_S + 60
    log = (tmp_path / "a.log").read_text()
    _lost_line(log)
    assert re.search(r"redline torchrun: rank \d \(local rank 0 on 10\.254\.\d+\.1\) exited with status", log), log
    assert "Traceback" not in log
    assert _whole_checkpoints(run)


@pytest.mark.extended  # ~52 s; CI's budget keeps the node killed mid-iteration and the lost node
def test_link_cut_is_a_partition(cluster: Cluster, tmp_path: Path) -> None:
    """The link cut on node b's side mid-run (both nodes' processes live on): each side names the other rank and
    node in one line and exits non-zero within the process-group timeout plus the agents' shutdown."""
    run, pa, pb = _train_until(cluster, tmp_path, 2, "partition", timeout_s=PARTITION_TIMEOUT_S)
    cluster.b.link_down()
    start = time.monotonic()
    statuses = wait_all([pa, pb], PARTITION_TIMEOUT_S + 120)
    took = time.monotonic() - start
    assert None not in statuses and 0 not in statuses, _logs(tmp_path)
    assert took < PARTITION_TIMEOUT_S + 120
    for n in "ab":
        _lost_line((tmp_path / f"{n}.log").read_text())
    assert _whole_checkpoints(run)


def test_node_that_never_arrives(cluster: Cluster, tmp_path: Path) -> None:
    """Node b never starts: node a's rendezvous gives up after its join timeout, non-zero, naming the missing node
    count; no worker (no simulator) ever starts."""
    a = cluster.a
    start = time.monotonic()
    proc = a.start(
        torchrun(a, a, "alone", [*FAULT_ARGS, "--log_root", tmp_path / "logs"], host=True, join_timeout_s=10),
        tmp_path / "a.log",
    )
    (status,) = wait_all([proc], 120)
    log = (tmp_path / "a.log").read_text()
    assert status not in (0, None), log[-3000:]
    assert time.monotonic() - start < 120
    assert not _runs(tmp_path / "logs")
    assert "redline torchrun: rendezvous 'alone' at " in log and "within the join timeout of 10 s" in log, log
    assert "Traceback" not in log


RESTART_JOIN_S = 20
"""The elastic test's rendezvous join timeout [s]: above the skew of the two agents' restart round (node b's agent
rejoins at once; node a's after its worker named the lost rank, within the 5 s store check-in, and exited), and
what the test waits at its end for the agent that tries one more round."""


@pytest.mark.extended  # ~52 s; CI's budget keeps the node killed mid-iteration and the lost node
def test_elastic_restart_then_sigterm_one_node(cluster: Cluster, tmp_path: Path) -> None:
    """Under ``--max_restarts 1``: node b's worker killed once (SIGKILL) -> node a's rank names it in one line,
    torchrun restarts both workers, which continue the same run folder from its latest checkpoint with the next
    iteration, by themselves. Then SIGTERM to node b (a Slurm pre-emption of one allocation): both ranks stop after
    the same iteration, which is saved once, and both nodes exit non-zero (an agent with a restart left tries one
    more round and gives up after its join timeout, :data:`RESTART_JOIN_S` here)."""
    run, pa, pb = _train_until(cluster, tmp_path, 2, "elastic", max_restarts=1, join_timeout_s=RESTART_JOIN_S)
    (worker,) = cluster.b.workers(pb)
    os.kill(worker, signal.SIGKILL)
    killed_at = len(_records(run))
    restarted = wait_for(
        lambda: (
            "torchrun restarted the workers: continuing"
            in (tmp_path / "a.log").read_text() + (tmp_path / "b.log").read_text()
        ),
        600,
    )
    assert restarted, _logs(tmp_path)
    assert wait_for(lambda: len(_records(run)) >= killed_at + 1, 600), _logs(tmp_path)  # one more iteration
    cluster.b.signal(signal.SIGTERM)
    statuses = wait_all([pa, pb], 180)
    logs = _logs(tmp_path)
    assert None not in statuses and 0 not in statuses, logs
    whole = "".join((tmp_path / f"{n}.log").read_text() for n in "ab")  # the line is followed by the restart's output
    _lost_line(whole)  # the kill, named by the surviving rank before the restart

    stopped = re.findall(r"stopped by SIGTERM after iteration (\d+)", logs)
    assert len(set(stopped)) == 1, logs  # every rank stopped after the same iteration
    last = int(stopped[0])
    iterations = [r["iteration"] for r in _records(run)]
    assert iterations == list(range(last + 1))  # one run, the count continued, no iteration twice
    assert _whole_checkpoints(run)[-1] == last
    assert torch.load(run / f"model_{last}.pt", weights_only=True)["iter"] == last
    assert _runs(tmp_path / "logs") == [run]
