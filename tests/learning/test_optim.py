"""FlatAdam against torch.optim.Adam, the skip flag, the Adam state-dict format, and the adaptive learning rate."""

from __future__ import annotations

import copy
import itertools

import pytest
import torch
from torch import nn

from redline.learning.optim import FlatAdam, adaptive_lr


def _nets() -> tuple[nn.Module, nn.Module]:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ELU(), nn.Linear(4, 2)), nn.Linear(3, 1)


def _set_grads(params: list[nn.Parameter], g: torch.Generator, scale: float = 1.0) -> None:
    """Write the same random gradients into FlatAdam's views (in place) or torch's ``.grad`` (fresh tensors)."""
    for p in params:
        grad = torch.randn(p.shape, generator=g) * scale
        if p.grad is None:
            p.grad = grad
        else:
            p.grad.copy_(grad)


@pytest.mark.parametrize("max_norm", [None, 0.5])
def test_matches_torch_adam(max_norm: float | None) -> None:
    actor, critic = _nets()
    ref_actor, ref_critic = copy.deepcopy(actor), copy.deepcopy(critic)
    flat = FlatAdam([actor.parameters(), critic.parameters()], lr=1e-2)
    ref = torch.optim.Adam(itertools.chain(ref_actor.parameters(), ref_critic.parameters()), lr=1e-2)
    ok = torch.tensor(True)
    for step in range(5):
        g1, g2 = torch.Generator().manual_seed(step), torch.Generator().manual_seed(step)
        _set_grads(list(actor.parameters()) + list(critic.parameters()), g1, scale=3.0)
        _set_grads(list(ref_actor.parameters()) + list(ref_critic.parameters()), g2, scale=3.0)
        if max_norm is not None:  # rsl_rl clips the actor and the critic separately
            nn.utils.clip_grad_norm_(ref_actor.parameters(), max_norm)
            nn.utils.clip_grad_norm_(ref_critic.parameters(), max_norm)
        flat.step(ok, max_norm)
        ref.step()
    for p, q in zip(
        itertools.chain(actor.parameters(), critic.parameters()),
        itertools.chain(ref_actor.parameters(), ref_critic.parameters()),
        strict=True,
    ):
        assert torch.allclose(p, q, rtol=1e-5, atol=1e-6)
    assert flat.step_count.item() == 5


def test_parameters_and_grads_are_views_of_the_flat_buffers() -> None:
    actor, critic = _nets()
    flat = FlatAdam([actor.parameters(), critic.parameters()], lr=1e-3)
    assert flat.segments == [slice(0, 26), slice(26, 30)]
    w = actor[0].weight
    assert w.data_ptr() == flat.flat_param.data_ptr() and w.grad.data_ptr() == flat.flat_grad.data_ptr()
    actor(torch.ones(2, 3)).sum().backward()
    assert flat.flat_grad[:26].abs().sum() > 0 and flat.flat_grad[26:].abs().sum() == 0
    flat.zero_grad()
    assert flat.flat_grad.abs().sum() == 0 and w.grad.abs().sum() == 0
    actor.zero_grad()  # sets .grad to None ...
    flat.bind_grads()  # ... and binding restores the views
    assert w.grad is not None and w.grad.data_ptr() == flat.flat_grad.data_ptr()


def test_skip_leaves_everything_unchanged_then_recovers() -> None:
    actor, critic = _nets()
    ref_actor, ref_critic = copy.deepcopy(actor), copy.deepcopy(critic)
    flat = FlatAdam([actor.parameters(), critic.parameters()], lr=1e-2)
    before = (flat.flat_param.clone(), flat.exp_avg.clone(), flat.exp_avg_sq.clone(), flat.steps.clone())
    flat.flat_grad.fill_(float("nan"))
    flat.flat_grad[3] = float("inf")
    flat.step(torch.tensor(False), max_norm=1.0)
    after = (flat.flat_param, flat.exp_avg, flat.exp_avg_sq, flat.steps)
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
    # a good step afterwards is Adam's first step (float rounding differs: torch computes step sizes in double)
    ref = torch.optim.Adam(itertools.chain(ref_actor.parameters(), ref_critic.parameters()), lr=1e-2)
    _set_grads(list(actor.parameters()) + list(critic.parameters()), torch.Generator().manual_seed(1))
    _set_grads(list(ref_actor.parameters()) + list(ref_critic.parameters()), torch.Generator().manual_seed(1))
    flat.step(torch.tensor(True), max_norm=None)
    ref.step()
    assert torch.allclose(actor[0].weight, ref_actor[0].weight, rtol=1e-5, atol=1e-6)
    assert flat.step_count.item() == 1


