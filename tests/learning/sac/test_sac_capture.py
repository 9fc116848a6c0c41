"""SAC's captured gradient step and acting pass: one graph each with no host sync (both kinds of step, with mirror
images), the same numbers as eager, and optimizer state that moves between devices' kernels."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from redline.bench.shapes import negation_mirror
from redline.errors import UserError
from redline.learning.capture import Compiled
from redline.learning.optim import EXECUTION_FLAGS
from redline.learning.sac import SAC
from tests.learning.sac.sac_support import ReachEnv, run_iteration, tiny_cfg
from tests.learning.test_compile import one_graph


def trained(iterations: int = 2, **overrides: object) -> tuple[SAC, ReachEnv]:
    """A tiny learner after ``iterations`` (learning has started)."""
    env = ReachEnv(8)
    alg = SAC.from_env(env, tiny_cfg(**overrides), seed=3)
    obs = env.get_observations()
    for _ in range(iterations):
        obs, _ = run_iteration(alg, env, obs)
    return alg, env


def state(alg: SAC) -> torch.Tensor:
    """Weights, target critic, Adam moments and counters as one vector."""
    moments = [
        t.reshape(-1).float()
        for opt in (alg.actor_optimizer, alg.critic_optimizer, alg.alpha_optimizer)
        for entry in opt.state.values()
        for t in entry.values()
    ]
    return torch.cat([alg.flat.flat_param, alg._target_flat, *moments, alg._update_index.reshape(1).float()])


@pytest.mark.parametrize("variant", ["sac", "td3"])
def test_both_kinds_of_gradient_step_are_one_graph_and_equal_eager(variant: str) -> None:
    """A critic-only and a policy step, on minibatches with their mirror images, each trace as one graph (no host
    sync: what a CUDA graph needs), the Adam steps as plain tensor ops; four steps equal the eager learner's within
    rounding, a skipped step included. SAC's and TD3's steps alike."""
    alg, _ = trained(variant=variant)
    ref, _ = trained(variant=variant)
    alg.symmetry = ref.symmetry = negation_mirror
    call, graphs = one_graph(alg._gradient_step, backend="aot_eager")
    clean = ref.replay.data["rewards"].clone()  # the two replays hold the same transitions
    for step in range(4):
        policy = step % 2 == 0
        for learner in (alg, ref):  # step 2: NaN targets, a non-finite gradient; every optimizer and the target skip
            learner.replay.data["rewards"].copy_(torch.full_like(clean, float("nan")) if step == 2 else clean)
        before = state(ref)
        out, expected = call(policy), ref._gradient_step(policy)
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6, equal_nan=True)
        torch.testing.assert_close(state(alg), state(ref), rtol=1e-5, atol=1e-6)
        if step == 2:
            assert torch.equal(state(ref)[:-1], before[:-1])  # nothing moved but the update counter
    assert len(graphs) == 2  # one per kind of step, never a break inside one
    assert float(alg._skipped) == float(ref._skipped) == 1.0


@pytest.mark.parametrize("variant", ["sac", "td3"])
def test_the_acting_pass_is_one_graph_and_equals_eager_bitwise(variant: str) -> None:
    """What :meth:`SAC.act` captures (the actor, the squashed sample; TD3's clipped noisy action): one graph,
    eager's actions bit for bit."""
    alg, env = trained(1, variant=variant)
    obs = env.get_observations()
    groups = {g: obs[g] for g in alg._groups}
    call, graphs = one_graph(alg._policy)
    with torch.no_grad():
        for seed in range(2):  # the second call reuses the graph
            noise = torch.randn(env.num_envs, env.num_actions, generator=torch.Generator().manual_seed(seed))
            assert torch.equal(call(groups, noise), alg._policy(groups, noise))
    assert len(graphs) == 1


def test_capture_on_without_cuda_compiles_the_update() -> None:
    """``capture="on"`` on the CPU runs each gradient step through ``torch.compile`` (the graphs themselves are the
    test above: compiling them again here would only double CI's time)."""
    alg, _ = trained(0, capture="on", capture_backend="aot_eager")
    assert alg.capture_plan.kind == "compile" and isinstance(alg._train_step, Compiled)
    assert alg._train_step.fn == alg._gradient_step and alg._train_step.refused is None
    assert isinstance(alg._policy_step, Compiled) and alg._policy_step.fn == alg._policy


def test_off_and_auto_without_cuda_stay_eager() -> None:
    """``off`` is eager; ``auto`` without CUDA is eager (the CPU compile is opt-in: ``on``)."""
    for mode in ("off", "auto"):
        alg, _ = trained(0, capture=mode)
        assert alg.capture_plan.kind == "eager" and alg._train_step == alg._gradient_step
        assert alg._policy_step == alg._policy


def test_checkpoints_carry_torchs_default_kernel_switches_and_load_this_devices() -> None:
    """A checkpoint's optimizer groups have torch's default switches (a CUDA run's capturable kernels would refuse
    to step on the CPU); a learner loading one keeps its own, and its state exists before the first step."""
    alg, _ = trained()
    saved = alg.state_dict()
    for sd in (*saved["optimizer_state_dict"].values(), saved["sac"]["alpha_optimizer"]):
        for group in sd["param_groups"]:
            assert {k: group[k] for k in EXECUTION_FLAGS} == EXECUTION_FLAGS
    fresh = SAC.from_env(ReachEnv(8), tiny_cfg(), seed=3)
    assert all(fresh.critic_optimizer.state[p] for p in fresh.critic.parameters())  # made up front
    fresh.load_state_dict(saved)
    for opt in (fresh.actor_optimizer, fresh.critic_optimizer, fresh.alpha_optimizer):
        assert opt.param_groups[0]["fused"] == alg.optimizer_flags["fused"]
        assert opt.param_groups[0]["capturable"] == alg.optimizer_flags["capturable"]
    assert torch.equal(state(fresh), state(alg))


def test_capture_mode_is_checked_in_one_line() -> None:
    with pytest.raises(UserError, match=r"^capture: unknown 'always' \(valid: auto, on, off\)$"):
        dataclasses.replace(tiny_cfg(), capture="always")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device")
def test_cuda_graph_learner_equals_eager() -> None:
    """On CUDA ``auto`` replays each kind of step from a graph; the weights follow eager's within rounding."""
    runs = {}
    for mode in ("auto", "off"):
        env = ReachEnv(8)
        alg = SAC.from_env(env, tiny_cfg(capture=mode), seed=3, device="cuda")
        obs = env.get_observations()
        for _ in range(4):
            obs, _ = run_iteration(alg, env, obs)
        runs[mode] = alg
    assert runs["auto"].capture_plan.kind == "cuda_graph" and runs["auto"]._train_step.replays > 0
    assert runs["auto"]._policy_step.replays > 0
    torch.testing.assert_close(state(runs["auto"]), state(runs["off"]), rtol=1e-4, atol=1e-5)
