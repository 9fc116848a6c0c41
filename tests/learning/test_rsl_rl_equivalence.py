"""One PPO iteration of redline against rsl_rl 5.5.1's real ``PPO``, from the same start: the same numbers come out.

Both learners get the same initial weights and observation-normaliser statistics (rsl_rl's state loaded into
redline's models), the same rollout (observations, action noise, rewards, terminations and time-outs), the same
minibatch permutation (both draw ``randperm(T * N)`` from a generator in the same state) and the same
hyper-parameters, in fp32 on the CPU. After ``act`` x T, ``compute_returns`` and ``update`` the test compares what
each learner computed: actions, log-probs and values of the rollout, advantages and value targets, the mean losses,
the adaptive learning rate, every parameter and the normaliser statistics.

Tolerance: the two implementations compute the same formulas with different kernels (closed-form Gaussian log-prob,
KL and entropy against ``torch.distributions.Normal``; a flat-buffer Adam against the per-tensor one; moment-merged
normaliser statistics against ``torch.var``), so they agree to float32 rounding, not bitwise. One fp32 rounding is
6e-8 relative; the losses and statistics are sums of <= T * N = 128 terms of O(1) and the parameters take
``epochs x minibatches`` = 12 Adam steps, each bounded by ~lr <= 3.4e-3 (Adam's m / sqrt(v) is ~1 at most), so the
accumulated rounding stays near 1e-7 absolute (measured: 1.2e-7 at most, on the normaliser means of O(2)).
``ATOL = 1e-5`` leaves two orders of magnitude for other CPUs' reduction orders, while a drift of the maths on either
side moves the parameters by far more (measured: entropy coefficient +1 % 2.3e-5, value-loss coefficient or gradient
clip norm +1 % 1.4e-4, clip range 0.2 -> 0.21 2e-3, no time-out bootstrap 9e-3; docs/learning_parity.md).
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from rsl_rl.algorithms import PPO as RslPPO
from rsl_rl.models import MLPModel
from rsl_rl.modules import GaussianDistribution
from rsl_rl.storage import RolloutStorage as RslStorage
from tensordict import TensorDict

from redline.learning import PPO, ModelConfig, PPOConfig

T, N, A = 8, 16, 3
"""Rollout steps, envs, action dims."""
POLICY_DIM, CRITIC_DIM = 5, 7
"""Widths of the two observation groups: the actor reads ``policy``, the critic ``critic``."""
HIDDEN = (16, 16)
ALGORITHM = {
    "num_learning_epochs": 3,
    "num_mini_batches": 4,
    "clip_param": 0.2,
    "gamma": 0.99,
    "lam": 0.95,
    "value_loss_coef": 0.7,
    "entropy_coef": 0.01,
    "learning_rate": 1e-3,
    "max_grad_norm": 1.0,
    "use_clipped_value_loss": True,
    "schedule": "adaptive",
    "desired_kl": 0.01,
}
"""rsl_rl PPO arguments, the same for both learners (rsl_rl's defaults but a value-loss coefficient other than 1, so
that its use shows). Over the update's 12 steps the adaptive schedule takes both branches here: the learning rate
rises x1.5 while KL < desired / 2, holds, then falls once KL > 2 desired (1e-3 -> 3.4e-3 -> 1.5e-3 with whole-rollout
advantage normalisation)."""
ATOL = 1e-5
"""See the module docstring: fp32 rounding accumulated over one update, with an order of magnitude of room."""
PERMUTATION_SEED = 1234
"""Seeds both permutation generators (rsl_rl's: torch's global one; redline's: its own)."""


def _observations(g: torch.Generator) -> TensorDict:
    """Random observation groups, batch ``[N]``: ``policy`` ``(N, 5)``, ``critic`` ``(N, 7)``, offset and scaled
    so that the normalisers have something to learn."""
    policy = 2.0 + 3.0 * torch.randn(N, POLICY_DIM, generator=g)
    critic = -1.0 + 0.5 * torch.randn(N, CRITIC_DIM, generator=g)
    return TensorDict({"policy": policy, "critic": critic}, batch_size=[N])


def _rsl_rl_learner(obs: TensorDict, normalize_per_mini_batch: bool) -> RslPPO:
    """rsl_rl's PPO as its ``construct_algorithm`` builds it: MLPModel actor (Gaussian) and critic, RolloutStorage."""
    groups = {"actor": ["policy"], "critic": ["critic"]}
    torch.manual_seed(0)
    dist = {"class_name": GaussianDistribution, "init_std": 0.8}
    actor = MLPModel(obs, groups, "actor", A, HIDDEN, "elu", obs_normalization=True, distribution_cfg=dist)
    critic = MLPModel(obs, groups, "critic", 1, HIDDEN, "elu", obs_normalization=True)
    storage = RslStorage("rl", N, T, obs, [A], "cpu")
    return RslPPO(actor, critic, storage, normalize_advantage_per_mini_batch=normalize_per_mini_batch, **ALGORITHM)


def _redline_learner(obs: TensorDict, normalize_per_mini_batch: bool) -> PPO:
    """redline's PPO with the same hyper-parameters; rsl_rl's minibatching (one uniform permutation per update),
    fp32, no value normalisation, eager (the same switches rsl_rl has no alternative to)."""
    model = {"hidden_dims": HIDDEN, "activation": "elu", "obs_normalization": True}
    cfg = PPOConfig(
        num_steps_per_env=T,
        normalize_advantage_per_mini_batch=normalize_per_mini_batch,
        reshuffle_each_epoch=False,
        stratify_minibatches=False,
        precision="fp32",
        value_normalization=False,
        capture="off",
        actor=ModelConfig(**model, obs_groups=("policy",), init_std=0.8),
        critic=ModelConfig(**model, obs_groups=("critic",)),
        **ALGORITHM,
    )
    return PPO(obs, A, cfg, device="cpu", seed=7)


def _start_from_the_same_state(rsl: RslPPO, ours: PPO, g: torch.Generator) -> None:
    """Give both learners rsl_rl's initial weights and non-trivial normaliser statistics (one earlier batch)."""
    earlier = torch.cat([_observations(g) for _ in range(4)])
    rsl.actor.update_normalization(earlier)
    rsl.critic.update_normalization(earlier)
    with torch.no_grad():
        rsl.actor.distribution.std_param.copy_(torch.tensor([0.5, 0.8, 1.2]))  # per-dimension stds
    ours.actor.load_state_dict(rsl.actor.state_dict())  # copies into redline's flat-buffer views in place
    ours.critic.load_state_dict(rsl.critic.state_dict())


def _rollout(rsl: RslPPO, ours: PPO, g: torch.Generator) -> dict[str, torch.Tensor]:
    """Drive both learners through T env steps with the same observations, action noise and env responses.

    Action noise: rsl_rl samples ``Normal(mean, std).sample()``, which draws N(0, 1) from torch's global generator
    and scales it (``normal(0, 1) · std + mean``); redline takes the same standard normals through its
    ``action_noise`` hook, so both learners take the same actions (asserted per step).

    Returns:
        The env responses, ``rewards`` ``(T, N)``, ``dones`` and ``time_outs`` ``(T, N)`` bool.
    """
    rewards = torch.randn(T, N, generator=g)
    terminated = torch.rand(T, N, generator=g) < 0.1
    # time-outs everywhere in the rollout, the last step included, some on an env that also terminated (Isaac Lab
    # reports that step as a time-out): both bootstrap it
    time_outs = torch.rand(T, N, generator=g) < 0.15
    time_outs[T - 1, :3] = True
    time_outs[2, 5] = terminated[2, 5] = True
    dones = terminated | time_outs
    obs = _observations(g)
    with torch.inference_mode():
        for t in range(T):
            noise_seed = 100 + t
            torch.manual_seed(noise_seed)
            rsl_actions = rsl.act(obs)
            ours.action_noise = lambda s=noise_seed: torch.randn(N, A, generator=torch.Generator().manual_seed(s))
            actions = ours.act(obs)
            torch.testing.assert_close(actions, rsl_actions, atol=ATOL, rtol=0)
            nxt = _observations(g)
            extras = {"time_outs": time_outs[t], "log": {}}
            rsl.process_env_step(nxt, rewards[t], dones[t].long(), extras)
            ours.process_env_step(rewards[t], dones[t].long(), extras)
            obs = nxt
        rsl.compute_returns(obs)
        ours.compute_returns(obs)
    return {"rewards": rewards, "dones": dones, "time_outs": time_outs}


def _update_both(rsl: RslPPO, ours: PPO) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    """One ``update()`` of each, their permutation generators seeded alike: rsl_rl's storage draws
    ``torch.randperm(M · S)`` from the global generator, redline's (uniform layout) ``randperm(T · N)`` from its own;
    with M dividing T · N both are the same permutation of the flat ``t · N + n`` indices."""
    torch.manual_seed(PERMUTATION_SEED)
    rsl_losses = rsl.update()
    ours.generator.manual_seed(PERMUTATION_SEED)
    return rsl_losses, ours.update()


def _close(actual: torch.Tensor | float, expected: torch.Tensor | float, what: str) -> None:
    torch.testing.assert_close(
        torch.as_tensor(actual, dtype=torch.float32),
        torch.as_tensor(expected, dtype=torch.float32),
        atol=ATOL,
        rtol=0,
        msg=lambda m: f"{what}: {m}",
    )


@pytest.mark.parametrize("normalize_per_mini_batch", [False, True], ids=["whole_rollout", "per_minibatch"])
def test_one_update_matches_rsl_rl(normalize_per_mini_batch: bool) -> None:
    g = torch.Generator().manual_seed(3)
    obs = _observations(g)
    rsl = _rsl_rl_learner(obs, normalize_per_mini_batch)
    ours = _redline_learner(obs, normalize_per_mini_batch)
    _start_from_the_same_state(rsl, ours, g)
    env = _rollout(rsl, ours, g)
    assert env["time_outs"].any() and (env["dones"] & ~env["time_outs"]).any()  # both kinds of episode end

    # the rollout as each learner recorded it (rsl_rl keeps (T, N, 1) columns and folds the time-out bootstrap
    # γ V(s_t) into its stored rewards; redline keeps the env's rewards and bootstraps inside GAE)
    d, st = ours.storage.data, rsl.storage
    _close(d["values"], st.values.squeeze(-1), "rollout values")
    _close(d["log_probs"], st.actions_log_prob.squeeze(-1), "rollout log-probs")
    _close(d["action_mean"], st.distribution_params[0], "rollout action means")
    _close(d["action_std"], st.distribution_params[1], "rollout action stds")
    _close(d["returns"], st.returns.squeeze(-1), "value targets (GAE with time-out bootstrap)")
    _close(d["advantages"], st.advantages.squeeze(-1), "advantages")

    rsl_losses, metrics = _update_both(rsl, ours)

    assert rsl.learning_rate != ALGORITHM["learning_rate"]  # the adaptive schedule moved: the check below can fail
    _close(metrics["lr"], rsl.learning_rate, "learning rate")
    _close(metrics["value_loss"], rsl_losses["value"], "mean value loss")
    _close(metrics["surrogate_loss"], rsl_losses["surrogate"], "mean surrogate loss")
    _close(metrics["entropy"], rsl_losses["entropy"], "mean entropy")
    assert int(metrics["skipped_steps"]) == 0
    for name, model in (("actor", ours.actor), ("critic", ours.critic)):
        theirs: dict[str, Any] = getattr(rsl, name).state_dict()
        ours_state = model.state_dict()
        assert ours_state.keys() == theirs.keys()
        for key, value in ours_state.items():  # weights, the std, and the normaliser's _mean/_var/_std/count
            _close(value.float(), theirs[key].float(), f"{name}.{key}")
        assert model.obs_normalizer.count.item() == 4 * N + T * N  # the earlier batch, then the rollout's T · N
