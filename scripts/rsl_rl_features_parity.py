"""Learning of rsl_rl's recurrent and symmetry PPO configs: redline's drop-in vs rsl_rl 5.5.1's PPO, paired seeds.

    OMP_NUM_THREADS=1 python scripts/rsl_rl_features_parity.py [SEEDS] [ITERATIONS]     # default 10 seeds, 40

Both learners train under rsl_rl's own ``OnPolicyRunner`` on redline's synthetic task (``DummyVecEnv``: steer a
noisy linear system to the origin, 64 envs, 24 steps per env), from the same seed (the same initial weights and env
randomness), in fp32 on the CPU, alternating which learner goes first from seed to seed. Per config one
``PARITY {json}`` line: each learner's final mean return (the runner's last-100-episode mean) per seed, and the
paired difference redline - rsl_rl with its mean and a 95 % bootstrap CI (2,000 resamples, numpy seed 0).

``symmetry``: negating the state and the action is an exact symmetry of this task (linear dynamics with symmetric
noise, reward in x² and a²), so mirrored samples are true samples. ``recurrent``: an LSTM policy and critic; the
task is fully observed, so the recurrence is exercised, not needed.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile

import numpy as np
import torch
from rsl_rl.runners import OnPolicyRunner

from redline.bench.shapes import DummyVecEnv, feature_models
from redline.learning.rsl_rl import CLASS_PATH

CONFIGS = feature_models([32, 32], 32, obs_normalization=False)
"""The two configs compared (:func:`redline.bench.shapes.feature_models`)."""


def final_return(name: str, ours: bool, seed: int, iterations: int) -> float:
    spec = CONFIGS[name]
    cfg = {
        "num_steps_per_env": 24,
        "save_interval": 10_000,
        "seed": seed,
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "actor": spec["actor"],
        "critic": spec["critic"],
        "algorithm": {
            "class_name": CLASS_PATH if ours else "PPO",
            "learning_rate": 1e-3,
            "schedule": "adaptive",
            "desired_kl": 0.01,
            **spec["algorithm"],
        },
    }
    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory() as log_dir:  # rsl_rl's logger keeps episode returns only with a log folder
        runner = OnPolicyRunner(DummyVecEnv(num_envs=64, seed=seed), cfg, log_dir=log_dir, device="cpu")
        runner.learn(iterations)
        runner.logger.writer.close()
    return float(statistics.mean(runner.logger.rewbuffer)) if runner.logger.rewbuffer else float("nan")


def main(argv: list[str]) -> int:
    if len(argv) > 2 or not all(a.isdigit() and int(a) > 0 for a in argv):
        print("usage: rsl_rl_features_parity.py [SEEDS] [ITERATIONS]", file=sys.stderr)
        return 2
    seeds, iterations = (int(argv[0]) if argv else 10), (int(argv[1]) if len(argv) > 1 else 40)
    for name in CONFIGS:
        result: dict[str, list[float]] = {"redline": [], "rsl_rl": []}
        for seed in range(seeds):
            order = (True, False) if seed % 2 == 0 else (False, True)
            for ours in order:
                result["redline" if ours else "rsl_rl"].append(round(final_return(name, ours, seed, iterations), 4))
        diff = np.array(result["redline"]) - np.array(result["rsl_rl"])
        rng = np.random.default_rng(0)
        boot = diff[rng.integers(0, len(diff), size=(2000, len(diff)))].mean(axis=1)
        low, high = np.percentile(boot, [2.5, 97.5])
        line = {"config": name, "iterations": iterations, **result, "diff_mean": float(diff.mean())}
        print("PARITY " + json.dumps(line | {"diff_ci95": [float(low), float(high)]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