def test_state_dict_loads_into_torch_adam_and_back() -> None:
    actor, critic = _nets()
    flat = FlatAdam([actor.parameters(), critic.parameters()], lr=3e-3)
    for s in range(3):
        _set_grads(list(actor.parameters()) + list(critic.parameters()), torch.Generator().manual_seed(s))
        flat.step(torch.tensor(True), max_norm=None)
    sd = flat.state_dict()
    ref_actor, ref_critic = copy.deepcopy(actor), copy.deepcopy(critic)
    ref = torch.optim.Adam(itertools.chain(ref_actor.parameters(), ref_critic.parameters()), lr=1.0)
    ref.load_state_dict(sd)
    assert ref.param_groups[0]["lr"] == pytest.approx(3e-3)
    # both continue identically from the same state
    _set_grads(list(actor.parameters()) + list(critic.parameters()), torch.Generator().manual_seed(9))
    _set_grads(list(ref_actor.parameters()) + list(ref_critic.parameters()), torch.Generator().manual_seed(9))
    flat.step(torch.tensor(True), max_norm=None)
    ref.step()
    assert torch.allclose(actor[2].weight, ref_actor[2].weight, rtol=1e-5, atol=1e-6)
    # and torch Adam's state loads back into a fresh FlatAdam
    fresh_actor, fresh_critic = _nets()
    fresh = FlatAdam([fresh_actor.parameters(), fresh_critic.parameters()], lr=1.0)
    fresh.load_state_dict(ref.state_dict())
    assert fresh.step_count.item() == 4 and fresh.lr.item() == pytest.approx(3e-3)
    assert torch.allclose(fresh.exp_avg, flat.exp_avg, atol=1e-7)
    with pytest.raises(ValueError, match="size"):
        fresh.load_state_dict({"state": {}, "param_groups": [{"params": [0, 1], "lr": 1.0}]})


def test_a_refused_state_leaves_the_optimizer_as_it_was() -> None:
    """A state with weight decay is refused before torch's load replaces anything: the optimizer still steps."""
    actor, critic = _nets()
    flat = FlatAdam([actor.parameters(), critic.parameters()], lr=3e-3)
    flat.step(torch.tensor(True), max_norm=None)
    state = flat.state_dict()  # torch.optim.Adam's format, with weight decay set
    state["param_groups"] = [{**group, "weight_decay": 0.1} for group in state["param_groups"]]
    with pytest.raises(ValueError, match="weight decay"):
        flat.load_state_dict(state)
    assert flat.lr.item() == pytest.approx(3e-3) and flat.adam.param_groups[0]["weight_decay"] == 0
    _set_grads(list(actor.parameters()) + list(critic.parameters()), torch.Generator().manual_seed(1))
    flat.step(torch.tensor(True), max_norm=None)  # still bound to its flat buffers
    assert flat.step_count.item() == 2


def test_adaptive_lr_directions_and_bounds() -> None:
    lr = torch.tensor(1e-3)

    def adapt(kl: float, lr: torch.Tensor = lr) -> float:
        return adaptive_lr(lr, torch.tensor(kl), desired_kl=0.01, min_lr=1e-5, max_lr=1e-2).item()

    assert adapt(0.05) == pytest.approx(1e-3 / 1.5)  # KL > 2·desired: down
    assert adapt(0.001) == pytest.approx(1e-3 * 1.5)  # 0 < KL < desired / 2: up
    assert adapt(0.01) == pytest.approx(1e-3)  # in the band: unchanged
    assert adapt(0.0) == pytest.approx(1e-3)  # KL exactly 0 (rsl_rl's guard): unchanged
    assert adapt(float("nan")) == pytest.approx(1e-3)  # a non-finite KL never moves it
    assert adapt(0.05, torch.tensor(1.2e-5)) == pytest.approx(1e-5)  # floored
    assert adapt(0.001, torch.tensor(9e-3)) == pytest.approx(1e-2)  # capped


