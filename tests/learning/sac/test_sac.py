"""The SAC learner on a fake env: determinism, no host reads in update(), exact resume, it learns."""

from __future__ import annotations

import dataclasses
import io
import time
import warnings

import pytest
import torch

from redline.bench.shapes import negation_mirror
from redline.errors import UserError
from redline.learning.distributed import Communicator
from redline.learning.sac import SAC
from redline.learning.sac.networks import squashed_sample
from redline.learning.sac.reward_norm import RewardNormalizer
from redline.learning.sac.sac import STEP_METRICS, exploration_scales
from tests.learning.learning_support import HostReads
from tests.learning.sac.sac_support import ReachEnv, run_iteration, tiny_cfg


def train(alg: SAC, env: ReachEnv, iterations: int, obs=None):  # type: ignore[no-untyped-def]
    obs = env.get_observations() if obs is None else obs
    metrics: dict = {}
    for _ in range(iterations):
        obs, metrics = run_iteration(alg, env, obs)
    return obs, metrics


def params(alg: SAC) -> torch.Tensor:
    return torch.cat([alg.flat.flat_param, *(p.reshape(-1) for p in alg.target_qs.parameters())])


def test_same_seed_same_learner_bitwise_and_another_seed_differs() -> None:
    runs = []
    for seed in (3, 3, 4):
        env = ReachEnv(8)
        alg = SAC.from_env(env, tiny_cfg(), seed=seed)
        train(alg, env, 4)
        runs.append(params(alg))
    assert torch.equal(runs[0], runs[1])
    assert not torch.equal(runs[0], runs[2])


def test_update_waits_for_learning_starts_then_runs_steps_per_env_times_updates_per_step() -> None:
    env = ReachEnv(8)
    alg = SAC.from_env(env, tiny_cfg(learning_starts=4, num_steps_per_env=2, updates_per_step=3), seed=0)
    before = params(alg)
    _, metrics = train(alg, env, 1)  # 2 env steps stored: not yet
    assert float(metrics["gradient_steps"]) == 0.0 and torch.equal(params(alg), before)
    _, metrics = train(alg, env, 1)  # 4 stored: 2 x 3 gradient steps
    assert float(metrics["gradient_steps"]) == 6.0 and alg.gradient_steps == 6
    assert set(STEP_METRICS) <= metrics.keys()
    assert all(m.dim() == 0 and m.device == alg.device for m in metrics.values())
    assert not torch.equal(params(alg), before)


def test_update_reads_nothing_on_the_host() -> None:
    """update() hands no device value to the host (no .item(), no bool(tensor), no .tolist())."""
    env = ReachEnv(8)
    alg = SAC.from_env(env, tiny_cfg(max_grad_norm=1.0), seed=0)
    obs, _ = train(alg, env, 2)
    for _ in range(alg.cfg.num_steps_per_env):
        actions = alg.act(obs)
        obs, rewards, dones, extras = env.step(actions)
        alg.process_env_step(obs, rewards, dones, extras)
    with HostReads() as reads:
        metrics = alg.update()
    assert float(metrics["gradient_steps"]) > 0
    assert dict(reads.sites) == {}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA's sync debug mode needs a GPU")
def test_update_makes_no_cuda_sync() -> None:
    """On CUDA, update() runs under torch's sync debug mode set to raise on any synchronising call."""
    env = ReachEnv(8)
    alg = SAC.from_env(env, tiny_cfg(max_grad_norm=1.0, reward_normalization=True), device="cuda", seed=0)
    obs = env.get_observations()
    for _ in range(3):
        for _ in range(alg.cfg.num_steps_per_env):
            obs, rewards, dones, extras = env.step(alg.act(obs).cpu())
            alg.process_env_step(obs, rewards, dones, extras)
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            metrics = alg.update()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    assert float(metrics["gradient_steps"]) > 0


