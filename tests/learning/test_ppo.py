"""The PPO learner: rollout recording, returns, gradient accumulation, bf16 vs fp32, the NaN guard, the LR schedule."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from redline.errors import UserError
from redline.learning import PPO, ModelConfig, NonFiniteError, PPOConfig, gaussian
from redline.learning.advantages import gae, next_values
from tests.learning.learning_support import copy_rollout, flat_params, rollout, small_cfg

WIDE = ModelConfig(hidden_dims=(64, 64))


def test_act_records_the_step(make_learner) -> None:
    alg, env = make_learner()
    obs = env.get_observations()
    with torch.inference_mode():
        actions = alg.act(obs)
    st = alg.storage.data
    assert actions.shape == (16, 2) and actions.dtype == torch.float32
    assert torch.equal(st["actions"][0], actions)
    assert torch.equal(st["obs", "policy"][0], obs["policy"])
    mean = alg.act_inference(obs)
    assert torch.equal(st["action_mean"][0], mean)
    assert torch.allclose(st["log_probs"][0], gaussian.log_prob(actions, mean, alg.action_std()))
    assert torch.allclose(st["values"][0], alg.critic(obs).squeeze(-1))  # rsl_rl's own forward agrees (fp32)
    assert alg.storage.step == 0  # the step advances with the env's response


def test_process_env_step_keeps_terminated_and_truncated_apart(make_learner) -> None:
    alg, env = make_learner()
    with torch.inference_mode():
        alg.act(env.get_observations())
    dones = torch.tensor([1, 1, 0, 0] * 4)
    time_outs = torch.tensor([True, False, True, False] * 4)  # env 2: a time-out flag without done is ignored
    alg.process_env_step(torch.arange(16.0), dones, {"time_outs": time_outs})
    st = alg.storage.data
    assert st["terminated"][0].tolist() == [False, True, False, False] * 4
    assert st["truncated"][0].tolist() == [True, False, False, False] * 4
    assert torch.equal(st["rewards"][0], torch.arange(16.0)) and alg.storage.step == 1
    with torch.inference_mode():
        alg.act(env.get_observations())
    alg.process_env_step(torch.zeros(16), dones, {})  # no time_outs key: every done is a termination
    assert st["terminated"][1].tolist() == [True, True, False, False] * 4 and not st["truncated"][1].any()


def test_compute_returns_is_gae_over_the_storage(make_learner) -> None:
    alg, env = make_learner(small_cfg(value_normalization=True))
    obs = env.get_observations()
    with torch.inference_mode():
        for _ in range(alg.cfg.num_steps_per_env):
            actions = alg.act(obs)
            obs, rewards, dones, extras = env.step(actions)
            alg.process_env_step(rewards, dones, extras)
        d = alg.storage.data
        assert d["terminated"].any() or d["truncated"].any()  # the rollout crosses episode ends
        last = alg.critic(obs).squeeze(-1)  # value normaliser still at its initial identity statistics
        nxt = next_values(d["values"], last, d["truncated"], d["values"])
        adv, ret = gae(d["rewards"], d["values"], nxt, d["terminated"], d["truncated"], 0.99, 0.95)
        alg.compute_returns(obs)
    assert torch.allclose(d["returns"], ret, atol=1e-6)
    assert torch.allclose(d["advantages"], (adv - adv.mean()) / (adv.std() + 1e-8), atol=1e-5)
    # the value normaliser took the statistics of the targets
    assert torch.allclose(alg.value_normalizer.mean, ret.mean(), atol=1e-5)


def test_update_returns_device_metrics_and_changes_the_policy(make_learner) -> None:
    alg, env = make_learner()
    rollout(alg, env)
    before = flat_params(alg)
    metrics = alg.update()
    assert all(isinstance(v, torch.Tensor) and v.dim() == 0 for v in metrics.values())
    assert {"lr", "kl", "value_loss", "surrogate_loss", "entropy", "skipped_steps"} <= metrics.keys()
    assert metrics["skipped_steps"].item() == 0 and torch.isfinite(metrics["loss"])
    assert not torch.equal(before, flat_params(alg))
    assert alg.storage.step == 0  # cleared for the next rollout
    with pytest.raises(RuntimeError, match="complete rollout"):
        alg.update()


@pytest.mark.parametrize("per_minibatch", [False, True])
@pytest.mark.parametrize("micro", [2, 3, 4])
def test_gradient_accumulation_equals_one_pass(make_learner, micro: int, per_minibatch: bool) -> None:
    cfg = small_cfg(normalize_advantage_per_mini_batch=per_minibatch, value_normalization=True)
    ref, env = make_learner(cfg)
    rollout(ref, env)
    acc, _ = make_learner(dataclasses.replace(cfg, micro_batches=micro))
    copy_rollout(ref, acc)
    ref_metrics, acc_metrics = ref.update(), acc.update()
    assert torch.allclose(flat_params(acc), flat_params(ref), rtol=1e-5, atol=1e-6)
    assert torch.allclose(acc.optimizer.exp_avg_sq, ref.optimizer.exp_avg_sq, rtol=1e-4, atol=1e-10)
    for key in ("loss", "kl", "value_loss", "lr"):
        assert torch.allclose(acc_metrics[key], ref_metrics[key], rtol=1e-5, atol=1e-7), key


def _relabel(alg) -> None:
    """Recompute the stored rollout-policy outputs with ``alg``'s own forward pass, as its act() would have."""
    flat = alg.storage.flat
    with torch.no_grad():
        mean = alg.act_inference(flat["obs"])
        std = alg.action_std().expand_as(mean)
        flat["action_mean"].copy_(mean)
        flat["action_std"].copy_(std)
        flat["log_probs"].copy_(gaussian.log_prob(flat["actions"], mean, std))


