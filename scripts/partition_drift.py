"""How far do two partitions of the same experiment drift apart? One process x N envs against R ranks x N/R.

    python scripts/partition_drift.py RUN_ONE RUN_RANKS

Both runs: the same task, seed, total env count and ``per_env`` seeding, ``agent.save_interval=1`` (a checkpoint per
iteration), e.g. ``redline train --task Redline-Velocity-Flat-Go1 --num_envs 512 --nproc 1 --max_iterations 8
--precision fp32 agent.save_interval=1`` and the same with ``--nproc 2 --num_envs 256``. Prints, per iteration:
the actor's relative weight difference (``max |a - b| / max |b|``), the two runs' mean rewards, and whether the env
streams' counters (episode and draw per global env) are still bitwise equal. Identical env streams and a first
rollout bitwise the same are what partition invariance promises; the weights differ from the first update on by the
fp32 rounding of gradient sums over another grouping, which contact dynamics then amplify.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch


def _records(run: Path) -> dict[int, dict]:
    lines = (run / "metrics.jsonl").read_text().splitlines()
    return {r["iteration"]: r for r in map(json.loads, lines)}


def main(one: Path, ranks: Path) -> None:
    first, second = _records(one), _records(ranks)
    print("iteration  actor rel. diff  mean reward (1 process / ranks)  env stream counters")
    for it in sorted(set(first) & set(second)):
        a, b = (torch.load(run / f"model_{it}.pt", weights_only=True) for run in (one, ranks))
        diff = max(float((a["actor_state_dict"][k] - v).abs().max()) for k, v in b["actor_state_dict"].items())
        scale = max(float(v.abs().max()) for v in b["actor_state_dict"].values())
        streams = all(torch.equal(a["seeding_state_dict"][k], v) for k, v in b["seeding_state_dict"].items())
        rewards = (first[it].get("mean_reward"), second[it].get("mean_reward"))
        same = "equal" if streams else "differ"
        print(f"{it:9d}  {diff / scale:15.2e}  {rewards[0]!s:>15} / {rewards[1]!s:<15}  {same}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