@pytest.mark.parametrize(("variant", "average"), [("sac", 0.0), ("td3", 0.0), ("sac", 0.1)])
def test_checkpoint_round_trip_continues_bitwise(variant: str, average: float) -> None:
    """Train 3 iterations, save (through torch.save), train 3 more; a fresh learner loaded from the save and the
    restored env continue to the same weights, replay and metrics (TD3: its per-env noise from the saved seed; with
    ``policy_average``: the deployed policy too)."""
    env = ReachEnv(8)
    alg = SAC.from_env(env, tiny_cfg(variant=variant, policy_average=average), seed=5)
    obs, _ = train(alg, env, 3)
    blob = io.BytesIO()
    torch.save(alg.state_dict(), blob)
    env_state = (env.x.clone(), env.t.clone(), env.episode.clone())
    _, m_a = train(alg, env, 3, obs)

    env2 = ReachEnv(8)
    env2.x, env2.t, env2.episode = (t.clone() for t in env_state)
    other = SAC.from_env(env2, tiny_cfg(variant=variant, policy_average=average), seed=99)  # all from the checkpoint
    blob.seek(0)
    other.load_state_dict(torch.load(blob, weights_only=True))
    _, m_b = train(other, env2, 3, env2.get_observations())
    assert torch.equal(params(alg), params(other))
    deployed = [alg.get_policy().state_dict(), other.get_policy().state_dict()]
    assert all(torch.equal(v, deployed[1][k]) for k, v in deployed[0].items())
    assert (alg.replay.data == other.replay.data).all()
    assert {k: float(v) for k, v in m_a.items()} == {k: float(v) for k, v in m_b.items()}


def test_the_deployed_policy_is_a_running_average_of_the_actor() -> None:
    """policy_average=r: after each update with gradient steps the deployed policy's weights move r of the way to
    the actor's (its normalisers are the actor's); play, export and act_inference use it; training is unchanged."""
    rate = 0.25
    runs = {}
    for average in (0.0, rate):
        env = ReachEnv(8)
        alg = SAC.from_env(env, tiny_cfg(policy_average=average, learning_starts=4), seed=2)
        expected = [p.detach().clone() for p in alg.actor.parameters()]
        obs = env.get_observations()
        for _ in range(4):  # the first iteration stores 2 steps per env: no gradient step, no average
            obs, metrics = run_iteration(alg, env, obs)
            if float(metrics["gradient_steps"]):
                torch._foreach_lerp_(expected, [p.detach() for p in alg.actor.parameters()], rate)
        runs[average] = (alg, expected, env)
    plain, (alg, expected, env) = runs[0.0][0], runs[rate]
    assert plain.get_policy() is plain.actor
    assert torch.equal(params(alg), params(plain))  # the actor learns as without the average
    policy = alg.get_policy()
    assert policy is not alg.actor
    assert all(torch.equal(p, e) for p, e in zip(policy.parameters(), expected, strict=True))
    assert all(torch.equal(p, a) for p, a in zip(policy.buffers(), alg.actor.buffers(), strict=True))
    assert not any(p.requires_grad for p in policy.parameters())
    obs = env.get_observations()
    deployed = alg.act_inference(obs)
    torch.testing.assert_close(policy(obs), deployed)
    assert not torch.equal(deployed, plain.act_inference(obs))
    # a checkpoint's actor_state_dict is the deployed policy: play loads it alone
    state = alg.state_dict()
    play = SAC.from_env(ReachEnv(8), tiny_cfg(), seed=0)
    play.load_state_dict({k: state[k] for k in ("actor_state_dict", "critic_state_dict")})
    assert torch.equal(play.act_inference(obs), deployed)


