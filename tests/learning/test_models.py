"""Models are rsl_rl's MLPModel; the precision forward and the guarded normaliser update match rsl_rl's."""

from __future__ import annotations

import copy

import torch
from rsl_rl.modules import EmpiricalNormalization
from tensordict import TensorDict

from redline.learning import ModelConfig, Precision
from redline.learning.models import PrecisionNet, build_actor, build_critic, update_obs_normalizer
from redline.learning.moments import batch_moments
from tests.learning.learning_support import SMALL


def _obs() -> TensorDict:
    g = torch.Generator().manual_seed(0)
    return TensorDict({"policy": torch.randn(8, 5, generator=g), "critic": torch.randn(8, 7, generator=g)}, [8])


def test_built_the_rsl_rl_way() -> None:
    obs, groups = _obs(), {"actor": ["policy"], "critic": ["policy", "critic"]}
    actor = build_actor(obs, groups, 3, ModelConfig(hidden_dims=(16, 8), init_std=0.5, std_type="log"))
    critic = build_critic(obs, groups, SMALL)
    assert actor.obs_dim == 5 and critic.obs_dim == 12
    assert [m.out_features for m in actor.mlp if isinstance(m, torch.nn.Linear)] == [16, 8, 3]
    assert torch.allclose(actor.distribution.log_std_param.exp(), torch.full((3,), 0.5))
    assert set(actor.state_dict()) == {f"mlp.{i}.{p}" for i in (0, 2, 4) for p in ("weight", "bias")} | {
        "distribution.log_std_param"
    }


def test_precision_net_fp32_is_rsl_rl_forward_and_bf16_returns_fp32() -> None:
    obs, groups = _obs(), {"actor": ["policy"], "critic": ["policy"]}
    torch.manual_seed(0)
    actor = build_actor(obs, groups, 3, SMALL)
    assert torch.equal(PrecisionNet(actor, Precision("fp32"))(obs), actor(obs))
    out = PrecisionNet(actor, Precision("bf16"))(obs)
    assert out.dtype == torch.float32 and torch.allclose(out, actor(obs), atol=0.05)


def test_obs_normalizer_update_matches_rsl_rl_and_respects_ok() -> None:
    g = torch.Generator().manual_seed(1)
    ours, ref = EmpiricalNormalization(4), EmpiricalNormalization(4)
    for _ in range(3):
        x = torch.randn(32, 4, generator=g) * 3 + 1
        update_obs_normalizer(ours, batch_moments(x, dim=0), torch.tensor(True))
        ref.update(x)
    for name in ("_mean", "_var", "_std", "count"):
        assert torch.allclose(getattr(ours, name), getattr(ref, name), atol=1e-6), name
    before = copy.deepcopy(ours.state_dict())
    update_obs_normalizer(ours, batch_moments(torch.full((4, 4), float("nan")), dim=0), torch.tensor(False))
    assert all(torch.equal(v, ours.state_dict()[k]) for k, v in before.items())


def test_in_place_activations_keep_forward_and_gradients_and_leave_the_model_alone() -> None:
    obs, groups = _obs(), {"actor": ["policy"], "critic": ["policy"]}
    torch.manual_seed(0)
    actor = build_actor(obs, groups, 3, SMALL)
    net = PrecisionNet(actor, Precision("fp32"))
    # every activation after a Linear runs in place in redline's forward; the model's own modules are unchanged
    assert [getattr(m, "inplace", None) for m in net.body[1::2]] == [True] * (len(net.body) // 2)
    assert all(m.inplace is False for m in actor.mlp if isinstance(m, torch.nn.ELU))
    x = obs["policy"].clone().requires_grad_(True)
    ours = net(TensorDict({"policy": x}, [8]))
    ours.square().sum().backward()
    ours_grads = [p.grad.clone() for p in actor.parameters() if p.grad is not None] + [x.grad.clone()]
    actor.zero_grad()
    x.grad = None
    ref = actor(TensorDict({"policy": x}, [8]))
    ref.square().sum().backward()
    ref_grads = [p.grad for p in actor.parameters() if p.grad is not None] + [x.grad]
    assert torch.equal(ours, ref)
    # dx = dy (y + α) from the saved output instead of dy α exp(x): the same up to rounding
    assert len(ours_grads) == len(ref_grads) and all(
        torch.allclose(a, b, rtol=1e-5, atol=1e-7) for a, b in zip(ours_grads, ref_grads, strict=True)
    )
