"""``redline bench learner``: redline's PPO vs rsl_rl 5.5.1's, side by side in one process, no simulator.

Both learners train on the same synthetic batched env (:class:`redline.bench.shapes.DummyVecEnv`) with the same
shapes, hyper-parameters and seeds. rsl_rl runs its own ``OnPolicyRunner.learn`` loop body (act, step, NaN check,
process_env_step, compute_returns, update) without its logger; redline runs :class:`RedlineRunner`'s loop body.
Each learner's first iteration is a warm-up and is not timed; then the two are timed in alternation, an iteration
each, so that the machine's drifts in speed reach both alike.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
from collections.abc import Callable
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

from redline.bench import learner_rollout
from redline.bench.shapes import SHAPES, TASK_SHAPES, rsl_rl_cfg, synthetic_env
from redline.bench.timing import device_sync, timed
from redline.device import resolve_device
from redline.errors import UserError
from redline.host import allocator
from redline.learning import PPO, PPOConfig
from redline.learning.rollout import rollout as rollout_loop
from redline.learning.rsl_rl import CLASS_PATH
from redline.options import positive_int


@dataclasses.dataclass
class Timing:
    """Seconds per iteration of one learner (medians over the timed iterations)."""

    rollout_s: float
    update_s: float
    ops_per_update: int | None = None
    gemm_share: float | None = None
    """Share of the profiled update's CPU time spent in matrix multiplies (the arithmetic no learner can skip)."""

    @property
    def total_s(self) -> float:
        return self.rollout_s + self.update_s


Loop = tuple[Callable[[], None], Callable[[], None]]
"""One learner's ``(rollout, update)``: a rollout of T steps with its returns, then the PPO update."""


def time_interleaved(loops: dict[str, Loop], iterations: int, device: str, count_ops: bool = True) -> dict[str, Timing]:
    """Warm every loop up once, then time them in turn, iteration by iteration, so that a drift in the machine's
    speed (other load, frequency) reaches every learner alike; medians per learner. With ``count_ops`` (CPU only),
    also profile one update of each for its aten ops and GEMM share."""
    for rollout, update in loops.values():
        rollout()
        update()
    sync = device_sync(device)
    samples: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in loops}
    for _ in range(iterations):
        for name, (rollout, update) in loops.items():
            samples[name][0].append(timed(rollout, sync))
            samples[name][1].append(timed(update, sync))
    timings = {name: Timing(statistics.median(r), statistics.median(u)) for name, (r, u) in samples.items()}
    if count_ops and not device.startswith("cuda"):
        for name, (rollout, update) in loops.items():
            timings[name].ops_per_update, timings[name].gemm_share = _count_ops(rollout, update)
    return timings


GEMMS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_addmm_activation")
"""The matrix-multiply ops whose time is the update's arithmetic floor on the CPU."""


def _count_ops(rollout: Callable[[], None], update: Callable[[], None]) -> tuple[int, float]:
    """aten ops (CPU dispatcher calls) of one update and the share of its CPU time in :data:`GEMMS`, by
    torch.profiler."""
    rollout()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        update()
    events = prof.key_averages()
    ops = sum(e.count for e in events if e.key.startswith("aten::"))
    total = sum(e.self_cpu_time_total for e in events)
    return ops, sum(e.self_cpu_time_total for e in events if e.key in GEMMS) / total


def _loop(env: Any, steps: int, act: Callable, record: Callable, finish: Callable, update: Callable) -> Loop:
    """A learner's iteration on ``env`` through the one rollout loop (:func:`redline.learning.rollout.rollout`):
    ``steps`` x (act -> env.step -> record), then ``finish``; and ``update``."""
    state = {"obs": env.get_observations()}

    def collect() -> None:
        state["obs"] = rollout_loop(env, state["obs"], steps, act, record, finish)

    return collect, update


def rsl_rl_loop(
    shape: dict[str, Any], bf16: bool, device: str, seed: int = 0, class_name: str = "PPO", env: Any = None
) -> Loop:
    """rsl_rl 5.5.1's ``OnPolicyRunner.learn`` loop body (without its logger) on a synthetic env (or ``env``, made by
    :func:`synthetic_env`), with the algorithm ``class_name`` (rsl_rl's ``PPO``, or redline's drop-in
    :data:`redline.learning.rsl_rl.CLASS_PATH`)."""
    # heavy: rsl_rl's utils load its log writers (seconds)
    from rsl_rl.runners import OnPolicyRunner
    from rsl_rl.utils import check_nan

    env = env if env is not None else synthetic_env(shape, device, seed)
    cfg = rsl_rl_cfg(shape, bf16)
    cfg["algorithm"]["class_name"] = class_name
    alg = OnPolicyRunner(env, cfg, log_dir=None, device=device).alg
    alg.train_mode()

    def record(obs: Any, rewards: torch.Tensor, dones: torch.Tensor, extras: dict) -> None:
        check_nan(obs, rewards, dones)  # as OnPolicyRunner.learn does
        alg.process_env_step(obs, rewards, dones, extras)

    return _loop(env, shape["steps"], alg.act, record, alg.compute_returns, alg.update)


