"""Exported policies: onnxruntime and TorchScript agree with the actor, normaliser included, at any batch size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from redline.bench.shapes import DummyVecEnv
from redline.learning import PPO, PPOConfig
from redline.learning.config import ModelConfig
from redline.media.export import export_policy


def test_onnx_and_torchscript_match_the_actor_on_1000_observations(tmp_path: Path) -> None:
    import onnxruntime as ort

    torch.manual_seed(0)
    env = DummyVecEnv(num_envs=32, num_obs=6, num_actions=2)
    model = ModelConfig(hidden_dims=(32, 32), obs_normalization=True)
    alg = PPO.from_env(env, PPOConfig(num_steps_per_env=8, actor=model, critic=model), "cpu")
    obs = env.get_observations()
    with torch.inference_mode():  # one iteration, so the normaliser holds real statistics
        for _ in range(8):
            obs, rewards, dones, extras = env.step(alg.act(obs))
            alg.process_env_step(rewards, dones, extras)
        alg.compute_returns(obs)
    alg.update()
    assert not torch.equal(alg.actor.obs_normalizer._mean, torch.zeros_like(alg.actor.obs_normalizer._mean))

    jit_path, onnx_path = export_policy(alg.actor, tmp_path / "exported")
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((1000, 6)).astype(np.float32)) * 3
    with torch.no_grad():
        expected = alg.actor.mlp(alg.actor.obs_normalizer(x))
    session = ort.InferenceSession(str(onnx_path))
    onnx_out = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
    np.testing.assert_allclose(onnx_out, expected.numpy(), atol=1e-5, rtol=0)
    jit_out = torch.jit.load(str(jit_path))(x)
    torch.testing.assert_close(jit_out, expected, atol=1e-5, rtol=0)
    assert session.run(None, {session.get_inputs()[0].name: x[:1].numpy()})[0].shape == (1, 2)  # any batch
