"""The learner config: frozen, validated, and read from an rsl_rl runner dict without touching it."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from redline.errors import UserError
from redline.learning import ModelConfig, PPOConfig

# Isaac Lab's cartpole PPO runner config, as ``agent_cfg.to_dict()`` gives it (the keys the learner reads)
CARTPOLE = {
    "num_steps_per_env": 16,
    "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
    "actor": {
        "class_name": "MLPModel",
        "hidden_dims": [32, 32],
        "activation": "elu",
        "obs_normalization": False,
        "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0, "std_type": "scalar"},
    },
    "critic": {"class_name": "MLPModel", "hidden_dims": [32, 32], "activation": "elu", "obs_normalization": False},
    "algorithm": {
        "class_name": "PPO",
        "value_loss_coef": 1.0,
        "use_clipped_value_loss": True,
        "clip_param": 0.2,
        "entropy_coef": 0.005,
        "num_learning_epochs": 5,
        "num_mini_batches": 4,
        "learning_rate": 1.0e-3,
        "schedule": "adaptive",
        "gamma": 0.99,
        "lam": 0.95,
        "desired_kl": 0.01,
        "max_grad_norm": 1.0,
        "optimizer": "adam",
        "rnd_cfg": None,
        "symmetry_cfg": None,
        "use_mixed_precision": False,
    },
}


def test_frozen_and_defaults_are_not_shared() -> None:
    cfg = PPOConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.gamma = 0.5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.actor.hidden_dims = (1,)  # type: ignore[misc]
    assert isinstance(cfg.actor.hidden_dims, tuple)
    assert ModelConfig(hidden_dims=[8, 8]).hidden_dims == (8, 8)  # lists are frozen into tuples
    changed = dataclasses.replace(cfg, micro_batches=2)
    assert changed.micro_batches == 2 and cfg.micro_batches == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"schedule": "cosine"}, "schedule: unknown 'cosine'"),
        ({"precision": "fp16"}, "precision: unknown 'fp16'"),
        ({"micro_batches": 0}, "micro_batches: must be >= 1"),
        ({"gamma": 1.5}, "gamma, lam"),
        ({"value_normalization": "yes"}, "value_normalization"),
        ({"max_consecutive_skips": 0}, "max_consecutive_skips"),
    ],
)
def test_validation(kwargs: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        PPOConfig(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"activation": "swish2"}, "activation: unknown 'swish2'"),
        ({"hidden_dims": ()}, "hidden_dims"),
        ({"hidden_dims": (8, 0)}, "hidden_dims"),
        ({"std_type": "exp"}, "std_type"),
        ({"init_std": 0.0}, "init_std"),
        ({"obs_groups": ()}, "obs_groups"),
    ],
)
def test_model_validation(kwargs: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        ModelConfig(**kwargs)


def test_value_normalization_auto() -> None:
    assert PPOConfig().uses_value_normalization(bf16=True)
    assert not PPOConfig().uses_value_normalization(bf16=False)
    assert PPOConfig(value_normalization=True).uses_value_normalization(bf16=False)


def test_from_rsl_rl_reads_without_mutating() -> None:
    source = copy.deepcopy(CARTPOLE)
    cfg = PPOConfig.from_rsl_rl(source, precision="bf16", micro_batches=2)
    assert source == CARTPOLE
    assert cfg.num_steps_per_env == 16 and cfg.entropy_coef == 0.005 and cfg.num_mini_batches == 4
    assert cfg.actor == ModelConfig(hidden_dims=(32, 32), activation="elu", init_std=1.0)
    assert cfg.critic.hidden_dims == (32, 32) and cfg.critic.obs_groups == ("policy",)
    assert cfg.precision == "bf16" and cfg.micro_batches == 2


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("algorithm", "rnd_cfg"), {"weight": 1.0}, "algorithm.rnd_cfg"),
        (("algorithm", "optimizer"), "sgd", "algorithm.optimizer"),
        (("actor", "class_name"), "RNNModel", "actor.class_name"),
        (("actor", "distribution_cfg"), {"class_name": "BetaDistribution"}, "GaussianDistribution"),
    ],
)
def test_from_rsl_rl_refuses_what_it_does_not_implement(path: tuple[str, str], value: object, message: str) -> None:
    source = copy.deepcopy(CARTPOLE)
    source[path[0]][path[1]] = value
    with pytest.raises(UserError, match=message):
        PPOConfig.from_rsl_rl(source)
