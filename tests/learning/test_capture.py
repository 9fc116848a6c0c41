"""``PPOConfig.capture``: the resolved plan, the compiled learner against eager, the fallback, CUDA graphs on CUDA."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

from redline.bench.shapes import DummyVecEnv
from redline.errors import UserError
from redline.learning import PPO, PPOConfig, capture
from redline.learning.capture import CaptureWarning, Compiled, GraphReplay, resolve
from redline.learning.rollout import train_iteration
from tests.learning.learning_support import small_cfg

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.parametrize(
    ("requested", "device", "distributed", "kind"),
    [
        ("auto", "cpu", False, "eager"),
        ("auto", "cuda", False, "cuda_graph"),
        ("auto", "cuda", True, "eager"),
        ("on", "cpu", False, "compile"),
        ("on", "cuda", False, "cuda_graph"),
        ("off", "cuda", False, "eager"),
    ],
)
def test_resolve(requested: str, device: str, distributed: bool, kind: str) -> None:
    assert resolve(requested, device, distributed).kind == kind


def test_on_refused_for_data_parallel_warns_once_in_one_line() -> None:
    with pytest.warns(CaptureWarning, match=r"^capture refused for the learner, running it eagerly: data-parallel"):
        plan = resolve("on", "cuda", distributed=True)
    assert plan.kind == "eager"


def test_config_rejects_unknown_mode() -> None:
    with pytest.raises(UserError, match="capture: unknown 'always'"):
        PPOConfig(capture="always")  # type: ignore[arg-type]


def _train(cfg: PPOConfig, iterations: int, device: str = "cpu") -> tuple[PPO, list[dict[str, torch.Tensor]]]:
    env = DummyVecEnv(num_envs=16, seed=1, device=device)
    torch.manual_seed(0)
    alg = PPO.from_env(env, cfg, device=device, seed=0)
    obs, history = env.get_observations(), []
    for _ in range(iterations):
        obs, metrics = train_iteration(alg, env, obs)
        history.append({k: v.clone() for k, v in metrics.items()})
    return alg, history


def test_compiled_learner_equals_eager_within_rounding() -> None:
    """``capture="on"`` on the CPU compiles act's policy pass and the gradient step; two iterations give eager's
    parameters, learning rate and metrics within rounding."""
    cfg = small_cfg(capture="on", capture_backend="aot_eager")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureWarning)  # a refused capture would fail here
        torch._dynamo.reset()
        alg, got = _train(cfg, 2)
    ref, want = _train(dataclasses.replace(cfg, capture="off"), 2)
    assert alg.capture_plan.kind == "compile" and ref.capture_plan.kind == "eager"
    assert isinstance(alg._train_step, Compiled) and isinstance(alg._policy_step, Compiled)
    steps = cfg.num_learning_epochs * cfg.num_mini_batches * 2
    assert alg._train_step.calls == steps and alg._policy_step.calls == 2 * cfg.num_steps_per_env
    torch.testing.assert_close(alg.optimizer.flat_param, ref.optimizer.flat_param, rtol=1e-4, atol=1e-6)
    for g, w in zip(got, want, strict=True):
        for key in ("loss", "kl", "lr", "first_ratio_dev", "actor_grad_norm"):
            torch.testing.assert_close(g[key], w[key], rtol=1e-4, atol=1e-6, msg=key)


def _reads_host(x: torch.Tensor) -> torch.Tensor:
    return x * 2 if x.sum().item() > 0 else x  # a host sync: capture must refuse it


def test_compile_fallback_warns_and_runs_eagerly() -> None:
    torch._dynamo.reset()
    fn = Compiled(_reads_host, "test step", backend="eager")
    with pytest.warns(CaptureWarning, match=r"capture refused for the test step, running it eagerly: \w+"):
        out = fn(torch.ones(3))
    assert torch.equal(out, torch.full((3,), 2.0))
    assert fn.refused is not None and "\n" not in fn.refused
    assert torch.equal(fn(-torch.ones(3)), -torch.ones(3))  # later calls are eager and silent


@needs_cuda
def test_cuda_graph_learner_equals_eager() -> None:
    """On CUDA, ``capture="auto"`` records and replays the gradient step and the policy pass: eager's numbers."""
    cfg = small_cfg(capture="auto")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureWarning)
        alg, got = _train(cfg, 3, "cuda")
    ref, want = _train(dataclasses.replace(cfg, capture="off"), 3, "cuda")
    assert isinstance(alg._train_step, GraphReplay) and alg._train_step.replays > 0
    assert isinstance(alg._policy_step, GraphReplay) and alg._policy_step.replays > 0
    torch.testing.assert_close(alg.optimizer.flat_param, ref.optimizer.flat_param, rtol=1e-5, atol=1e-6)
    for g, w in zip(got, want, strict=True):
        for key in ("loss", "kl", "lr", "first_ratio_dev"):
            torch.testing.assert_close(g[key], w[key], rtol=1e-5, atol=1e-6, msg=key)