def test_a_ranks_own_state_round_trips_on_the_cpu() -> None:
    """What a data-parallel checkpoint gathers from each rank (its replay, generator, running returns) restores it."""
    env = ReachEnv(8)
    alg = SAC.from_env(env, tiny_cfg(reward_normalization=True), seed=5)
    train(alg, env, 3)
    state = alg.rank_state_dict()
    assert all(v.device.type == "cpu" for v in state["replay"]["data"].values())
    other = SAC.from_env(ReachEnv(8), tiny_cfg(reward_normalization=True), seed=6)
    other.load_rank_state_dict(state)
    assert (other.replay.data == alg.replay.data).all()
    assert (other.replay.pos, other.replay.size, other.replay.steps) == (
        alg.replay.pos,
        alg.replay.size,
        alg.replay.steps,
    )
    assert torch.equal(other.noise_generator.get_state(), alg.noise_generator.get_state())
    assert other.reward_normalizer is not None and alg.reward_normalizer is not None
    assert torch.equal(other.reward_normalizer.returns, alg.reward_normalizer.returns)


def test_checkpoint_without_replay_is_smaller_and_starts_over() -> None:
    env = ReachEnv(8)
    alg = SAC.from_env(env, tiny_cfg(save_replay=False), seed=5)
    train(alg, env, 3)
    state = alg.state_dict()
    assert state["sac"]["replay"]["data"] is None
    other = SAC.from_env(ReachEnv(8), tiny_cfg(save_replay=False), seed=5)
    other.load_state_dict(state)
    assert other.replay.size == 0
    assert torch.equal(other.flat.flat_param, alg.flat.flat_param)


@pytest.mark.parametrize("average", [0.0, 0.5])
def test_policy_exports_the_deterministic_squashed_mean(average: float) -> None:
    env = ReachEnv(4)
    actor = dataclasses.replace(tiny_cfg().actor, action_scale=2.0)
    alg = SAC.from_env(env, tiny_cfg(actor=actor, policy_average=average), seed=0)
    train(alg, env, 3)
    obs = env.get_observations()
    policy = alg.get_policy()
    expected = alg.act_inference(obs)
    assert expected.abs().max() <= 2.0
    torch.testing.assert_close(policy(obs), expected)
    torch.testing.assert_close(torch.jit.script(policy.as_jit())(obs["policy"]), expected)
    torch.testing.assert_close(policy.as_onnx(verbose=False)(obs["policy"]), expected)
    assert policy.output_std.shape == (1,) and float(policy.output_std.min()) > 0


def test_exploration_scales_are_a_pure_function_of_seed_and_global_env() -> None:
    """FastTD3's per-env noise scales: log-uniform in [low, high], each global env's own whatever the partition
    (ranks 0..3 and 4..7 draw what one process of 8 draws), another seed other factors."""
    ids = torch.arange(8)
    whole = exploration_scales(5, ids, 0.5, 3.0)
    assert whole.shape == (8, 1) and float(whole.min()) >= 0.5 and float(whole.max()) <= 3.0
    halves = [exploration_scales(5, part, 0.5, 3.0) for part in (ids[:4], ids[4:])]
    assert torch.equal(torch.cat(halves), whole)
    assert len(set(whole.flatten().tolist())) == 8 and not torch.equal(exploration_scales(6, ids, 0.5, 3.0), whole)


def test_an_envs_exploration_noise_is_scaled_by_its_factor() -> None:
    """``exploration_scale`` multiplies each env's noise before the tanh by its factor (here 2 everywhere); the
    default (1, 1) leaves SAC's actions as they were."""
    env = ReachEnv(8)
    plain, doubled = (SAC.from_env(env, tiny_cfg(exploration_scale=s), seed=3) for s in ((1.0, 1.0), (2.0, 2.0)))
    for alg in (plain, doubled):
        alg.action_noise = lambda: torch.ones(8, 1)
    obs = env.get_observations()
    mean, log_std = plain._dist.split(plain._actor_net(obs))
    for alg, factor in ((plain, 1.0), (doubled, 2.0)):
        expected, _ = squashed_sample(mean, log_std, torch.full((8, 1), factor), 1.0)
        torch.testing.assert_close(alg.act(obs), expected, rtol=0, atol=0)


