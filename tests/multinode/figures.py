"""Scaling figures for docs/distributed.md: 1 node x 2 ranks against 2 nodes x 1 rank over the harness's veth link.

    python -m tests.multinode.figures [--num_envs 128] [--iterations 30] [--delay_ms 0 1]

Runs Redline-Cartpole with the same global env count three ways — 1 node x 2 ranks (``--nproc 2``, loopback), then
2 nodes x 1 rank (tests/multinode/netns.py) for each ``--delay_ms`` (netem delay added on both ends of the link, so a
round trip gains twice it) — and prints, over the iterations after the first two (warm-up), the median iteration
time, the time inside collectives and the collective count per iteration, and the env steps per second. Needs root
and iproute2 (``tc`` and the kernel's netem for a delay; this VM's kernel has no netem).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.multinode.netns import Cluster, torchrun, unavailable, wait_all

TRAIN = ["train", "--task", "Redline-Cartpole", "--device", "cpu", "--seeding", "per_env", "--precision", "fp32"]


def _summary(log_root: Path, label: str) -> dict[str, float | str]:
    (run,) = log_root.glob("redline_cartpole/*")
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()][2:]
    med = {k: statistics.median(r[k] for r in records) for k in ("collect_s", "learn_s", "allreduce_s", "sps")}
    return {
        "setup": label,
        "iteration_s": round(med["collect_s"] + med["learn_s"], 4),
        "collectives_s": round(med["allreduce_s"], 4),
        "collectives": statistics.median(r["collectives"] for r in records),
        "sps": round(med["sps"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num_envs", type=int, default=128, help="global envs (split over the 2 ranks)")
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--delay_ms", type=float, nargs="*", default=[0.0], help="netem delay per link end [ms]")
    args = parser.parse_args()
    reason = unavailable()
    if reason is not None:
        sys.exit(f"figures: {reason}")
    common = [*TRAIN, "--max_iterations", str(args.iterations), "--num_envs", str(args.num_envs // 2)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        one = root / "one_node"
        subprocess.run([sys.executable, "-m", "redline.cli", *common, "--nproc", "2", "--log_root", one], check=True)
        _show(rows, _summary(one, "1 node x 2 ranks (loopback)"))
        for delay in args.delay_ms:
            cluster = Cluster()
            try:
                a, b = cluster.nodes
                if delay > 0:
                    for node in (a, b):
                        netem = ["tc", "qdisc", "add", "dev", node.ifname, "root", "netem", "delay", f"{delay}ms"]
                        if subprocess.run(["ip", "netns", "exec", node.netns, *netem]).returncode != 0:
                            sys.exit("figures: `tc qdisc ... netem` failed (no sch_netem in this kernel?)")
                logs = root / f"two_nodes_{delay:g}"
                run_args = [*common, "--log_root", logs]
                procs = [
                    a.start(torchrun(a, a, f"fig{delay:g}", run_args, host=True), root / f"a{delay:g}.log"),
                    b.start(torchrun(b, a, f"fig{delay:g}", run_args, host=False), root / f"b{delay:g}.log"),
                ]
                if wait_all(procs, 1800) != [0, 0]:
                    sys.exit((root / f"a{delay:g}.log").read_text()[-3000:])
                _show(rows, _summary(logs, f"2 nodes x 1 rank (veth, +{delay:g} ms each way)"))
            finally:
                cluster.close()
    print("\n".join(json.dumps(row) for row in rows), flush=True)  # together at the end, after the runs' output


def _show(rows: list[dict[str, float | str]], row: dict[str, float | str]) -> None:
    """Keep ``row`` and print it now (a later failure, e.g. a kernel without netem, does not lose it)."""
    rows.append(row)
    print(json.dumps(row), file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
