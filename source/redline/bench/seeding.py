"""``redline bench``: benchmark commands whose output goes in the README (not timed tests)."""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from redline.seeding import STRATEGIES, EnvStreams

if TYPE_CHECKING:
    import torch


def _median_s(fn: Callable[[], object], repeats: int, sync: Callable[[], None]) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _reset_all(streams: EnvStreams, ids: torch.Tensor, width: int) -> torch.Tensor:
    """What a task's reset does with the streams: count an episode, draw ``width`` values per env."""
    streams.begin_episode(ids)
    return streams.uniform(ids, (width,), -1.0, 1.0)


def bench_seeding(num_envs: int, device: str, task: str | None, repeats: int = 50) -> dict[str, float]:
    """Per-reset cost of each seeding strategy: all ``num_envs`` envs reset at once, drawing a Cartpole-sized
    (4 values) and an Ant-sized (16 values) start state; with ``task``, also one env step of that task.

    Returns seconds per operation, keyed ``<strategy>/<draw>`` (and ``env_step``).
    """
    import torch

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize(device)

    results: dict[str, float] = {}
    ids = torch.arange(num_envs, device=device)
    for strategy in STRATEGIES:
        streams = EnvStreams(strategy, 42, num_envs, device)
        for name, width in (("cartpole_reset", 4), ("ant_reset", 16)):
            reset = functools.partial(_reset_all, streams, ids, width)
            results[f"{strategy}/{name}"] = _median_s(reset, repeats, sync)
    if task is not None:
        results["env_step"] = _env_step_s(task, num_envs, device)
    return results


def _env_step_s(task: str, num_envs: int, device: str, steps: int = 20) -> float:
    import torch

    from redline.envs import registry
    from redline.envs.launch import isaaclab_env

    env_cfg, _ = registry.load_cfgs(registry.resolve_task_id(task), "rsl_rl_cfg_entry_point", [])
    env_cfg.scene.num_envs = num_envs
    with isaaclab_env(task, env_cfg, device) as env:
        env.reset()
        actions = torch.zeros(num_envs, env.unwrapped.single_action_space.shape[0], device=device)
        env.step(actions)  # first step compiles
        start = time.perf_counter()
        for _ in range(steps):
            env.step(actions)
        return (time.perf_counter() - start) / steps


def print_seeding(results: dict[str, float], num_envs: int, device: str) -> None:
    step = results.get("env_step")
    print(f"seeding cost per reset of all {num_envs} envs on {device} (median):")
    for key, seconds in results.items():
        if key == "env_step":
            continue
        share = f"  = {100 * seconds / step:5.2f} % of an env step" if step else ""
        print(f"  {key:<24} {seconds * 1e3:8.3f} ms{share}")
    if step:
        print(f"  {'env step':<24} {step * 1e3:8.3f} ms")
