"""The FLOP / MFU model against numbers worked out by hand."""

from __future__ import annotations

from redline.telemetry.flops import iteration_flops, layer_sizes, mlp_flops, peak_tflops, sac_iteration_flops


def test_flops_by_hand() -> None:
    assert mlp_flops([4, 32, 32, 1]) == 2 * (4 * 32 + 32 * 32 + 32 * 1)  # 2 FLOPs per multiply-add
    # 10 samples, 2 epochs: one forward each while collecting, then 2 x (forward + 2 x forward for backward)
    assert iteration_flops([4, 8, 1], [4, 8, 1], samples=10, epochs=2) == 10 * (2 * 2 * (32 + 8)) * 7
    assert peak_tflops("NVIDIA H200", bf16=True) == 989.0 and peak_tflops("cpu", bf16=False) is None
    assert peak_tflops("NVIDIA H200", bf16=False) == 67.0  # plain fp32 matmuls: no tensor cores
    assert peak_tflops("NVIDIA H200", bf16=False, tf32=True) == 494.0
    assert peak_tflops("NVIDIA H100 PCIe", bf16=True) == 756.0  # not the SXM part's peak
    assert peak_tflops("NVIDIA A10G", bf16=True) is None  # unknown rather than the A10's


def test_sac_flops_by_hand() -> None:
    actor, q = [2, 8, 2], [3, 8, 5]
    a, q1 = 2 * (16 + 16), 2 * (24 + 40)
    # 4 acted samples; batch 10: 3 critic steps (target actor + 2 target Qs + 2 Qs x 3),
    # 1 policy step (3 actor + 2 x 2 Q)
    expected = 4 * a + 10 * (3 * (a + 2 * q1 + 6 * q1) + (3 * a + 4 * q1))
    assert sac_iteration_flops(actor, q, acted=4, batch=10, gradient_steps=3, policy_steps=1) == expected


def test_sac_flop_model_matches_torchs_count_of_a_real_iteration() -> None:
    """The model against ``torch.utils.flop_counter`` on an iteration of the real learner (acting and update), with
    a policy frequency that does not divide the iteration's gradient steps."""
    from torch.utils.flop_counter import FlopCounterMode

    from redline.learning.sac import SAC, SACActorConfig, SACCriticConfig
    from tests.learning.sac.sac_support import ReachEnv, run_iteration, tiny_cfg

    cfg = tiny_cfg(
        actor=SACActorConfig(hidden_dims=(64, 64)),
        critic=SACCriticConfig(hidden_dims=(64, 64), num_atoms=51, v_min=-5.0, v_max=25.0),
        updates_per_step=3,
        policy_frequency=4,
        learning_starts=1,
    )
    env = ReachEnv(16)
    alg = SAC.from_env(env, cfg, seed=0)
    obs, _ = run_iteration(alg, env, env.get_observations())
    first = alg.gradient_steps
    with FlopCounterMode(display=False) as counter:
        run_iteration(alg, env, obs)
    end = alg.gradient_steps
    policy_steps = sum(k % 4 == 0 for k in range(first, end))
    assert (first, end, policy_steps) == (6, 12, 1)  # steps 6..11: the actor moves at 8 only
    model = sac_iteration_flops(
        layer_sizes(alg.actor.mlp), layer_sizes(alg.critic.qs[0]), 2 * 16, cfg.batch_size, end - first, policy_steps
    )
    assert abs(model / counter.get_total_flops() - 1) < 0.1, (model, counter.get_total_flops())
