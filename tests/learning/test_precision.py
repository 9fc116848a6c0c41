"""The precision policy: resolution, bf16 bodies, fp32 heads."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from redline.errors import UserError
from redline.learning import precision
from redline.learning.precision import Precision, cpu_bf16_units, requested_precision


def test_resolve() -> None:
    assert Precision.resolve("auto", "cpu") == Precision("fp32")
    assert Precision.resolve("bf16", "cpu").is_bf16
    assert not Precision.resolve("fp32", "cpu").is_bf16
    with pytest.raises(UserError, match="valid: auto, bf16, fp32"):
        Precision.resolve("fp16", "cpu")
    with pytest.raises(UserError):
        Precision("half")  # type: ignore[arg-type]


def test_the_drop_in_reads_use_mixed_precision_as_rsl_rl_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """rsl_rl 5.5.1's ``algorithm.use_mixed_precision``: False is fp32 on a bf16-capable GPU too (not redline's
    ``auto``), True is bf16 on any device; redline's own ``algorithm.precision`` wins where set."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a bf16-capable GPU (an H100's answer)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    assert Precision.resolve("auto", "cuda:0").is_bf16  # the device answers bf16-capable
    assert Precision.for_rsl_rl(False, None, "cuda:0") == Precision("fp32")
    assert Precision.for_rsl_rl(True, None, "cuda:0") == Precision("bf16")
    assert Precision.for_rsl_rl(True, None, "cpu") == Precision("bf16")  # rsl_rl autocasts to bf16 on the CPU too
    assert Precision.for_rsl_rl(False, "auto", "cuda:0") == Precision("bf16")
    assert Precision.for_rsl_rl(True, "fp32", "cuda:0") == Precision("fp32")
    with pytest.raises(UserError, match="valid: auto, bf16, fp32"):
        Precision.for_rsl_rl(False, "fp16", "cpu")


@pytest.mark.parametrize(
    ("explicit", "mixed", "drop_in", "redline_train"),
    [
        (None, False, "fp32", None),  # the one difference: rsl_rl's False is fp32, redline train's the config's own
        (None, True, "bf16", "bf16"),
        ("auto", False, "auto", "auto"),
        ("fp32", True, "fp32", "fp32"),
    ],
)
def test_one_function_reads_use_mixed_precision_for_both_learners(
    explicit: str | None, mixed: bool, drop_in: str, redline_train: str | None
) -> None:
    """An explicit precision wins; else True is bf16; else the drop-in says fp32 and ``redline train`` keeps the
    learner config's own (``auto`` by default, docs/cli.md)."""
    assert requested_precision(explicit, mixed, "fp32") == drop_in
    assert requested_precision(explicit, mixed, None) == redline_train


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_auto_is_bf16_on_capable_cuda() -> None:
    expected = "bf16" if torch.cuda.get_device_capability(0)[0] >= 8 else "fp32"
    assert Precision.resolve("auto", "cuda:0").mode == expected


def _mlp() -> tuple[list[nn.Module], nn.Linear]:
    torch.manual_seed(0)
    return [nn.Linear(6, 32), nn.ELU(), nn.Linear(32, 32), nn.ELU()], nn.Linear(32, 3)


def test_bf16_body_fp32_head() -> None:
    body, head = _mlp()
    seen: dict[str, torch.dtype] = {}
    body[2].register_forward_hook(lambda m, i, o: seen.__setitem__("hidden", o.dtype))
    head.register_forward_hook(lambda m, i, o: seen.update(head_in=i[0].dtype, head_out=o.dtype))
    x = torch.randn(8, 6)
    out = Precision("bf16").mlp_forward(body, head, x)
    assert seen == {"hidden": torch.bfloat16, "head_in": torch.float32, "head_out": torch.float32}
    assert out.dtype == torch.float32 and head.weight.dtype == torch.float32
    # the head is a true fp32 matmul of the (bf16-rounded) hidden activation
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = x
        for layer in body:
            h = layer(h)
    assert torch.equal(out, head(h.float()))
    # and it stays fp32 inside an outer autocast region
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert Precision("bf16").mlp_forward(body, head, x).dtype == torch.float32


