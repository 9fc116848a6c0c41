"""SAC's ``update()`` on the CPU, bf16 against fp32, at one or more network widths (docs/performance.md).

    taskset -c 0 python scripts/sac_update_cpu.py [--widths 256,192,128]

``SACConfig()``'s CPU defaults (batch 1024, 2 gradient steps per ``update()``, 51 atoms) with actor and critic
``[w, w]`` for each width ``w`` (default: 256, the learner's), at the Go1's 48 observations and 12 actions, 256 envs
of synthetic replay (:func:`redline.bench.sac_update.build`), one torch thread; 3 warm-up calls, then 8 alternating
rounds (every width and precision in turn) of 5 calls. Prints each row's median per gradient step [ms], its rounds,
its last critic loss, and fp32 / bf16 per width.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics

import torch

from redline.bench.sac_update import Shape, build
from redline.bench.timing import timed
from redline.learning.sac import SACActorConfig, SACConfig, SACCriticConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="256", help="comma-separated hidden widths, [w, w] each (256)")
    text = parser.parse_args().widths
    try:
        widths = [int(w) for w in text.split(",")]
    except ValueError:
        parser.error(f"--widths: expected comma-separated positive integers, got '{text}'")
    if any(w <= 0 for w in widths):
        parser.error(f"--widths: expected comma-separated positive integers, got '{text}'")
    torch.set_num_threads(1)
    learners = {}
    for width in widths:
        dims = (width, width)
        cfg = dataclasses.replace(
            SACConfig(),
            buffer_size_per_env=16,
            num_steps_per_env=1,
            learning_starts=1,
            actor=SACActorConfig(hidden_dims=dims),
            critic=SACCriticConfig(hidden_dims=dims),
        )
        shape = Shape(num_envs=256, num_obs=48, num_actions=12, cfg=cfg, rounds=8, updates_per_round=5, warmup=3)
        for precision in ("bf16", "fp32"):
            learners[width, precision] = build(shape, precision, "cpu")
    for alg in learners.values():
        for _ in range(shape.warmup):
            alg.update()
    steps = shape.updates_per_round * shape.cfg.num_steps_per_env * shape.cfg.updates_per_step
    samples: dict[tuple[int, str], list[float]] = {key: [] for key in learners}
    for _ in range(shape.rounds):
        for key, alg in learners.items():
            samples[key].append(timed(alg.update, lambda: None, shape.updates_per_round) / steps)
    for (width, precision), alg in learners.items():  # host reads after the clock
        loss = float(alg.update()["critic_loss"])
        rounds = ", ".join(f"{1e3 * s:.1f}" for s in samples[width, precision])
        print(f"[{width}, {width}] {alg.precision.mode}: {1e3 * statistics.median(samples[width, precision]):.1f} ms "
              f"per gradient step (rounds {rounds}), critic loss {loss:.7f}")  # fmt: skip
    for width in widths:
        ratio = statistics.median(samples[width, "fp32"]) / statistics.median(samples[width, "bf16"])
        print(f"[{width}, {width}] fp32 / bf16: {ratio:.2f}")


if __name__ == "__main__":
    main()