def test_bf16_update_matches_fp32_within_tolerance(make_learner) -> None:
    """Same weights, same batch: bf16 bodies change the first gradient by < 1 % and the update by < 5 %."""
    # a fixed learning rate: the adaptive schedule's discrete x1.5 step can flip on a KL near its threshold, which
    # measures the threshold, not bf16's rounding (it did under rsl_rl's minibatch layout)
    cfg = small_cfg(actor=WIDE, critic=WIDE, value_normalization=True, schedule="fixed")
    fp32, env = make_learner(cfg)
    rollout(fp32, env)
    bf16, _ = make_learner(dataclasses.replace(cfg, precision="bf16"))
    copy_rollout(fp32, bf16)
    _relabel(bf16)
    batch = fp32.storage.train_view[torch.arange(64)]
    grads = []
    for alg in (fp32, bf16):
        alg.optimizer.zero_grad()
        loss, _ = alg.loss(batch)
        loss.backward()
        grads.append(alg.optimizer.flat_grad.clone())
    for seg in fp32.optimizer.segments:  # actor, critic
        g32, g16 = grads[0][seg], grads[1][seg]
        assert (g32 - g16).norm() / g32.norm() < 0.01
        assert F.cosine_similarity(g32, g16, dim=0) > 0.9999
    obs = fp32.storage.flat["obs"]
    mean0, value0 = fp32.act_inference(obs), fp32.critic(obs).squeeze(-1)
    m32, m16 = fp32.update(), bf16.update()
    d_mean32, d_mean16 = fp32.act_inference(obs) - mean0, bf16.act_inference(obs) - mean0
    d_val32, d_val16 = fp32.critic(obs).squeeze(-1) - value0, bf16.critic(obs).squeeze(-1) - value0
    assert (d_mean16 - d_mean32).norm() / d_mean32.norm() < 0.05
    assert (d_val16 - d_val32).norm() / d_val32.norm() < 0.05
    assert torch.allclose(m16["value_loss"], m32["value_loss"], rtol=1e-3)


def test_bf16_keeps_the_fp32_islands(make_learner) -> None:
    alg, env = make_learner(small_cfg(precision="bf16", actor=WIDE, critic=WIDE, value_normalization="auto"))
    assert alg.value_normalizer.enabled  # "auto": on under bf16
    seen: dict[str, set] = {"body": set(), "head_in": set(), "head_out": set()}

    def body_hook(module, inputs, output) -> None:
        seen["body"].add(output.dtype)

    def head_hook(module, inputs, output) -> None:
        seen["head_in"].add(inputs[0].dtype)
        seen["head_out"].add(output.dtype)

    for model in (alg.actor, alg.critic):
        model.mlp[0].register_forward_hook(body_hook)
        model.mlp[-1].register_forward_hook(head_hook)
    rollout(alg, env)
    st = alg.storage.data
    for key in ("action_mean", "action_std", "log_probs", "values", "advantages", "returns"):
        assert st[key].dtype == torch.float32, key
    assert seen == {"body": {torch.bfloat16}, "head_in": {torch.float32}, "head_out": {torch.float32}}
    assert all(p.dtype == torch.float32 for p in alg.actor.parameters())
    assert alg.optimizer.exp_avg.dtype == alg.optimizer.exp_avg_sq.dtype == torch.float32
    metrics = alg.update()
    # the first minibatch sees the rollout policy unchanged: the ratio must be 1 up to rounding
    assert metrics["first_ratio_dev"].item() <= 1e-3