@needs_cuda
def test_cuda_graph_fallback_warns_and_runs_eagerly() -> None:
    fn = GraphReplay(_reads_host, "test step", warmup=1)
    x = torch.ones(3, device="cuda")
    assert torch.equal(fn(x), 2 * x)  # warm-up: eager
    with pytest.warns(CaptureWarning, match="capture refused for the test step"):
        assert torch.equal(fn(x), 2 * x)  # recording refused: eager
    assert fn.refused is not None


@needs_cuda
def test_cuda_graph_replays_new_inputs() -> None:
    fn = GraphReplay(lambda x, k: torch.cumsum(x, 0) * k, "test step", warmup=1)
    for i in range(4):
        x = torch.arange(5.0, device="cuda") + i
        assert torch.equal(fn(x, 3.0), torch.cumsum(x, 0) * 3.0)
    assert fn.replays == 2 and fn.refused is None


def test_make_learner_fixture_unchanged(make_learner: Callable[..., tuple[PPO, Any]]) -> None:
    """The default config resolves to eager on the CPU: the existing tests keep testing the eager path."""
    alg, _ = make_learner()
    assert alg.capture_plan.kind == "eager" and not isinstance(alg._train_step, Compiled | GraphReplay)


class _FakeGraphModule:
    """``CudaGraphModule``'s call protocol without CUDA: ``warmup - 1`` eager calls, a recording call that runs the
    function eagerly and then records (raising like the recorder when :attr:`refuse`), then replays."""

    refuse = False

    def __init__(self, module: Callable[..., Any], warmup: int) -> None:
        self.module, self._warmup, self.counter = module, warmup, 0

    def __call__(self, *args: Any) -> Any:
        if self.counter >= self._warmup:
            return self.module(*args)  # the replay
        out = self.module(*args)
        if self.counter == self._warmup - 1 and self.refuse:
            raise RuntimeError("CUDA error: operation not permitted when stream is capturing\nsecond line")
        self.counter += 1
        return out


@pytest.mark.parametrize("refuse", [False, True])
def test_graph_replay_records_per_signature_and_never_repeats_a_refused_step(
    monkeypatch: pytest.MonkeyPatch, refuse: bool
) -> None:
    """The adapter around tensordict's CudaGraphModule: one graph per argument signature; a refused recording warns
    once, answers with the recording call's own eager run (a gradient step must not be taken twice) and runs
    eagerly from then on."""
    monkeypatch.setattr(capture, "CudaGraphModule", type("Fake", (_FakeGraphModule,), {"refuse": refuse}))
    runs: list[int] = []

    def step(x: torch.Tensor, k: float) -> torch.Tensor:
        runs.append(x.numel())
        return x * k

    fn = GraphReplay(step, "test step", warmup=1)
    assert torch.equal(fn(torch.ones(3), 2.0), torch.full((3,), 2.0))  # warm-up
    if refuse:
        with pytest.warns(CaptureWarning, match="capture refused for the test step, running it eagerly: RuntimeError"):
            assert torch.equal(fn(torch.ones(3), 2.0), torch.full((3,), 2.0))
        assert runs == [3, 3] and fn.refused is not None and "\n" not in fn.refused
        fn(torch.ones(5), 2.0)
        assert runs == [3, 3, 5] and fn.replays == 0  # eager from now on, every signature
        return
    for _ in range(3):
        fn(torch.ones(3), 2.0)
    fn(torch.ones(5), 2.0)  # a new shape: a graph of its own, warming up
    fn(torch.ones(3), 3.0)  # a new scalar: likewise
    assert len(fn._graphs) == 3 and fn.replays == 2 and fn.refused is None
    assert runs == [3, 3, 3, 3, 5, 3]


def test_graph_replay_raises_what_the_step_itself_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """An error in the function (not in the recorder) is the caller's error, not a refused capture."""
    monkeypatch.setattr(capture, "CudaGraphModule", _FakeGraphModule)

    calls = [0]

    def broken_after_warmup(x: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        if calls[0] > 1:
            raise ValueError("a bug in the step")
        return x

    fn = GraphReplay(broken_after_warmup, "test step", warmup=1)
    fn(torch.ones(2))  # warm-up
    with pytest.raises(ValueError, match="a bug in the step"):
        fn(torch.ones(2))  # the recording call's eager run fails: re-raised, not a refusal
    assert fn.refused is None
