"""The drop-in class runs ``redline train``'s range and rollout-shape checks inside stock scripts, and both it and the
redline runner resolve an observation set the config leaves out as rsl_rl 5.5.1 does: the env's group of that name
(``critic``) when it has one, else ``policy``."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

from redline.bench.shapes import DummyVecEnv, rsl_rl_cfg
from redline.errors import UserError
from redline.learning import PPOConfig
from redline.learning.rsl_rl import CLASS_PATH
from redline.learning.rsl_rl import PPO as DropIn
from redline.runners.redline_runner import RedlineRunner


def _cfg(class_name: str = CLASS_PATH, **algorithm: object) -> dict:
    cfg = copy.deepcopy(rsl_rl_cfg({"steps": 8, "hidden": [16, 16]}, bf16=False))
    cfg["algorithm"] = {**cfg["algorithm"], "class_name": class_name, **algorithm}
    return cfg | {"seed": 0}


BAD = [
    ({"learning_rate": float("inf")}, "agent.algorithm.learning_rate: must be a finite number > 0, got inf"),
    ({"entropy_coef": -0.5}, "agent.algorithm.entropy_coef: must be a finite number >= 0, got -0.5"),
    ({"num_mini_batches": 33}, "agent.algorithm.num_mini_batches: must be at most the rollout's T x N = 8 x 4 = 32"),
]


@pytest.mark.parametrize(("algorithm", "expected"), BAD, ids=[next(iter(a)) for a, _ in BAD])
def test_the_drop_in_class_refuses_what_redline_train_refuses(algorithm: dict, expected: str) -> None:
    env = DummyVecEnv(num_envs=4, seed=0)
    with pytest.raises(UserError) as caught:
        DropIn.construct_algorithm(env.get_observations(), env, _cfg(**algorithm), "cpu")
    assert str(caught.value).startswith(expected)


def test_the_drop_in_class_takes_the_envs_critic_group_when_the_config_names_none() -> None:
    env = DummyVecEnv(num_envs=4, seed=0, critic_obs=True)
    cfg = _cfg() | {"obs_groups": {"actor": ["policy"]}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rsl_rl warns that it assumed the 'critic' group, as it does for its PPO
        alg = DropIn.construct_algorithm(env.get_observations(), env, cfg, "cpu")
    assert alg.learner.cfg.critic.obs_groups == ("critic",)


@pytest.mark.parametrize(("critic_obs", "expected"), [(True, ("critic",)), (False, ("policy",))])
def test_the_redline_runner_resolves_a_missing_critic_set_as_rsl_rl(critic_obs: bool, expected: tuple) -> None:
    torch.manual_seed(0)
    train_cfg = _cfg("PPO") | {"obs_groups": {"actor": ["policy"]}}
    env = DummyVecEnv(num_envs=4, seed=0, critic_obs=critic_obs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runner = RedlineRunner(env, PPOConfig.from_rsl_rl(train_cfg), None, "cpu", seed=0, train_cfg=train_cfg)
    assert runner.cfg.critic.obs_groups == expected and runner.cfg.actor.obs_groups == ("policy",)


def test_a_set_naming_a_group_the_env_lacks_is_one_line() -> None:
    train_cfg = _cfg("PPO") | {"obs_groups": {"actor": ["policy"], "critic": ["privileged"]}}
    cfg = PPOConfig.from_rsl_rl(_cfg("PPO"))
    with pytest.raises(UserError, match=r"^agent\.obs_groups: Observation 'privileged' in observation set 'critic'"):
        RedlineRunner(DummyVecEnv(num_envs=4), cfg, None, "cpu", seed=0, train_cfg=train_cfg)
