"""Plain helpers for the learner tests (imported by the test modules; fixtures live in conftest.py)."""

from __future__ import annotations

import collections
import dataclasses

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from redline.learning import PPO, ModelConfig, PPOConfig
from redline.learning.rollout import collect_rollout
from redline.learning.testing import DummyVecEnv

SMALL = ModelConfig(hidden_dims=(16, 16))


def small_cfg(**overrides: object) -> PPOConfig:
    """8 steps x 16 envs, [16, 16] MLPs, 2 epochs x 2 minibatches, fp32, no value normalisation."""
    base = PPOConfig(
        num_steps_per_env=8,
        num_learning_epochs=2,
        num_mini_batches=2,
        precision="fp32",
        value_normalization=False,
        actor=SMALL,
        critic=SMALL,
    )
    return dataclasses.replace(base, **overrides)


def rollout(alg: PPO, env: DummyVecEnv) -> None:
    """Fill the learner's storage with one rollout and compute returns."""
    collect_rollout(alg, env, env.get_observations())


def copy_rollout(src: PPO, dst: PPO) -> None:
    """Give ``dst`` exactly the rollout ``src`` holds (storage data, step, value statistics, guard flag) and the
    state of its generator, so that both draw the same minibatches."""
    dst.storage.data.update_(src.storage.data)
    dst.storage.step = src.storage.step
    dst.value_normalizer.load_state_dict(src.value_normalizer.state_dict())
    dst._rollout_ok = src._rollout_ok.clone()
    dst.generator.set_state(src.generator.get_state())


def flat_params(alg: PPO) -> torch.Tensor:
    """All actor and critic parameters, concatenated (a copy)."""
    return alg.optimizer.flat_param.clone()


class HostReads(TorchDispatchMode):
    """Counts ops that copy a device value into a Python number (``.item()``, ``bool(t)``, ``if t:``)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: collections.Counter = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            self.calls[func] += 1
        return func(*args, **(kwargs or {}))
