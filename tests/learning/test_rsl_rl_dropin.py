"""redline's PPO inside rsl_rl's stock OnPolicyRunner (``algorithm.class_name=redline.learning.rsl_rl:PPO``)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from rsl_rl.runners import OnPolicyRunner

from redline.bench.shapes import DummyVecEnv, rsl_rl_cfg
from redline.errors import UserError
from redline.learning import precision
from redline.learning.rsl_rl import CLASS_PATH
from redline.learning.rsl_rl import PPO as DropIn


def _cfg(class_name: str) -> dict:
    cfg = rsl_rl_cfg({"steps": 8, "hidden": [16, 16]}, bf16=False)
    cfg = copy.deepcopy(cfg) | {"save_interval": 1, "max_iterations": 2, "seed": 3}
    cfg["algorithm"]["class_name"] = class_name
    return cfg


def test_the_stock_runner_trains_with_redlines_update_and_rsl_rl_plays_the_result(tmp_path: Path) -> None:
    torch.manual_seed(0)
    runner = OnPolicyRunner(DummyVecEnv(num_envs=16, seed=0), _cfg(CLASS_PATH), log_dir=str(tmp_path), device="cpu")
    assert isinstance(runner.alg, DropIn)
    before = runner.alg.learner.optimizer.flat_param.clone()
    runner.learn(2)
    assert not torch.equal(before, runner.alg.learner.optimizer.flat_param)  # redline's update ran
    assert runner.alg.learner.optimizer.step_count.item() == 2 * 5 * 4  # 2 iterations x 5 epochs x 4 minibatches
    checkpoint = tmp_path / "model_1.pt"
    assert checkpoint.is_file() and list(tmp_path.glob("events.out.tfevents.*"))  # rsl_rl's own logger wrote
    # the stock play path: a runner with rsl_rl's own PPO loads the checkpoint and acts as redline's policy
    env = DummyVecEnv(num_envs=16, seed=1)
    stock = OnPolicyRunner(env, _cfg("PPO"), log_dir=None, device="cpu")
    stock.load(str(checkpoint))
    obs = env.get_observations()
    expected = runner.alg.learner.act_inference(obs)
    assert torch.allclose(stock.get_inference_policy()(obs), expected, atol=1e-6)
    # and the drop-in class loads it back, continuing at the saved iteration as rsl_rl does
    again = OnPolicyRunner(DummyVecEnv(num_envs=16, seed=0), _cfg(CLASS_PATH), log_dir=None, device="cpu")
    again.load(str(checkpoint))
    assert again.current_learning_iteration == 1
    assert torch.equal(again.alg.learner.optimizer.flat_param, runner.alg.learner.optimizer.flat_param)


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])  # the fast learner, the general one
@pytest.mark.parametrize("mixed", [False, True])
def test_use_mixed_precision_false_is_fp32_on_a_bf16_gpu(
    optimizer: str, mixed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Isaac Lab's stock config says ``use_mixed_precision=False``: the drop-in runs fp32, as rsl_rl does, even where
    the device could run bf16 (the capability answer is patched: the device here is the CPU)."""
    monkeypatch.setattr(precision, "bf16_supported", lambda device: True)
    cfg = _cfg(CLASS_PATH)
    cfg["algorithm"] |= {"optimizer": optimizer, "use_mixed_precision": mixed}
    env = DummyVecEnv(num_envs=16, seed=0)
    alg = DropIn.construct_algorithm(env.get_observations(), env, cfg, "cpu")
    learner = getattr(alg, "learner", alg)
    assert type(alg).__name__ == ("PPO" if optimizer == "adam" else "GeneralPPO")
    assert learner.precision.mode == ("bf16" if mixed else "fp32")


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_torch_compile_mode_is_refused_in_one_line(optimizer: str) -> None:
    cfg = _cfg(CLASS_PATH) | {"torch_compile_mode": "default"}
    cfg["algorithm"]["optimizer"] = optimizer
    env = DummyVecEnv(num_envs=16, seed=0)
    with pytest.raises(UserError, match=r"^torch_compile_mode: 'default' is not taken by .*\(valid: None;"):
        DropIn.construct_algorithm(env.get_observations(), env, cfg, "cpu")
    cfg["torch_compile_mode"] = None  # rsl_rl's and Isaac Lab's default: compiling off
    assert DropIn.construct_algorithm(env.get_observations(), env, cfg, "cpu") is not None
