"""The update of rsl_rl's recurrent and symmetry PPO configs: redline's drop-in vs rsl_rl 5.5.1's own PPO, side by side.

    python scripts/rsl_rl_features_speed.py DEVICE NUM_ENVS [ROUNDS]     # e.g. cpu 1024 3, cuda 4096 5

The Go1 shape (48 observations, 12 actions, 24 steps per env, 5 epochs x 4 minibatches, [512, 256, 128] ELU MLPs):
``recurrent`` puts an LSTM of 256 before them (Isaac Lab's recurrent Anymal-D agent), ``symmetry`` appends a
left-right mirror of every minibatch (data augmentation) and adds the mirror loss. Per config both learners get the
same rollout (one random rollout, recorded once per learner from the same seeds), then their ``update()`` is timed in
alternation, ``ROUNDS`` times each. Prints one ``SPEED {json}`` line per config: ms per update (each round), the
median ratio rsl_rl / redline.
"""

from __future__ import annotations

import copy
import json
import statistics
import sys
import time
from typing import Any

import torch
from rsl_rl.algorithms import PPO as RslPPO
from tensordict import TensorDict

from redline.bench.shapes import feature_models
from redline.learning.rsl_rl import CLASS_PATH
from redline.learning.rsl_rl import PPO as DropIn

OBS, ACTIONS, STEPS = 48, 12, 24


CONFIGS = feature_models([512, 256, 128], 256, obs_normalization=True)
"""The two configs compared (:func:`redline.bench.shapes.feature_models`)."""


class Env:
    """The sizes and observations rsl_rl's constructor reads."""

    def __init__(self, num_envs: int, device: str) -> None:
        self.num_envs, self.num_actions, self.device = num_envs, ACTIONS, device
        self.unwrapped = self
        self.step_dt = 0.02

    def get_observations(self) -> TensorDict:
        return TensorDict({"policy": torch.randn(self.num_envs, OBS, device=self.device)}, batch_size=[self.num_envs])


def build(name: str, ours: bool, num_envs: int, device: str) -> Any:
    """One learner of config ``name`` with a recorded rollout (seed 0: the same for both learners)."""
    spec = copy.deepcopy(CONFIGS[name])
    cfg = {
        "num_steps_per_env": STEPS,
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "actor": spec["actor"],
        "critic": spec["critic"],
        "algorithm": {"class_name": CLASS_PATH if ours else "PPO", **spec["algorithm"]},
        "multi_gpu": None,
    }
    env = Env(num_envs, device)
    torch.manual_seed(0)
    cls = DropIn if ours else RslPPO
    alg = cls.construct_algorithm(env.get_observations(), env, cfg, device)
    return alg, env


def rollout(alg: Any, env: Env) -> None:
    torch.manual_seed(1)
    with torch.inference_mode():
        obs = env.get_observations()
        for _ in range(STEPS):
            alg.act(obs)
            obs = env.get_observations()
            dones = (torch.rand(env.num_envs, device=env.device) < 0.02).long()
            alg.process_env_step(obs, torch.randn(env.num_envs, device=env.device), dones, {})
        alg.compute_returns(obs)


def timed_update(alg: Any, env: Env) -> float:
    """One rollout (untimed), then the update [ms]."""
    rollout(alg, env)
    if env.device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    alg.update()
    if env.device.startswith("cuda"):
        torch.cuda.synchronize()
    return 1e3 * (time.perf_counter() - start)


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or not all(a.isdigit() and int(a) > 0 for a in argv[1:]):
        print("usage: rsl_rl_features_speed.py DEVICE NUM_ENVS [ROUNDS]", file=sys.stderr)
        return 2
    device, num_envs, rounds = argv[0], int(argv[1]), int(argv[2]) if len(argv) == 3 else 3
    for name in CONFIGS:
        learners = {"redline": build(name, True, num_envs, device), "rsl_rl": build(name, False, num_envs, device)}
        for alg, env in learners.values():  # warm-up (allocator, first-call costs)
            timed_update(alg, env)
        ms: dict[str, list[float]] = {k: [] for k in learners}
        for _ in range(rounds):
            for key, (alg, env) in learners.items():
                ms[key].append(round(timed_update(alg, env), 1))
        ratio = statistics.median(ms["rsl_rl"]) / statistics.median(ms["redline"])
        print("SPEED " + json.dumps({"config": name, "device": device, "num_envs": num_envs, "ms": ms, "ratio": ratio}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