def test_batch_larger_than_the_buffer_is_refused_in_one_line() -> None:
    with pytest.raises(
        UserError, match=r"^batch_size: must be at most buffer_size_per_env x envs = 4 x 8 = 32, got 64$"
    ):
        SAC.from_env(ReachEnv(8), tiny_cfg(buffer_size_per_env=4, batch_size=64))
    with pytest.raises(UserError, match=r"^critic\.obs_groups: \['privileged'\] not in"):
        SAC.from_env(ReachEnv(8), tiny_cfg(critic=dataclasses.replace(tiny_cfg().critic, obs_groups=("privileged",))))


@pytest.mark.parametrize(
    ("variant", "td3"),
    [("sac", {}), ("td3", {"exploration_std": (0.1, 0.5), "policy_noise": 0.1})],  # TD3: FastTD3's noise, wider
)
def test_it_learns_to_reach_the_target(variant: str, td3: dict) -> None:
    """On the 1-D reach env the deterministic policy ends near the target within seconds (a random one does not),
    SAC's and TD3's alike."""
    torch.manual_seed(0)
    cfg = tiny_cfg(
        variant=variant,
        num_steps_per_env=4,
        gamma=0.9,  # returns up to 10: within the critic's support [-5, 25]
        alpha_init=0.05,
        actor_learning_rate=1e-3,
        critic_learning_rate=1e-3,
        alpha_learning_rate=1e-3,
        tau=0.05,
        **td3,
    )
    env = ReachEnv(16, horizon=20)
    alg = SAC.from_env(env, cfg, seed=0)

    def distance() -> float:
        test = ReachEnv(16, horizon=20, env_id_offset=1000)
        obs = test.get_observations()
        for _ in range(15):
            obs, *_ = test.step(alg.act_inference(obs))
        return float((test.x - test.target).abs().mean())

    start = time.monotonic()
    before = distance()
    train(alg, env, 60)
    after = distance()
    assert after < 0.15 < before, (before, after)
    assert time.monotonic() - start < 30.0


def test_reward_normalisation_scales_by_the_discounted_return_spread() -> None:
    norm = RewardNormalizer(2, gamma=0.5, max_return=5.0, device=torch.device("cpu"))
    # env 0: rewards 2, 2 then done; env 1: 4, 0 → G = (2, 4), (3, 2); env 0 resets after step 2
    norm.observe(torch.tensor([2.0, 4.0]), torch.tensor([False, False]))
    norm.observe(torch.tensor([2.0, 0.0]), torch.tensor([True, False]))
    norm.update(Communicator())
    g = torch.tensor([2.0, 4.0, 3.0, 2.0])
    expected = 1.0 / max(float(g.var(correction=0).sqrt()), 4.0 / 5.0)
    assert float(norm.scale) == pytest.approx(expected)
    assert norm.returns.tolist() == [0.0, 2.0]
    # a learner with it on samples scaled rewards and resumes its statistics
    env = ReachEnv(8)
    alg = SAC.from_env(env, tiny_cfg(reward_normalization=True), seed=1)
    train(alg, env, 3)
    assert alg.reward_normalizer is not None and float(alg.reward_normalizer.scale) != 1.0
    other = SAC.from_env(ReachEnv(8), tiny_cfg(reward_normalization=True), seed=1)
    other.load_state_dict(alg.state_dict())
    assert other.reward_normalizer is not None
    assert torch.equal(other.reward_normalizer.moments, alg.reward_normalizer.moments)


