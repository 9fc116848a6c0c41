"""The off-policy learner inside rsl_rl 5.5.1's stock OnPolicyRunner, selected by algorithm.class_name."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from rsl_rl.runners import OnPolicyRunner

from redline.bench.shapes import negation_mirror
from redline.errors import UserError
from redline.learning.sac import CLASS_PATH
from redline.learning.sac.rsl_rl_sac import SAC as DropIn
from tests.learning.sac.sac_support import ReachEnv, rsl_rl_train_cfg


@pytest.mark.parametrize("average", [0.0, 0.5])
def test_the_stock_runner_trains_saves_loads_and_exports(tmp_path: Path, average: float) -> None:
    """Trains, saves, loads and exports the deployed policy (with ``policy_average``, the actor's running average)."""
    cfg = rsl_rl_train_cfg(policy_average=average)
    runner = OnPolicyRunner(ReachEnv(8), cfg, log_dir=str(tmp_path), device="cpu")
    assert isinstance(runner.alg, DropIn)
    before = runner.alg.learner.flat.flat_param.clone()
    runner.learn(3)
    learner = runner.alg.learner
    assert learner.gradient_steps == 3 * 2 * 2  # learning starts at once: 3 iterations x 2 steps x 2 updates
    assert not torch.equal(before, learner.flat.flat_param)
    checkpoint = tmp_path / "model_2.pt"
    assert checkpoint.is_file() and list(tmp_path.glob("events.out.tfevents.*"))
    # the stock play path: a fresh runner loads it and acts as the trained policy
    env = ReachEnv(8, env_id_offset=50)
    again = OnPolicyRunner(env, rsl_rl_train_cfg(policy_average=average), log_dir=None, device="cpu")
    again.load(str(checkpoint))
    assert again.current_learning_iteration == 2
    obs = env.get_observations()
    torch.testing.assert_close(again.get_inference_policy()(obs), learner.act_inference(obs))
    assert again.alg.learner.replay.size == learner.replay.size
    runner.export_policy_to_jit(str(tmp_path / "exported"))
    runner.export_policy_to_onnx(str(tmp_path / "exported"))
    jit = torch.jit.load(str(tmp_path / "exported" / "policy.pt"))
    torch.testing.assert_close(jit(obs["policy"]), learner.act_inference(obs))
    assert (runner.alg.get_policy() is learner.actor) == (average == 0.0)


@pytest.mark.parametrize(
    ("algorithm", "message"),
    [
        ({"batch_size": 1024}, r"^batch_size: must be at most buffer_size_per_env x envs = 32 x 8 = 256, got 1024$"),
        ({"updates_per_step": 0}, r"^updates_per_step: must be an integer >= 1, got 0$"),
        ({"num_learning_epochs": 5}, r"^algorithm\.num_learning_epochs: unknown to the off-policy learner \(valid: "),
        ({"class_name": "PPO"}, r"^algorithm\.class_name: the off-policy learner is redline\.learning\.sac\."),
    ],
)
def test_bad_configs_are_refused_in_one_line(algorithm: dict, message: str) -> None:
    env = ReachEnv(8)
    cfg = rsl_rl_train_cfg(**algorithm)
    with pytest.raises(UserError, match=message) as info:
        DropIn.construct_algorithm(env.get_observations(), env, cfg, "cpu")
    assert "\n" not in str(info.value)
    assert cfg == rsl_rl_train_cfg(**algorithm)  # only read


def test_a_ppo_checkpoint_is_refused() -> None:
    env = ReachEnv(8)
    alg = DropIn.construct_algorithm(env.get_observations(), env, rsl_rl_train_cfg(), "cpu")
    with pytest.raises(UserError, match=rf"^checkpoint: not one of the off-policy learner \(algorithm\.class_name="
                       rf"{CLASS_PATH}\)"):  # fmt: skip
        alg.load({"actor_state_dict": {}, "critic_state_dict": {}, "optimizer_state_dict": {}})


def test_symmetry_cfg_augments_and_a_mirror_loss_is_refused() -> None:
    env = ReachEnv(8)
    symmetry = {"use_data_augmentation": True, "data_augmentation_func": "redline.bench.shapes:negation_mirror"}
    alg = DropIn.construct_algorithm(env.get_observations(), env, rsl_rl_train_cfg(symmetry_cfg=symmetry), "cpu")
    assert alg.learner.symmetry is negation_mirror and alg.learner.symmetry_env is env
    with pytest.raises(UserError, match=r"^algorithm\.symmetry_cfg\.use_mirror_loss: not taken"):
        cfg = rsl_rl_train_cfg(symmetry_cfg=symmetry | {"use_mirror_loss": True})
        DropIn.construct_algorithm(env.get_observations(), env, cfg, "cpu")