def test_nan_reward_skips_the_iteration_and_recovers(make_learner) -> None:
    alg, env = make_learner(small_cfg(value_normalization=True))
    rollout(alg, env)
    alg.storage.data["rewards"][3, 5] = float("nan")
    with torch.inference_mode():
        alg.compute_returns(env.get_observations())  # recompute with the poisoned reward
    before, stats = flat_params(alg), alg.value_normalizer.state_dict()
    metrics = alg.update()
    assert metrics["skipped_steps"].item() == 4  # 2 epochs x 2 minibatches, all skipped
    assert torch.equal(flat_params(alg), before)
    assert all(torch.equal(v, alg.value_normalizer.state_dict()[k]) for k, v in stats.items())
    assert torch.isnan(metrics["loss"])  # no step was taken: the means are undefined
    assert alg.guard.consecutive == 1 and alg.guard.streak_quantity == "rewards"
    rollout(alg, env)
    metrics = alg.update()
    assert metrics["skipped_steps"].item() == 0 and alg.guard.consecutive == 0
    assert not torch.equal(flat_params(alg), before) and torch.isfinite(flat_params(alg)).all()


def test_nan_gradient_skips_one_step(make_learner) -> None:
    alg, env = make_learner()
    rollout(alg, env)
    calls = {"n": 0}

    def poison_second_backward(grad: torch.Tensor) -> torch.Tensor:
        calls["n"] += 1
        return torch.full_like(grad, float("nan")) if calls["n"] == 2 else grad

    alg.critic.mlp[0].weight.register_hook(poison_second_backward)
    metrics = alg.update()
    assert metrics["skipped_steps"].item() == 1
    assert alg.guard.streak_quantity == "critic gradient"
    assert torch.isfinite(flat_params(alg)).all() and torch.isfinite(alg.optimizer.exp_avg_sq).all()
    assert alg.optimizer.step_count.item() == 3  # 4 steps, one skipped


def test_raises_after_k_consecutive_skipped_iterations(make_learner) -> None:
    alg, env = make_learner(small_cfg(max_consecutive_skips=2))
    for i in range(2):
        rollout(alg, env)
        alg.storage.data["obs", "policy"][1, 2, 0] = float("inf")
        with torch.inference_mode():
            alg.compute_returns(env.get_observations())
        if i == 0:
            assert alg.update()["skipped_steps"].item() == 4
        else:
            with pytest.raises(NonFiniteError, match=r"2 consecutive iterations.*the observations"):
                alg.update()


def test_adaptive_lr_moves_in_the_right_direction(make_learner) -> None:
    for desired_kl, direction in ((1e-9, -1), (10.0, +1)):
        alg, env = make_learner(small_cfg(desired_kl=desired_kl, learning_rate=1e-3))
        rollout(alg, env)
        lr = alg.update()["lr"].item()
        assert (lr - 1e-3) * direction > 0
    fixed, env = make_learner(small_cfg(schedule="fixed", desired_kl=1e-9))
    rollout(fixed, env)
    assert fixed.update()["lr"].item() == pytest.approx(1e-3)


def test_unknown_obs_group_is_a_user_error(make_learner) -> None:
    with pytest.raises(UserError, match=r"critic\.obs_groups: \['critic'\]"):
        make_learner(small_cfg(critic=ModelConfig(hidden_dims=(8,), obs_groups=("critic",))))
    alg, env = make_learner(small_cfg(critic=ModelConfig(hidden_dims=(8,), obs_groups=("critic",))), critic_obs=True)
    rollout(alg, env)
    assert alg.storage.data["obs", "critic"].shape == (8, 16, 5)
    assert torch.isfinite(alg.update()["loss"])


