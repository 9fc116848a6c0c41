"""SAC's ``update()`` on the CPU, bf16 against fp32, at one or more network widths (docs/performance.md).

    taskset -c 0 python scripts/sac_update_cpu.py [--widths 256,192,128] [--batches 256,1024] [--threads 1]
                                                  [--precisions bf16,fp32] [--captures off,on]

``SACConfig()``'s CPU defaults (batch 1024, 2 gradient steps per ``update()``, 51 atoms) with actor and critic
``[w, w]`` for each width ``w`` (default: 256, the learner's) and each minibatch size (default: 1024), at the Go1's 48
observations and 12 actions, 256 envs of synthetic replay (:func:`redline.bench.sac_update.build`), ``--threads``
torch threads (default 1), each of ``--precisions`` (default bf16, fp32) and ``--captures`` (``SACConfig.capture``,
default off; ``on`` compiles each gradient step with inductor on the CPU, and its warm-up includes the compile);
3 warm-up calls, then 8 alternating rounds (every row in turn) of 5 calls. Prints each row's median per gradient step
[ms] and per sample [us], its rounds and its last critic loss, then each row's time over the first row's.
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
    parser.add_argument("--precisions", default="bf16,fp32", help="comma-separated: bf16, fp32 (bf16,fp32)")
    parser.add_argument("--captures", default="off", help="comma-separated SACConfig.capture: off, on (off)")
    args = parser.parse_args()
    widths = _positive_ints(parser, "--widths", args.widths)
    batches = _positive_ints(parser, "--batches", args.batches)
    precisions = _choices(parser, "--precisions", args.precisions, ("bf16", "fp32"))
    captures = _choices(parser, "--captures", args.captures, ("off", "on"))
    if max(batches) > 16 * 256:
        parser.error(f"--batches: at most the synthetic replay's 4096 transitions, got {max(batches)}")
    if args.threads <= 0:
        parser.error(f"--threads: expected a positive integer, got {args.threads}")
    torch.set_num_threads(args.threads)
    learners = {}
    shape = None
    for width, batch, precision, capture in itertools.product(widths, batches, precisions, captures):
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
        learners[width, batch, precision, capture] = build(shape, precision, "cpu", capture=capture)
    assert shape is not None
    for alg in learners.values():
        for _ in range(shape.warmup):
            alg.update()
    steps = shape.updates_per_round * shape.cfg.num_steps_per_env * shape.cfg.updates_per_step
    samples: dict[tuple[int, int, str, str], list[float]] = {key: [] for key in learners}
    for _ in range(shape.rounds):
        for key, alg in learners.items():
            samples[key].append(timed(alg.update, lambda: None, shape.updates_per_round) / steps)
    first = statistics.median(next(iter(samples.values())))
    for (width, batch, precision, capture), alg in learners.items():  # host reads after the clock
        loss = float(alg.update()["critic_loss"])
        times = samples[width, batch, precision, capture]
        rounds = ", ".join(f"{1e3 * s:.1f}" for s in times)
        median = statistics.median(times)
        print(f"[{width}, {width}] batch {batch} {alg.precision.mode} {alg.capture_plan.kind}: {1e3 * median:.1f} ms "
              f"per gradient step, {1e6 * median / batch:.1f} us per sample (rounds {rounds}), critic loss "
              f"{loss:.7f}, {median / first:.2f}x the first row")  # fmt: skip


def _choices(parser: argparse.ArgumentParser, option: str, text: str, valid: tuple[str, ...]) -> list[str]:
    """Comma-separated values of ``valid``, or a one-line parser error naming ``option``."""
    values = text.split(",")
    if not all(v in valid for v in values):
        parser.error(f"{option}: expected comma-separated values of {', '.join(valid)}, got '{text}'")
    return values


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