def test_bf16_bodies_keep_fp32_heads_and_train() -> None:
    """Under bf16 the hidden layers run in bf16 autocast; the critic's logits (heads), targets and weights stay fp32."""
    env = ReachEnv(8)
    alg = SAC.from_env(env, tiny_cfg(precision="bf16"), seed=0)
    assert alg.precision.is_bf16
    _, metrics = train(alg, env, 3)
    assert all(bool(torch.isfinite(v)) for v in metrics.values())
    obs = env.get_observations()
    logits = alg.critic.logits(alg.critic.latent(obs), torch.zeros(8, 1), alg.precision)
    assert logits.dtype == torch.float32 and alg.flat.flat_param.dtype == torch.float32
    fp32 = alg.critic.logits(alg.critic.latent(obs), torch.zeros(8, 1), dataclasses.replace(alg.precision, mode="fp32"))
    assert not torch.equal(logits, fp32) and torch.allclose(logits, fp32, atol=0.1)


def test_a_non_finite_gradient_skips_the_step_everywhere() -> None:
    """A NaN reward poisons the sampled targets: those steps move no weight, moment or target and are counted."""
    env = ReachEnv(8)
    alg = SAC.from_env(env, tiny_cfg(), seed=0)
    obs, _ = train(alg, env, 2)
    alg.replay.data["rewards"].fill_(float("nan"))
    before = params(alg)
    optim = alg.critic_optimizer.state_dict()["state"]
    _, metrics = train(alg, env, 1, obs)  # the new step's reward is finite, the sampled windows are not
    assert float(metrics["skipped_steps"]) == float(metrics["gradient_steps"]) == 4.0
    assert torch.equal(params(alg), before)
    assert all(
        torch.equal(v, optim[i][k]) for i, s in alg.critic_optimizer.state_dict()["state"].items() for k, v in s.items()
    )


def duplicate(env, obs=None, actions=None):  # type: ignore[no-untyped-def]
    """A trivial "mirror": every sample twice (rsl_rl's data_augmentation_func contract)."""
    return (None if obs is None else torch.cat([obs, obs])), (
        None if actions is None else torch.cat([actions, actions])
    )


def test_symmetry_augmentation_trains_on_the_mirror_images_too() -> None:
    """Duplicating every sample leaves the minibatch mean, hence the update, as it was; a real mirror changes it."""
    runs = {}
    for name, mirror in (("none", None), ("duplicate", duplicate), ("negate", negation_mirror)):
        env = ReachEnv(8)
        alg = SAC.from_env(env, tiny_cfg(), seed=2)
        alg.symmetry = mirror
        train(alg, env, 3)
        runs[name] = params(alg)
    torch.testing.assert_close(runs["duplicate"], runs["none"], rtol=1e-5, atol=1e-6)
    assert not torch.allclose(runs["negate"], runs["none"], atol=1e-4)


def test_the_true_final_observation_is_stored_where_episodes_ended() -> None:
    env = ReachEnv(4)
    alg = SAC.from_env(env, tiny_cfg(), seed=0)
    obs = env.get_observations()
    reset_obs = obs.apply(lambda x: x + 100.0)
    final = obs.apply(lambda x: x - 100.0)
    dones = torch.tensor([0.0, 1.0, 1.0, 0.0])
    alg.act(obs)
    alg.process_env_step(
        reset_obs, torch.ones(4), dones, {"time_outs": torch.tensor([0, 1, 0, 1]), "final_observation": final}
    )
    stored = alg.replay.data[0]
    expected = torch.where(dones.bool().unsqueeze(-1), final["policy"], reset_obs["policy"])
    assert torch.equal(stored["next_obs", "policy"], expected)
    assert stored["dones"].tolist() == [False, True, True, False]
    assert stored["time_outs"].tolist() == [False, True, False, False]  # a time-out flag without done is no time-out
    alg.act(reset_obs)
    with pytest.warns(UserWarning, match="final_observation"):
        alg.process_env_step(reset_obs, torch.ones(4), dones, {"time_outs": torch.zeros(4)})
    alg.act(reset_obs)
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        alg.process_env_step(reset_obs, torch.ones(4), dones, {})
    assert again == []  # warned once only
    assert torch.equal(alg.replay.data[1]["next_obs", "policy"], reset_obs["policy"])
