"""SAC's ``update()`` on the CPU, bf16 against fp32, at one or more network widths (docs/performance.md).

    taskset -c 0 python scripts/sac_update_cpu.py [--widths 256,192,128] [--batches 256,1024] [--threads 1]

``SACConfig()``'s CPU defaults (batch 1024, 2 gradient steps per ``update()``, 51 atoms) with actor and critic
``[w, w]`` for each width ``w`` (default: 256, the learner's) and each minibatch size (default: 1024), at the Go1's 48
observations and 12 actions, 256 envs of synthetic replay (:func:`redline.bench.sac_update.build`), ``--threads``
torch threads (default 1); 3 warm-up calls, then 8 alternating rounds (every row in turn) of 5 calls. Prints each
row's median per gradient step [ms] and per sample [us], its rounds, its last critic loss, and fp32 / bf16 per
width and batch.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import statistics

import torch

from redline.bench.sac_update import Shape, build
from redline.bench.timing import timed
from redline.learning.sac import SACActorConfig, SACConfig, SACCriticConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="256", help="comma-separated hidden widths, [w, w] each (256)")
    parser.add_argument("--batches", default="1024", help="comma-separated minibatch sizes, at most 4096 (1024)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1)")
    args = parser.parse_args()
    widths = _positive_ints(parser, "--widths", args.widths)
    batches = _positive_ints(parser, "--batches", args.batches)
    if max(batches) > 16 * 256:
        parser.error(f"--batches: at most the synthetic replay's 4096 transitions, got {max(batches)}")
    if args.threads <= 0:
        parser.error(f"--threads: expected a positive integer, got {args.threads}")
    torch.set_num_threads(args.threads)
    learners = {}
    for width, batch in itertools.product(widths, batches):
        dims = (width, width)
        cfg = dataclasses.replace(
            SACConfig(),
            buffer_size_per_env=16,
            num_steps_per_env=1,
            learning_starts=1,
            batch_size=batch,
            actor=SACActorConfig(hidden_dims=dims),
            critic=SACCriticConfig(hidden_dims=dims),
        )
        shape = Shape(num_envs=256, num_obs=48, num_actions=12, cfg=cfg, rounds=8, updates_per_round=5, warmup=3)
        for precision in ("bf16", "fp32"):
            learners[width, batch, precision] = build(shape, precision, "cpu")
    for alg in learners.values():
        for _ in range(shape.warmup):
            alg.update()
    steps = shape.updates_per_round * shape.cfg.num_steps_per_env * shape.cfg.updates_per_step
    samples: dict[tuple[int, int, str], list[float]] = {key: [] for key in learners}
    for _ in range(shape.rounds):
        for key, alg in learners.items():
            samples[key].append(timed(alg.update, lambda: None, shape.updates_per_round) / steps)
    for (width, batch, precision), alg in learners.items():  # host reads after the clock
        loss = float(alg.update()["critic_loss"])
        times = samples[width, batch, precision]
        rounds = ", ".join(f"{1e3 * s:.1f}" for s in times)
        median = statistics.median(times)
        print(f"[{width}, {width}] batch {batch} {alg.precision.mode}: {1e3 * median:.1f} ms per gradient step, "
              f"{1e6 * median / batch:.1f} us per sample (rounds {rounds}), critic loss {loss:.7f}")  # fmt: skip
    for width, batch in itertools.product(widths, batches):
        ratio = statistics.median(samples[width, batch, "fp32"]) / statistics.median(samples[width, batch, "bf16"])
        print(f"[{width}, {width}] batch {batch} fp32 / bf16: {ratio:.2f}")


def _positive_ints(parser: argparse.ArgumentParser, option: str, text: str) -> list[int]:
    """Comma-separated positive integers, or a one-line parser error naming ``option``."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or any(v <= 0 for v in values):
        parser.error(f"{option}: expected comma-separated positive integers, got '{text}'")
    return values


if __name__ == "__main__":
    main()
