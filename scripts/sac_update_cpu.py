"""SAC's ``update()`` at its CPU defaults, bf16 against fp32, on the CPU (docs/performance.md, session 18).

    taskset -c 0 python scripts/sac_update_cpu.py

``SACConfig()``'s CPU defaults (batch 1024, 2 gradient steps per ``update()``, [256, 256] networks, 51 atoms) at the
Go1's 48 observations and 12 actions, 256 envs of synthetic replay (:func:`redline.bench.sac_update.build`), one
torch thread; 3 warm-up calls, then 8 alternating rounds of 5 calls per precision. Prints each precision's median
``update()`` [ms], its rounds, its last critic loss, and fp32 / bf16.
"""

from __future__ import annotations

import dataclasses
import statistics

import torch

from redline.bench.sac_update import Shape, build
from redline.bench.timing import timed
from redline.learning.sac import SACConfig


def main() -> None:
    torch.set_num_threads(1)
    cfg = dataclasses.replace(SACConfig(), buffer_size_per_env=16, num_steps_per_env=1, learning_starts=1)
    shape = Shape(num_envs=256, num_obs=48, num_actions=12, cfg=cfg, rounds=8, updates_per_round=5, warmup=3)
    learners = {precision: build(shape, precision, "cpu") for precision in ("bf16", "fp32")}
    for alg in learners.values():
        for _ in range(shape.warmup):
            alg.update()
    samples: dict[str, list[float]] = {precision: [] for precision in learners}
    for _ in range(shape.rounds):
        for precision, alg in learners.items():
            seconds = timed(alg.update, lambda: None, shape.updates_per_round)
            samples[precision].append(seconds / shape.updates_per_round)
    for precision, alg in learners.items():  # host reads after the clock
        loss = float(alg.update()["critic_loss"])
        rounds = ", ".join(f"{1e3 * s:.1f}" for s in samples[precision])
        print(f"{alg.precision.mode}: update {1e3 * statistics.median(samples[precision]):.1f} ms "
              f"(rounds {rounds}), critic loss {loss:.7f}")  # fmt: skip
    print(f"fp32 / bf16: {statistics.median(samples['fp32']) / statistics.median(samples['bf16']):.2f}")


if __name__ == "__main__":
    main()
