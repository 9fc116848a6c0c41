"""The bottleneck verdict on synthetic timings."""

from __future__ import annotations

import pytest

from redline.telemetry.verdict import verdict


@pytest.mark.parametrize(
    ("split", "kwargs", "expected"),
    [
        ({"env_s": 0.8, "inference_s": 0.1, "update_s": 0.1}, {}, ("env-bound", "more envs")),
        (
            {"env_s": 0.1, "inference_s": 0.1, "update_s": 0.8},
            {"device_type": "cuda", "precision": "fp32"},
            ("learner-bound", "--precision bf16"),
        ),
        ({"env_s": 0.1, "update_s": 0.9}, {}, ("learner-bound", "fewer learning epochs")),
        (
            {"env_s": 0.1, "update_s": 0.9},
            {"device_type": "cuda", "precision": "bf16", "gflops": 500.0, "peak": 989.0},
            ("host-overhead-bound", "--capture on"),
        ),
        ({"env_s": 0.3, "update_s": 0.3, "allreduce_s": 0.4}, {}, ("communication-bound", "fewer minibatches")),
        (
            {"env_s": 0.1, "update_s": 0.9},
            {"device_type": "cuda", "precision": "bf16", "gpu_util": 20.0},
            ("host-overhead-bound", "--capture on"),
        ),
        (
            {"env_s": 0.1, "update_s": 0.9},
            {"device_type": "cuda", "precision": "bf16", "gpu_util": 95.0},
            ("learner-bound", "fewer learning epochs"),
        ),
        (
            {"env_s": 0.8, "update_s": 0.2},
            {"device_type": "cuda", "precision": "bf16", "gpu_util": 12.0},
            ("env-bound", "the GPU is only 12 % busy"),
        ),
        ({"env_s": 0.1, "update_s": 0.9}, {"gpu_util": 5.0}, ("learner-bound", "fewer learning epochs")),  # CPU
        ({"env_s": 0.2, "update_s": 0.2, "logging_s": 0.6}, {}, ("host-overhead-bound", "logging less often")),
        (  # a CPU with bf16 units, learner-bound in fp32: try bf16
            {"env_s": 0.1, "update_s": 0.9},
            {"cpu_bf16": "avx512_bf16"},
            ("learner-bound", "--precision bf16 (this CPU has avx512_bf16 units"),
        ),
        (  # ... and already in bf16: the next thing
            {"env_s": 0.1, "update_s": 0.9},
            {"cpu_bf16": "amx_bf16", "precision": "bf16"},
            ("learner-bound", "fewer learning epochs"),
        ),
    ],
)
def test_verdict_names_each_bottleneck(split: dict, kwargs: dict, expected: tuple[str, str]) -> None:
    args = {"device_type": "cpu", "precision": "fp32", **kwargs}
    bottleneck, action = verdict(split, **args)
    assert bottleneck == expected[0] and expected[1] in action


SAC_CASES = [
    ({"env_s": 0.1, "update_s": 0.9}, {}, "learner-bound"),  # CPU, fp32, no bf16 units
    ({"env_s": 0.1, "update_s": 0.9}, {"cpu_bf16": "amx_bf16", "precision": "bf16"}, "learner-bound"),
    ({"env_s": 0.1, "update_s": 0.9}, {"device_type": "cuda", "precision": "bf16", "gpu_util": 95.0}, "learner-bound"),
    ({"env_s": 0.1, "update_s": 0.9}, {"device_type": "cuda", "precision": "bf16", "gpu_util": 20.0}, "host-overhead"),
    (
        {"env_s": 0.1, "update_s": 0.9},
        {"device_type": "cuda", "precision": "bf16", "gflops": 500.0, "peak": 989.0},
        "host-overhead",
    ),
    ({"env_s": 0.3, "update_s": 0.3, "allreduce_s": 0.4}, {}, "communication-bound"),
]


@pytest.mark.parametrize(("split", "kwargs", "expected"), SAC_CASES)
def test_sac_advice_names_sacs_knobs_not_ppos(split: dict, kwargs: dict, expected: str) -> None:
    """SAC has no epochs or minibatches: its learner-side advice names its own agent fields."""
    args = {"device_type": "cpu", "precision": "fp32", **kwargs}
    bottleneck, action = verdict(split, **args, algorithm="sac")
    assert bottleneck.startswith(expected)
    assert "agent.algorithm.updates_per_step" in action or "agent.algorithm.batch_size" in action
    for ppo_knob in ("epoch", "minibatch"):
        assert ppo_knob not in action, action
    _, ppo_action = verdict(split, **args)  # the same timings under PPO keep PPO's advice
    assert ppo_action != action


def test_sac_learner_bound_advice_names_the_critics_size() -> None:
    _, action = verdict({"env_s": 0.1, "update_s": 0.9}, device_type="cpu", precision="fp32", algorithm="sac")
    for knob in ("agent.algorithm.updates_per_step", "agent.algorithm.batch_size", "agent.critic.num_atoms"):
        assert knob in action
