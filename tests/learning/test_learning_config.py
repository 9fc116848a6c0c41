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
        ({"precision": "fp16"}, "precision: unknown precision 'fp16'"),
        ({"micro_batches": 0}, "micro_batches: must be an integer >= 1"),
        ({"gamma": 1.5}, r"gamma: must be a finite number in \[0, 1\]"),
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


@pytest.mark.parametrize(
    ("mixed", "precision", "expected"),
    [
        (True, None, "bf16"),
        (False, None, "auto"),
        (True, "fp32", "fp32"),
        (False, "bf16", "bf16"),
        (True, "auto", "auto"),
    ],
)
def test_explicit_precision_wins_over_use_mixed_precision(mixed: bool, precision: str | None, expected: str) -> None:
    source = copy.deepcopy(CARTPOLE)
    source["algorithm"]["use_mixed_precision"] = mixed
    assert PPOConfig.from_rsl_rl(source, precision=precision).precision == expected


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("algorithm", "class_name"),
            "Distillation",
            "algorithm.class_name: the redline learner is PPO, got 'Distillation'",
        ),
        (("algorithm", "class_name"), "my_pkg.algorithms:PPO", "algorithm.class_name"),
        (("algorithm", "gradient_length"), 15, "algorithm.gradient_length: unknown"),
        (("algorithm", "share_cnn_encoders"), True, "algorithm.share_cnn_encoders"),
        (("", "class_name"), "DistillationRunner", "class_name: the redline learner is an OnPolicyRunner"),
        (("", "student"), {"class_name": "MLPModel"}, "student: unknown"),
        (("actor", "rnn_type"), "lstm", "actor.rnn_type: unknown"),
        (("critic", "distribution_cfg"), {"class_name": "GaussianDistribution"}, "critic.distribution_cfg"),
        (("actor", "distribution_cfg"), {"class_name": "GaussianDistribution", "learn_std": False}, "learn_std"),
    ],
)
def test_from_rsl_rl_refuses_other_algorithms_and_unknown_keys(
    path: tuple[str, str], value: object, message: str
) -> None:
    source = copy.deepcopy(CARTPOLE)
    (source[path[0]] if path[0] else source)[path[1]] = value
    with pytest.raises(UserError, match=message) as err:
        PPOConfig.from_rsl_rl(source)
    assert "\n" not in str(err.value)


def test_from_rsl_rl_accepts_rsl_rls_spellings_of_its_classes() -> None:
    from rsl_rl.algorithms import PPO as RslRlPPO

    source = copy.deepcopy(CARTPOLE)
    source["class_name"] = "rsl_rl.runners:OnPolicyRunner"
    source["algorithm"]["class_name"] = RslRlPPO
    source["critic"]["class_name"] = "rsl_rl.models.MLPModel"
    assert PPOConfig.from_rsl_rl(source).num_mini_batches == 4


def _stock_runner_cfgs() -> list[tuple[str, object]]:
    """Every rsl_rl runner config class of Isaac Lab's tasks and of redline's tasks."""
    import importlib
    import pathlib

    import isaaclab_tasks

    import redline_tasks

    found = []
    for package in (isaaclab_tasks, redline_tasks):
        root = pathlib.Path(package.__file__).parent
        for path in sorted(root.rglob("rsl_rl*cfg.py")):
            name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
            module = importlib.import_module(name)
            for attr, cls in vars(module).items():
                if (
                    isinstance(cls, type)
                    and cls.__module__ == name
                    and "algorithm" in getattr(cls, "__dataclass_fields__", {})
                ):
                    found.append((f"{name.split('.')[-3]}:{attr}", cls))
    return found


# refusals that name a feature the redline learner does not implement (not a key it does not know)
FEATURE_REFUSALS = (
    "class_name:",
    "algorithm.class_name:",
    "actor.class_name:",
    "critic.class_name:",
    "actor.distribution_cfg.class_name:",
    "algorithm.rnd_cfg:",
    "algorithm.symmetry_cfg:",
    "algorithm.optimizer:",
)


def test_every_stock_rsl_rl_config_loads_or_names_an_unsupported_feature() -> None:
    """Isaac Lab 3.0's and redline's rsl_rl runner configs, through Isaac Lab's rsl_rl 5 shim: each loads, or is
    refused for a feature (another algorithm, RNN/CNN models, RND, symmetry), never for a key the learner does not
    know; the shipped redline tasks and most stock PPO configs load."""
    import importlib.metadata

    from isaaclab_rl.rsl_rl import handle_deprecated_rsl_rl_cfg

    version = importlib.metadata.version("rsl-rl-lib")
    loaded, refused = [], []
    for name, cls in _stock_runner_cfgs():
        try:
            runner_cfg = handle_deprecated_rsl_rl_cfg(cls(), version).to_dict()  # type: ignore[operator]
        except (AttributeError, ValueError):
            continue  # Isaac Lab's own shim cannot convert it (e.g. a tuple of model configs)
        try:
            PPOConfig.from_rsl_rl(runner_cfg)
            loaded.append(name)
        except UserError as e:
            assert str(e).startswith(FEATURE_REFUSALS), f"{name}: {e}"
            refused.append(name)
    assert {n for n in loaded if n.startswith(("cartpole:", "ant:", "velocity:"))}, loaded
    assert len(loaded) > len(refused), (loaded, refused)
