"""Measure a task's host memory per env: RSS growth while building and stepping N envs (one process per N).

    taskset -c 1 .venv/bin/python scripts/measure_env_memory.py Redline-Cartpole mujoco_cpu 64

prints one JSON line: the RSS after the imports and configs (``base``), the peak RSS once the env is built, reset
and stepped twice (``peak``), both in MiB. Two counts (64 and 2048; at 256 the growth is within the RSS noise)
give the per-env slope and the fixed cost that ``redline/envs/memory.py`` records per task and physics preset.
"""

from __future__ import annotations

import json
import sys


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def main() -> None:
    task, physics, num_envs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    import torch

    from redline.envs.prepare import prepare_env
    from redline.envs.simulator import isaaclab_env
    from redline.options import RunOptions

    prepared = prepare_env(RunOptions(task=task, num_envs=num_envs, device="cpu", overrides=(f"physics={physics}",)))
    import isaaclab.app  # noqa: F401  (imported before the baseline, as train imports it)

    base = _status_kib("VmRSS")
    with isaaclab_env(prepared.task, prepared.env_cfg) as env:
        env.reset()
        actions = torch.zeros(env.unwrapped.num_envs, env.unwrapped.action_space.shape[-1])
        for _ in range(2):
            env.step(actions)
        peak = _status_kib("VmHWM")
    print(
        json.dumps(
            {"task": task, "physics": physics, "num_envs": num_envs, "base_mib": base / 1024, "peak_mib": peak / 1024}
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