def redline_loop(
    shape: dict[str, Any], precision: str, device: str, seed: int = 0, env: Any = None, **overrides: Any
) -> tuple[Loop, dict[str, Any]]:
    """:class:`RedlineRunner`'s loop body with the redline PPO learner on a synthetic env.

    Args:
        env: the env to train on (made by :func:`synthetic_env`); default a new synthetic env.
        overrides: :class:`~redline.learning.PPOConfig` fields on top of the benchmark's (e.g. ``capture="on"``).

    Returns:
        The loop, and its state: ``alg`` (the learner) and ``metrics`` (the last update's).
    """
    env = env if env is not None else synthetic_env(shape, device, seed)
    cfg = PPOConfig.from_rsl_rl(rsl_rl_cfg(shape, False), precision=precision, **overrides)
    alg = PPO.from_env(env, cfg, device, seed)
    state: dict[str, Any] = {"alg": alg, "metrics": {}}

    def record(obs: Any, rewards: torch.Tensor, dones: torch.Tensor, extras: dict) -> None:
        alg.process_env_step(rewards, dones, extras)

    def update() -> None:
        state["metrics"] = alg.update()

    return _loop(env, shape["steps"], alg.act, record, alg.compute_returns, update), state


def bench_learner(shape_name: str, precision: str, device: str, iterations: int) -> dict[str, Any]:
    """Both learners at ``shape_name`` and ``precision`` (``bf16``/``fp32``), timed in alternation; returns a
    JSON-ready dict."""
    shape = SHAPES[shape_name]

    loops = {
        "rsl_rl": rsl_rl_loop(shape, precision == "bf16", device),
        "redline": redline_loop(shape, precision, device)[0],
        # rsl_rl's stock loop with redline's update (algorithm.class_name): what a stock-script user gets
        "drop_in": rsl_rl_loop(shape, precision == "bf16", device, class_name=CLASS_PATH),
    }
    timings = time_interleaved(loops, iterations, device)
    rsl, red, drop = timings["rsl_rl"], timings["redline"], timings["drop_in"]
    return {
        "shape": shape_name,
        "precision": precision,
        "device": device,
        "threads": torch.get_num_threads(),
        "allocator": allocator(),
        "iterations_timed": iterations,
        "rsl_rl": dataclasses.asdict(rsl) | {"total_s": rsl.total_s},
        "redline": dataclasses.asdict(red) | {"total_s": red.total_s},
        "drop_in": dataclasses.asdict(drop) | {"total_s": drop.total_s},
        "speedup": rsl.total_s / red.total_s,
        "update_speedup": rsl.update_s / red.update_s,
        "drop_in_speedup": rsl.total_s / drop.total_s,
    }


def show(result: dict[str, Any]) -> None:
    """The table of :func:`run`'s result."""
    if "rollout" in result:
        learner_rollout.show(result)
        return
    print(
        f"learner benchmark: shape {result['shape']}, {result['precision']}, {result['device']}, "
        f"{result['threads']} threads, {result['allocator']} malloc, median of {result['iterations_timed']} iterations"
    )
    print(
        f"  {'learner':<8} {'rollout s':>10} {'update s':>10} {'total s/it':>11} {'aten ops/update':>16}"
        f" {'GEMM share':>11}"
    )
    for name in ("rsl_rl", "redline", "drop_in"):
        t = result[name]
        ops = "-" if t["ops_per_update"] is None else f"{t['ops_per_update']:,}"
        gemm = "-" if t["gemm_share"] is None else f"{t['gemm_share']:.0%}"
        print(f"  {name:<8} {t['rollout_s']:>10.4f} {t['update_s']:>10.4f} {t['total_s']:>11.4f} {ops:>16} {gemm:>11}")
    red = result["redline"]
    if red["gemm_share"] is not None:
        # the update's matrix multiplies are a floor for any learner with these networks and this schedule
        floor = red["gemm_share"] * red["update_s"] / result["rsl_rl"]["total_s"]
        print(f"  redline's update GEMMs alone take {floor:.2f}x rsl_rl's whole iteration (profiled share)")
    print(f"  redline is {result['speedup']:.2f}x rsl_rl per iteration ({result['update_speedup']:.2f}x on the update)")
    print(
        f"  rsl_rl's stock loop with redline's update (drop_in): {result['drop_in_speedup']:.2f}x rsl_rl per iteration"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``redline bench learner``'s own options."""
    parser.add_argument(
        "--shape",
        default=None,
        help=f"{' | '.join(SHAPES)} (legged, 4096 envs; tiny, 8 envs; go1_rank, 512 envs: one of the Go1 "
        f"CPU default's 2 ranks); with --rollout: "
        f"{' | '.join(TASK_SHAPES)} (default: all three)",
    )
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32", help="both learners' (fp32)")
    parser.add_argument("--iterations", type=positive_int, default=3, help="timed iterations per learner (3)")
    parser.add_argument(
        "--rollout",
        action="store_true",
        help="time only the learners' loop bodies while collecting (CPU, fp32), per env step, at the tasks' shapes",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """``redline bench learner``."""
    device = resolve_device(args.device)
    if args.rollout:
        if device != "cpu" or args.precision != "fp32":
            raise UserError("--rollout: measures the CPU in fp32; drop --device / --precision")
        names = list(TASK_SHAPES) if args.shape is None else [args.shape]
        if not set(names) <= set(TASK_SHAPES):
            raise UserError(f"--shape: '{args.shape}' with --rollout (valid: {', '.join(TASK_SHAPES)})")
        torch.set_num_threads(1)  # the loop bodies are small ops: one thread, the other cores left to the envs
        return {"rollout": [learner_rollout.bench_rollout(name, args.iterations) for name in names], "threads": 1}
    shape = "legged" if args.shape is None else args.shape
    if shape not in SHAPES:
        raise UserError(f"--shape: '{shape}' (valid: {', '.join(SHAPES)}; the task shapes need --rollout)")
    return bench_learner(shape, args.precision, device, args.iterations)