def test_a_step_that_overflows_the_weights_is_reported_and_rolled_back() -> None:
    """A finite gradient and a finite but absurd learning rate: the step says its weights are not finite, and
    restore_unless returns everything to the snapshot."""
    actor, critic = _nets()
    flat = FlatAdam([actor.parameters(), critic.parameters()], lr=3e38)
    _set_grads(list(actor.parameters()) + list(critic.parameters()), torch.Generator().manual_seed(0))
    before = (flat.flat_param.clone(), flat.exp_avg.clone(), flat.exp_avg_sq.clone(), flat.steps.clone())
    flat.snapshot()
    finite = flat.step(torch.tensor(True), max_norm=1.0)
    assert not finite.item()
    flat.restore_unless(finite)
    after = (flat.flat_param, flat.exp_avg, flat.exp_avg_sq, flat.steps)
    assert all(torch.equal(a, b) for a, b in zip(before, after, strict=True))
    flat.lr.fill_(1e-2)
    flat.snapshot()
    ok = flat.step(torch.tensor(True), max_norm=1.0)
    flat.restore_unless(ok)
    assert ok.item() and flat.step_count.item() == 1 and not torch.equal(flat.flat_param, before[0])


def test_the_update_is_torch_adams_own_over_the_flat_buffers() -> None:
    """Adam's state tensors are views of the flat buffers: the step that moves them is the library's."""
    actor, critic = _nets()
    flat = FlatAdam([actor.parameters(), critic.parameters()], lr=1e-2)
    assert isinstance(flat.adam, torch.optim.Adam) and flat.adam.param_groups[0]["fused"]
    w = actor[0].weight
    state = flat.adam.state[w]
    assert state["exp_avg"].data_ptr() == flat.exp_avg.data_ptr()
    assert state["exp_avg_sq"].data_ptr() == flat.exp_avg_sq.data_ptr()
    assert state["step"].data_ptr() == flat.steps.data_ptr()
    _set_grads(list(actor.parameters()) + list(critic.parameters()), torch.Generator().manual_seed(0))
    flat.step(torch.tensor(True), max_norm=None)
    assert flat.exp_avg.abs().sum() > 0 and torch.equal(flat.steps, torch.ones_like(flat.steps))


@pytest.mark.parametrize("max_norm", [None, 0.5])
def test_traceable_step_matches_torch_adam_and_skips(max_norm: float | None) -> None:
    """The plain-op step that ``torch.compile`` traces (the fused kernel cannot be) against the library's."""
    actor, critic = _nets()
    traced_actor, traced_critic = copy.deepcopy(actor), copy.deepcopy(critic)
    lib = FlatAdam([actor.parameters(), critic.parameters()], lr=1e-2)
    traced = FlatAdam([traced_actor.parameters(), traced_critic.parameters()], lr=1e-2)
    for step in range(6):
        ok = torch.tensor(step != 2)  # one skipped step in the middle
        for opt, seed in ((lib, step), (traced, step)):
            _set_grads(opt.params, torch.Generator().manual_seed(seed), scale=3.0)
            if step == 2:
                opt.flat_grad[0] = float("nan")
        lib.step(ok, max_norm)
        # the compile path, outside a compile: the same clipping, then the plain-op update
        if max_norm is not None:
            coef = torch.where(ok, (max_norm / (traced.grad_norms() + 1e-6)).clamp(max=1.0), 1.0)
            for i, s in enumerate(traced.segments):
                traced.flat_grad[s].mul_(coef[i])
        traced._traceable_step(ok)
    assert torch.allclose(lib.flat_param, traced.flat_param, rtol=1e-5, atol=1e-6)
    assert torch.allclose(lib.exp_avg_sq, traced.exp_avg_sq, rtol=1e-5, atol=1e-9)
    assert lib.step_count.item() == traced.step_count.item() == 5


def test_saved_state_is_portable_to_a_plain_adam() -> None:
    """A checkpoint carries torch's default execution flags and a float lr, so rsl_rl's plain Adam steps with it."""
    actor, critic = _nets()
    flat = FlatAdam([actor.parameters(), critic.parameters()], lr=2e-3)
    _set_grads(flat.params, torch.Generator().manual_seed(0))
    flat.step(torch.tensor(True), max_norm=1.0)
    sd = flat.state_dict()
    group = sd["param_groups"][0]
    assert isinstance(group["lr"], float) and group["fused"] is None and group["capturable"] is False
    assert sd["state"][0]["exp_avg"].data_ptr() != flat.exp_avg.data_ptr()  # a copy: training on leaves it
    plain_actor, plain_critic = _nets()
    plain = torch.optim.Adam(itertools.chain(plain_actor.parameters(), plain_critic.parameters()), lr=1.0)
    plain.load_state_dict(sd)
    for p in itertools.chain(plain_actor.parameters(), plain_critic.parameters()):
        p.grad = torch.ones_like(p)
    plain.step()
    assert plain.param_groups[0]["lr"] == pytest.approx(2e-3)
