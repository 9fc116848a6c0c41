"""``redline bench seeding``: what each seeding strategy costs per reset, and that cost as a share of an env step."""

from __future__ import annotations

import argparse
import functools
from typing import TYPE_CHECKING, Any

import torch

from redline.bench.timing import device_sync, median_op_s, timed
from redline.device import resolve_device
from redline.envs.prepare import prepare_env
from redline.envs.simulator import isaaclab_env
from redline.options import RunOptions, positive_int
from redline.seeding import STRATEGIES, EnvStreams

if TYPE_CHECKING:
    import torch


def _reset_all(streams: EnvStreams, ids: torch.Tensor, width: int) -> torch.Tensor:
    """What a task's reset does with the streams: count an episode, draw ``width`` values per env."""
    streams.begin_episode(ids)
    return streams.uniform(ids, (width,), -1.0, 1.0)


def bench_seeding(num_envs: int, device: str, task: str | None) -> dict[str, float]:
    """Per-reset cost of each seeding strategy: all ``num_envs`` envs reset at once, drawing a Cartpole-sized
    (4 values) and an Ant-sized (16 values) start state; with ``task``, also one env step of that task.

    Returns seconds per operation, keyed ``<strategy>/<draw>`` (and ``env_step``).
    """
    results: dict[str, float] = {}
    ids = torch.arange(num_envs, device=device)
    for strategy in STRATEGIES:
        streams = EnvStreams(strategy, 42, num_envs, device)
        for name, width in (("cartpole_reset", 4), ("ant_reset", 16)):
            reset = functools.partial(_reset_all, streams, ids, width)
            results[f"{strategy}/{name}"] = median_op_s(reset)
    if task is not None:
        results["env_step"] = _env_step_s(task, num_envs, device)
    return results


def _env_step_s(task: str, num_envs: int, device: str, steps: int = 20) -> float:
    prepared = prepare_env(RunOptions(task=task, num_envs=num_envs, device=device))
    with isaaclab_env(prepared.task, prepared.env_cfg) as env:
        env.reset()
        actions = torch.zeros(num_envs, env.unwrapped.single_action_space.shape[0], device=device)
        env.step(actions)  # first step compiles
        return timed(lambda: env.step(actions), device_sync(device), steps) / steps


def show(results: dict[str, Any]) -> None:
    """The table of :func:`run`'s result."""
    step = results.get("env_step")
    print(f"seeding cost per reset of all {results['num_envs']} envs on {results['device']} (median):")
    for key, seconds in results.items():
        if key in ("env_step", "num_envs", "device"):
            continue
        share = f"  = {100 * seconds / step:5.2f} % of an env step" if step else ""
        print(f"  {key:<24} {seconds * 1e3:8.3f} ms{share}")
    if step:
        print(f"  {'env step':<24} {step * 1e3:8.3f} ms")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``redline bench seeding``'s own options."""
    parser.add_argument("--num_envs", type=positive_int, default=4096, help="envs reset at once (4096)")
    parser.add_argument("--task", help="also time one env step of this task, to quote each cost as a share of it")


def run(args: argparse.Namespace) -> dict[str, Any]:
    """``redline bench seeding``: seconds per operation, keyed ``<strategy>/<draw>`` (and ``env_step``)."""
    device = resolve_device(args.device)
    return {"num_envs": args.num_envs, "device": device, **bench_seeding(args.num_envs, device, args.task)}
