"""SACConfig: validated on construction, read from an rsl_rl runner dict without mutating it, one-line errors."""

from __future__ import annotations

import copy

import pytest

from redline.errors import UserError
from redline.learning.sac import SACActorConfig, SACConfig, SACCriticConfig
from tests.learning.sac.sac_support import rsl_rl_train_cfg


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: SACConfig(updates_per_step=0), r"^updates_per_step: must be an integer >= 1, got 0$"),
        (lambda: SACConfig(batch_size=2.5), r"^batch_size: must be an integer >= 1, got 2\.5$"),
        (lambda: SACConfig(tau=0.0), r"^tau: must be a finite number in \(0, 1\], got 0\.0$"),
        (lambda: SACConfig(gamma=1.5), r"^gamma: must be a finite number in \[0, 1\], got 1\.5$"),
        (lambda: SACConfig(max_grad_norm=0.0), r"^max_grad_norm: must be a finite number > 0, got 0\.0$"),
        (lambda: SACConfig(policy_average=1.5), r"^policy_average: must be a finite number in \[0, 1\], got 1\.5$"),
        (lambda: SACConfig(precision="fp16"), r"^precision: unknown precision 'fp16' \(valid: auto, bf16, fp32\)$"),
        (
            lambda: SACConfig(exploration_scale=(2.0, 1.0)),
            r"^exploration_scale: expected \(low, high\) with 0 < low <= high, got \(2\.0, 1\.0\)$",
        ),
        (lambda: SACConfig(exploration_scale=(0, 1)), r"^exploration_scale: expected \(low, high\) with 0 < low"),
        (lambda: SACConfig(exploration_scale="12"), r"^exploration_scale: expected \(low, high\) with 0 < low"),
        (lambda: SACCriticConfig(v_min=5.0, v_max=5.0), r"^critic\.v_max: must exceed v_min \(5\), got 5$"),
        (lambda: SACCriticConfig(num_atoms=1), r"^critic\.num_atoms: must be an integer >= 2, got 1$"),
        (lambda: SACActorConfig(log_std_range=(0.0, -5.0)), r"^actor\.log_std_range: expected \(min, max\) with"),
        (lambda: SACActorConfig(activation="nope"), r"^actor\.activation: unknown 'nope' \(valid: elu, "),
        (lambda: SACActorConfig(hidden_dims=()), r"^actor\.hidden_dims: expected one or more positive widths"),
    ],
)
def test_bad_values_are_one_line_errors_naming_the_field(make, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UserError, match=message) as info:
        make()
    assert "\n" not in str(info.value)


def test_the_batch_must_fit_the_whole_buffer() -> None:
    SACConfig(buffer_size_per_env=8, batch_size=64).check_envs(8)
    with pytest.raises(UserError, match=r"^batch_size: must be at most buffer_size_per_env x envs = 8 x 7 = 56, got"):
        SACConfig(buffer_size_per_env=8, batch_size=64).check_envs(7)


def test_from_rsl_rl_reads_the_runner_dict_without_changing_it() -> None:
    train_cfg = rsl_rl_train_cfg(n_step=5, use_mixed_precision=True)
    del train_cfg["algorithm"]["precision"]
    train_cfg["obs_groups"] = {"actor": ["policy"], "critic": ["policy", "privileged"]}
    frozen = copy.deepcopy(train_cfg)
    cfg = SACConfig.from_rsl_rl(train_cfg)
    assert train_cfg == frozen
    assert (cfg.num_steps_per_env, cfg.n_step, cfg.batch_size, cfg.precision) == (2, 5, 64, "bf16")
    assert cfg.actor.hidden_dims == (32, 32) and cfg.critic.num_atoms == 11
    assert cfg.critic.obs_groups == ("policy", "privileged")
    assert SACConfig.from_rsl_rl(train_cfg, batch_size=32).batch_size == 32


@pytest.mark.parametrize(
    ("where", "key", "message"),
    [
        ((), "rollouts", r"^rollouts: unknown to the off-policy learner \(valid: "),
        (("algorithm",), "clip_param", r"^algorithm\.clip_param: unknown to the off-policy learner"),
        (("critic",), "distribution_cfg", r"^critic\.distribution_cfg: the off-policy learner's policy .*None\)$"),
        (("actor",), "stochastic", r"^actor\.stochastic: unknown to the off-policy learner"),
    ],
)
def test_unknown_keys_are_named(where: tuple[str, ...], key: str, message: str) -> None:
    train_cfg = rsl_rl_train_cfg()
    node = train_cfg
    for part in where:
        node = node[part]
    node[key] = 1
    with pytest.raises(UserError, match=message):
        SACConfig.from_rsl_rl(train_cfg)


def test_isaac_labs_empty_distribution_is_taken() -> None:
    """Isaac Lab's version shims (stock ``isaaclab train`` and ``runner_cfg_dict``) give every model a
    ``distribution_cfg``, None on SAC's: read as absent."""
    train_cfg = rsl_rl_train_cfg()
    plain = SACConfig.from_rsl_rl(train_cfg)
    for role in ("actor", "critic"):
        train_cfg[role]["distribution_cfg"] = None
    assert SACConfig.from_rsl_rl(train_cfg) == plain