def test_fp32_is_the_plain_forward() -> None:
    body, head = _mlp()
    x = torch.randn(8, 6)
    assert torch.equal(Precision("fp32").mlp_forward(body, head, x), nn.Sequential(*body, head)(x))


def test_cpu_bf16_units_read_the_cpus_flags() -> None:
    """What torch's oneDNN sees agrees with the kernel's CPU flags (``lscpu``): AMX tiles first, then AVX512-BF16."""
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    expected = "amx_bf16" if "amx_bf16" in flags else "avx512_bf16" if "avx512_bf16" in flags else None
    assert cpu_bf16_units() == expected


@pytest.mark.parametrize("units", ["avx512_bf16", "amx_bf16", None])
def test_auto_on_the_cpu_is_bf16_where_the_units_and_the_widths_make_it_pay(
    monkeypatch: pytest.MonkeyPatch, units: str | None
) -> None:
    """Issue 45 item 3: on a CPU with bf16 units, ``auto`` is bf16 for the PPO learner's networks at least
    CPU_BF16_MIN_WIDTH wide (Go1 128, Ant 400: faster in bf16) and fp32 for narrower ones (Cartpole 32: slower);
    without the units, or without widths, fp32. The verdict reads the same rule."""
    monkeypatch.setattr(precision, "cpu_bf16_units", lambda: units)
    wide = Precision.resolve("auto", "cpu", cpu_widest_hidden=precision.CPU_BF16_MIN_WIDTH)
    assert wide.mode == ("bf16" if units else "fp32")
    assert precision.cpu_bf16_pays(400) == units
    assert Precision.resolve("auto", "cpu", cpu_widest_hidden=precision.CPU_BF16_MIN_WIDTH - 1) == Precision("fp32")
    assert precision.cpu_bf16_pays(32) is None
    assert Precision.resolve("auto", "cpu") == Precision("fp32")
    assert Precision.resolve("fp32", "cpu", cpu_widest_hidden=512) == Precision("fp32")  # asked for: kept


def test_the_ppo_learner_passes_its_widest_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    """``PPO`` resolves ``auto`` with its networks' widest hidden layer: the Go1's [128, 128, 128] runs bf16 on a CPU
    with bf16 units, Cartpole's [32, 32] fp32."""
    from tensordict import TensorDict

    from redline.learning.config import ModelConfig, PPOConfig
    from redline.learning.ppo import PPO

    monkeypatch.setattr(precision, "cpu_bf16_units", lambda: "avx512_bf16")
    obs = TensorDict({"policy": torch.zeros(4, 3)}, batch_size=[4])
    for width, mode in ((128, "bf16"), (32, "fp32")):
        model = ModelConfig(hidden_dims=(width, width))
        cfg = PPOConfig(num_steps_per_env=2, num_mini_batches=1, actor=model, critic=model, capture="off")
        assert PPO(obs, 2, cfg, device="cpu").precision.mode == mode


def test_the_sac_learner_passes_its_widest_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    """``SAC`` resolves ``auto`` by the same rule (session 20's Cartpole study: bf16 no worse, 0.74x wall time): its
    default [256, 256] runs bf16 on a CPU with bf16 units, [32, 32] fp32, and fp32 on a CPU without the units."""
    from tensordict import TensorDict

    from redline.learning.sac import SAC, SACActorConfig, SACConfig, SACCriticConfig

    obs = TensorDict({"policy": torch.zeros(4, 3)}, batch_size=[4])
    for units, width, mode in (("amx_bf16", 256, "bf16"), ("amx_bf16", 32, "fp32"), (None, 256, "fp32")):
        monkeypatch.setattr(precision, "cpu_bf16_units", lambda units=units: units)
        dims = (width, width)
        cfg = SACConfig(buffer_size_per_env=4, batch_size=4, actor=SACActorConfig(hidden_dims=dims),
                        critic=SACCriticConfig(hidden_dims=dims))  # fmt: skip
        assert SAC(obs, 2, cfg, device="cpu").precision.mode == mode