def test_action_noise_from_per_env_streams_is_partition_invariant() -> None:
    """Envs 0-3 get the same sampled actions whether the learner serves 4 or 8 envs (same weights, same obs)."""
    from redline.bench.shapes import DummyVecEnv
    from redline.seeding import Domain, EnvStreams

    cfg = PPOConfig(num_steps_per_env=4, actor=ModelConfig(hidden_dims=(16,)), critic=ModelConfig(hidden_dims=(16,)))
    learners = []
    for n in (8, 4):
        env = DummyVecEnv(num_envs=n, num_obs=4, num_actions=2, seed=0)
        alg = PPO.from_env(env, cfg, "cpu", seed=n)  # different learner seeds: the streams must decide the noise
        streams = EnvStreams("per_env", 5, n, "cpu")
        streams.begin_episode()
        alg.action_noise = lambda s=streams: s.normal(None, (2,), domain=Domain.POLICY)
        learners.append(alg)
    learners[1].actor.load_state_dict(learners[0].actor.state_dict())
    learners[1].critic.load_state_dict(learners[0].critic.state_dict())
    obs = DummyVecEnv(num_envs=8, num_obs=4, num_actions=2, seed=1).get_observations()
    for _ in range(3):  # successive steps draw successive blocks of each env's stream
        a8, a4 = learners[0].act(obs), learners[1].act(obs[:4])
        assert torch.equal(a8[:4], a4)
    assert not torch.equal(a8[:4], learners[0].act_inference(obs)[:4])  # there is noise


@pytest.mark.parametrize("from_env", [True, False])
def test_env_action_noise_switch_chooses_the_noise_source(from_env: bool) -> None:
    """``env_action_noise`` (the ablation switch): on, a redline env's per-env streams give the noise; off, the
    learner's own generator does, as in rsl_rl."""
    from types import SimpleNamespace

    from redline.bench.shapes import DummyVecEnv
    from redline.seeding import EnvStreams
    from redline.seeding.plan import bind_action_noise

    env = DummyVecEnv(num_envs=4, num_obs=4, num_actions=2, seed=0)
    cfg = PPOConfig(
        env_action_noise=from_env, actor=ModelConfig(hidden_dims=(8,)), critic=ModelConfig(hidden_dims=(8,))
    )
    alg = PPO.from_env(env, cfg, "cpu", seed=0)
    streams = EnvStreams("per_env", 5, 4, "cpu")
    streams.begin_episode()
    bind_action_noise(alg, SimpleNamespace(unwrapped=SimpleNamespace(streams=streams), num_actions=2))
    assert (alg.action_noise is not None) is from_env
    before = alg.noise_generator.get_state()
    alg.act(env.get_observations())
    assert torch.equal(alg.noise_generator.get_state(), before) is from_env  # the generator drew only when off


@pytest.mark.parametrize(("reshuffle", "draws"), [(True, 3), (False, 1)])
def test_minibatch_partition_per_epoch_or_reused(make_learner, reshuffle: bool, draws: int) -> None:
    """``reshuffle_each_epoch``: a fresh partition every epoch (3 epochs: 3 draws) or rsl_rl's one per iteration,
    each epoch then visiting the very same minibatches."""
    alg, env = make_learner(small_cfg(num_learning_epochs=3, reshuffle_each_epoch=reshuffle))
    drawn: list[list[torch.Tensor]] = []
    draw = alg.storage.minibatch_indices

    def spy(*args: object, **kwargs: object) -> list[tuple[torch.Tensor, float]]:
        parts = draw(*args, **kwargs)  # type: ignore[arg-type]
        drawn.append([idx.clone() for idx, _ in parts])
        return parts

    alg.storage.minibatch_indices = spy  # type: ignore[method-assign]
    rollout(alg, env)
    alg.update()
    assert len(drawn) == draws


@pytest.mark.parametrize("stratify", [True, False])
def test_minibatch_layout_switch_reaches_the_storage(make_learner, stratify: bool) -> None:
    alg, env = make_learner(small_cfg(stratify_minibatches=stratify))
    seen: list[object] = []
    draw = alg.storage.minibatch_indices

    def spy(*args: object, **kwargs: object) -> list[tuple[torch.Tensor, float]]:
        seen.append(kwargs.get("stratified"))
        return draw(*args, **kwargs)  # type: ignore[arg-type]

    alg.storage.minibatch_indices = spy  # type: ignore[method-assign]
    rollout(alg, env)
    metrics = alg.update()
    assert seen and set(seen) == {stratify} and torch.isfinite(metrics["loss"])
