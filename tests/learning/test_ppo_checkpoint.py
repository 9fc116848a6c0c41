"""Checkpoint state: round trip, bitwise continuation on CPU, and rsl_rl 5.5.1 compatibility in both directions."""

from __future__ import annotations

import contextlib
import io

import pytest
import torch
from rsl_rl.algorithms import PPO as RslPPO
from rsl_rl.models import MLPModel

from redline.bench.shapes import DummyVecEnv
from redline.errors import UserError
from redline.learning import ModelConfig
from tests.learning.learning_support import SMALL, flat_params, rollout, small_cfg

NORMALIZED = ModelConfig(hidden_dims=(16, 16), obs_normalization=True)


def _save_load(state: dict, tmp_path) -> dict:
    path = tmp_path / "model.pt"
    torch.save(state, path)
    return torch.load(path, weights_only=True)


def _clone_env(env: DummyVecEnv) -> DummyVecEnv:
    twin = DummyVecEnv(num_envs=env.num_envs, seed=0)
    twin.B, twin.M = env.B.clone(), env.M.clone()
    twin.state, twin.episode_length_buf = env.state.clone(), env.episode_length_buf.clone()
    twin.generator.set_state(env.generator.get_state())
    return twin


def _rsl_rl_cfg(actor: ModelConfig, critic: ModelConfig) -> dict:
    """An rsl_rl runner config dict with the same networks, as Isaac Lab's ``agent_cfg.to_dict()`` gives it."""
    return {
        "num_steps_per_env": 8,
        "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
        "multi_gpu": None,
        "algorithm": {"class_name": "PPO", "learning_rate": 1e-3},
        "actor": {
            "class_name": "MLPModel",
            "hidden_dims": list(actor.hidden_dims),
            "activation": actor.activation,
            "obs_normalization": actor.obs_normalization,
            "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0, "std_type": "scalar"},
        },
        "critic": {
            "class_name": "MLPModel",
            "hidden_dims": list(critic.hidden_dims),
            "activation": critic.activation,
            "obs_normalization": critic.obs_normalization,
        },
    }


def _rsl_rl_ppo(env: DummyVecEnv, actor: ModelConfig, critic: ModelConfig) -> RslPPO:
    with contextlib.redirect_stdout(io.StringIO()):  # construct_algorithm prints the models
        return RslPPO.construct_algorithm(env.get_observations(), env, _rsl_rl_cfg(actor, critic), "cpu")


def test_round_trip_and_bitwise_continuation(make_learner, tmp_path) -> None:
    cfg = small_cfg(actor=NORMALIZED, critic=NORMALIZED, value_normalization=True)
    alg, env = make_learner(cfg)
    rollout(alg, env)
    alg.update()
    state = _save_load(alg.state_dict(), tmp_path)
    twin_env = _clone_env(env)
    resumed, _ = make_learner(cfg, init_seed=123)  # different initial weights and generator
    resumed.load_state_dict(state)
    assert torch.equal(flat_params(resumed), flat_params(alg))
    assert torch.equal(resumed.optimizer.exp_avg_sq, alg.optimizer.exp_avg_sq)
    assert torch.equal(resumed.optimizer.steps, alg.optimizer.steps)
    assert torch.equal(resumed.learning_rate, alg.learning_rate)
    assert torch.equal(resumed.value_normalizer.var, alg.value_normalizer.var)
    assert torch.equal(resumed.actor.obs_normalizer._std, alg.actor.obs_normalizer._std)
    assert torch.equal(resumed.generator.get_state(), alg.generator.get_state())
    # the next iteration is bitwise the same as the uninterrupted run's
    rollout(alg, env)
    rollout(resumed, twin_env)
    m_alg, m_resumed = alg.update(), resumed.update()
    assert torch.equal(flat_params(resumed), flat_params(alg))
    assert torch.equal(m_resumed["loss"], m_alg["loss"])


def test_state_dict_is_a_snapshot(make_learner) -> None:
    alg, env = make_learner()
    state = alg.state_dict()
    weight = state["actor_state_dict"]["mlp.0.weight"].clone()
    rollout(alg, env)
    alg.update()
    assert torch.equal(state["actor_state_dict"]["mlp.0.weight"], weight)
    assert not torch.equal(alg.actor.mlp[0].weight, weight)


def test_keys_and_extras(make_learner) -> None:
    alg, _ = make_learner(small_cfg(precision="bf16", value_normalization="auto"))
    state = alg.state_dict()
    assert {"actor_state_dict", "critic_state_dict", "optimizer_state_dict"} <= state.keys()
    assert state["precision"] == "bf16" and state["value_normalization"] is True
    assert state["learning_rate"] == pytest.approx(1e-3)
    assert state["nan_guard"]["consecutive"] == 0
    fp32, _ = make_learner(small_cfg(value_normalization=False))
    with pytest.raises(UserError, match="value_normalization=True"):
        fp32.load_state_dict(state)


@pytest.mark.parametrize("model_cfg", [SMALL, NORMALIZED], ids=["plain", "obs_normalization"])
def test_rsl_rl_loads_a_redline_checkpoint(make_learner, tmp_path, model_cfg: ModelConfig) -> None:
    alg, env = make_learner(small_cfg(actor=model_cfg, critic=model_cfg))
    rollout(alg, env)
    alg.update()
    state = _save_load(alg.state_dict(), tmp_path)
    # an MLPModel built the rsl_rl way takes the actor's state dict strictly
    obs = env.get_observations()
    actor = MLPModel(
        obs,
        {"actor": ["policy"]},
        "actor",
        env.num_actions,
        hidden_dims=list(model_cfg.hidden_dims),
        obs_normalization=model_cfg.obs_normalization,
        distribution_cfg={"class_name": "GaussianDistribution", "init_std": 1.0},
    )
    actor.load_state_dict(state["actor_state_dict"], strict=True)
    assert torch.allclose(actor(obs), alg.act_inference(obs), atol=1e-6)
    # and rsl_rl's own PPO (what `isaaclab play` runs) loads models and optimizer
    rsl = _rsl_rl_ppo(env, model_cfg, model_cfg)
    rsl.load({**state, "iter": 1, "infos": None}, load_cfg=None, strict=True)
    assert torch.allclose(rsl.actor(obs), alg.act_inference(obs), atol=1e-6)
    assert rsl.learning_rate == pytest.approx(alg.learning_rate.item())
    assert rsl.optimizer.state_dict()["state"][0]["step"].item() == alg.optimizer.step_count.item()


def test_redline_loads_an_rsl_rl_checkpoint(make_learner) -> None:
    alg, env = make_learner()
    torch.manual_seed(42)
    rsl = _rsl_rl_ppo(env, SMALL, SMALL)
    alg.load_state_dict(rsl.save())  # no redline extras: models and optimizer only
    obs = env.get_observations()
    assert torch.allclose(alg.act_inference(obs), rsl.actor(obs), atol=1e-6)
    assert torch.allclose(alg.critic(obs), rsl.critic(obs))
