"""Fixtures for the learner tests: one intra-op thread, and a factory of tiny deterministic learners."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import torch

from redline.bench.shapes import DummyVecEnv
from redline.learning import PPO, PPOConfig
from tests.learning.learning_support import small_cfg


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    """Small tensors: one intra-op thread is fastest and keeps results independent of the core count."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def make_learner() -> Callable[..., tuple[PPO, DummyVecEnv]]:
    """``make_learner(cfg=None, init_seed=0, **env_kwargs)`` -> (learner, env), with identical weights per seed."""

    def make(cfg: PPOConfig | None = None, init_seed: int = 0, **env_kwargs: object) -> tuple[PPO, DummyVecEnv]:
        env = DummyVecEnv(**{"num_envs": 16, "seed": 1, **env_kwargs})
        torch.manual_seed(init_seed)  # network initialisation draws from the global generator, as in rsl_rl
        return PPO.from_env(env, cfg or small_cfg(), seed=init_seed), env

    return make
