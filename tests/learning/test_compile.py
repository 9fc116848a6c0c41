"""The learner's hot path traces as one graph under ``torch.compile(fullgraph=True)``: no host sync hides in it.

A graph break is where dynamo must hand control back to Python, which is where a host sync (``.item()``,
``if tensor:``, ``tolist()``, a data-dependent shape) would sit; ``fullgraph=True`` turns any break into an error.
The backends here generate no code (``eager`` runs the captured graph op by op, ``aot_eager`` adds the traced
backward), so each test takes seconds. The policy pass and GAE equal eager's bitwise; the gradient step equals it
within rounding (traced, the Adam step runs as plain tensor ops: the fused kernel's tensor-lr overload has no fake
implementation to trace).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
import torch

from redline.learning.advantages import gae, next_values
from redline.learning.moments import minibatch_stats
from redline.learning.ppo import PPO
from tests.learning.learning_support import copy_rollout, rollout, small_cfg


def one_graph(fn: Callable[..., Any], backend: str = "eager") -> tuple[Callable[..., Any], list[torch.fx.GraphModule]]:
    """``fn`` compiled with ``fullgraph=True`` by a backend that records every graph it receives."""
    graphs: list[torch.fx.GraphModule] = []

    def recording(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]) -> Callable[..., Any]:
        graphs.append(gm)
        if backend == "aot_eager":
            from torch._dynamo.backends.debugging import aot_eager

            return aot_eager(gm, example_inputs)
        return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(fn, fullgraph=True, backend=recording, dynamic=False)

    def call(*args: Any) -> Any:
        with torch._dynamo.config.patch(trace_autograd_ops=True):
            return compiled(*args)

    return call, graphs


def test_a_host_sync_is_a_graph_break() -> None:
    """The check itself: a function that reads a device value on the host does not trace as one graph."""
    call, _ = one_graph(lambda x: x * 2 if x.sum().item() > 0 else x)
    with pytest.raises(torch._dynamo.exc.Unsupported):
        call(torch.ones(3))


def test_act_is_one_graph(make_learner: Callable[..., tuple[PPO, Any]]) -> None:
    """Policy forward, action sampling and the storage write: one graph, the same numbers as eager."""
    alg, env = make_learner()
    ref, _ = make_learner()
    obs = env.get_observations()
    groups = {g: obs[g] for g in alg._obs_groups}
    call, graphs = one_graph(alg._act_with_noise)
    with torch.inference_mode():
        for _ in range(2):  # the second call reuses the graph: the step index is not baked in as a new graph
            noise = torch.randn(alg.num_envs, alg.num_actions)
            actions = call(groups, noise)
            expected = ref._act_with_noise(groups, noise)
            assert torch.equal(actions, expected)
            alg.storage.step += 1  # what record_env does after the env step
            ref.storage.step += 1
    assert 1 <= len(graphs) <= 2  # at most one graph per step index (a Python int); never a break inside a step
    assert alg.storage.step == 2
    for key in ("actions", "action_mean", "action_std", "log_probs", "values"):
        assert torch.equal(alg.storage.data[key][:2], ref.storage.data[key][:2]), key
    assert torch.equal(alg.storage.data["obs", "policy"][:2], ref.storage.data["obs", "policy"][:2])


def test_gae_is_one_graph() -> None:
    """Next values and the GAE scan over T steps trace as one graph and equal eager bitwise."""
    g = torch.Generator().manual_seed(3)
    t, n = 8, 16
    values, rewards = torch.randn(t, n, generator=g), torch.randn(t, n, generator=g)
    terminated, truncated = torch.rand(t, n, generator=g) < 0.1, torch.rand(t, n, generator=g) < 0.1
    last = torch.randn(n, generator=g)

    def returns(r: torch.Tensor, v: torch.Tensor, te: torch.Tensor, tr: torch.Tensor, lv: torch.Tensor) -> Any:
        return gae(r, v, next_values(v, lv, tr, bootstrap_values=v), te, tr, 0.99, 0.95)

    call, graphs = one_graph(returns)
    got = call(rewards, values, terminated, truncated, last)
    want = returns(rewards, values, terminated, truncated, last)
    assert len(graphs) == 1
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))


@pytest.mark.parametrize(
    "overrides",
    [
        {},  # adaptive KL learning rate, clipped value loss, rollout-wide advantage normalisation
        {"micro_batches": 2, "normalize_advantage_per_mini_batch": True, "schedule": "fixed"},
        {"precision": "bf16", "value_normalization": True},
    ],
    ids=["adaptive", "micro-batches", "bf16"],
)
def test_gradient_step_is_one_graph(make_learner: Callable[..., tuple[PPO, Any]], overrides: dict[str, Any]) -> None:
    """Forward, backward, clipping, the fused Adam step, the NaN-skip flag and the adaptive learning rate: one graph
    per optimizer step, and the parameters, moments, learning rate and metrics equal eager's."""
    cfg = small_cfg(**overrides)
    alg, env = make_learner(cfg)
    ref, _ = make_learner(cfg)
    rollout(alg, env)
    copy_rollout(alg, ref)
    start = alg.optimizer.flat_param.clone()
    call, graphs = one_graph(alg._gradient_step, backend="aot_eager")
    minibatches = alg.storage.minibatch_indices(cfg.num_mini_batches, alg.generator)
    adv, indices = alg.storage.flat["advantages"], [i for i, _ in minibatches]
    stats = minibatch_stats(adv, indices, alg.comm) if cfg.normalize_advantage_per_mini_batch else None
    for m, (indices, share) in enumerate(minibatches):
        adv = None if stats is None else stats[m]
        got = call(indices, share, adv)
        want = ref._gradient_step(indices, share, adv)
        for a, b in zip(got, want, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert len(graphs) == 1
    opt, ref_opt = alg.optimizer, ref.optimizer
    torch.testing.assert_close(opt.flat_param, ref_opt.flat_param, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(opt.exp_avg_sq, ref_opt.exp_avg_sq, rtol=1e-5, atol=1e-9)
    assert torch.equal(opt.lr, ref_opt.lr) and torch.equal(opt.steps, ref_opt.steps)
    assert not torch.equal(opt.flat_param, start)  # steps were taken
    flat = opt.flat_grad.untyped_storage().data_ptr()  # the traced backward accumulated into the flat buffer
    assert all(p.grad is not None and p.grad.untyped_storage().data_ptr() == flat for p in opt.params)


def test_compiled_step_skips_a_non_finite_loss(make_learner: Callable[..., tuple[PPO, Any]]) -> None:
    """The NaN-skip flag inside the traced step: a NaN reward target leaves parameters, moments and lr alone."""
    alg, env = make_learner(dataclasses.replace(small_cfg(), max_consecutive_skips=5))
    rollout(alg, env)
    alg.storage.data["returns"][0, 0] = float("nan")
    before = (alg.optimizer.flat_param.clone(), alg.optimizer.exp_avg.clone(), alg.optimizer.lr.clone())
    call, _ = one_graph(alg._gradient_step, backend="aot_eager")
    indices = torch.arange(alg.storage.batch_size)
    _, ok, _ = call(indices, 1.0, None)
    assert not bool(ok)
    assert int(alg.guard.skipped) == 1
    after = (alg.optimizer.flat_param, alg.optimizer.exp_avg, alg.optimizer.lr)
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
