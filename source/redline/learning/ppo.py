"""The redline PPO learner: rollout bookkeeping, GAE, minibatch updates with gradient accumulation, checkpoints.

Per iteration the caller runs :func:`redline.learning.rollout.train_iteration`: ``num_steps_per_env`` x
(:meth:`PPO.act` -> ``env.step`` -> :meth:`PPO.process_env_step`) in inference mode, :meth:`PPO.compute_returns`,
then :meth:`PPO.update` (0-dim device tensors; read them once).

Nothing in this loop reads a device value on the host except :meth:`PPO.update`'s single read of the NaN-guard
counters at the end of the iteration.

Data-parallel training (``comm``, :mod:`redline.learning.distributed`): every rank runs this loop on its own envs;
the minibatch partition is defined over global env ids, so rank r's minibatch m is its share of the single-process
minibatch m, and per minibatch one all-reduce sums the count-weighted gradients with the step's statistics. Ranks
then take identical steps and stay bitwise identical; N envs on one process and N/R on each of R ranks compute the
same update up to floating-point summation order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from tensordict import TensorDict

from redline.errors import UserError
from redline.learning import capture, gaussian
from redline.learning.advantages import gae, next_values
from redline.learning.config import PPOConfig
from redline.learning.distributed import Communicator
from redline.learning.from_env import FromEnv
from redline.learning.guard import NanGuard
from redline.learning.losses import entropy_bonus, explained_variance, surrogate_loss, value_loss
from redline.learning.models import (
    PrecisionNet,
    build_actor,
    build_critic,
    merge_obs_moments,
    obs_groups_of,
)
from redline.learning.moments import batch_moments, merge_moments, minibatch_stats, variance
from redline.learning.optim import FlatAdam, adaptive_lr
from redline.learning.policy_pass import EagerPolicyPass
from redline.learning.precision import Precision
from redline.learning.storage import RolloutStorage
from redline.learning.value_norm import ValueNormalizer
from redline.seeding.plan import seed_plan

STEP_METRICS = (
    "loss",
    "surrogate_loss",
    "value_loss",
    "entropy",
    "kl",
    "approx_kl",
    "clip_fraction",
    "actor_grad_norm",
    "critic_grad_norm",
)
"""Per-optimizer-step metrics; :meth:`PPO.update` returns their means over the steps taken."""
_REDUCED = len(STEP_METRICS) - 2
"""The step metrics that travel in the gradient all-reduce (all but the gradient norms, computed after it)."""


class PPO(FromEnv):
    """Proximal Policy Optimization on TensorDict batches, with a bf16 body / fp32 island precision policy."""

    def __init__(
        self,
        obs: TensorDict,
        num_actions: int,
        cfg: PPOConfig,
        device: torch.device | str = "cpu",
        seed: int = 0,
        comm: Communicator | None = None,
    ) -> None:
        """Args:
        obs: one observation TensorDict of batch size ``[N]`` (``env.get_observations()``), for shapes.
        num_actions: A.
        cfg: hyper-parameters; kept as given (frozen), never modified.
        device: where the models, the storage and the update live.
        seed: seeds the learner's generators: the minibatch partition (the same on every rank) and the action
            noise (``seed`` and the global rank). Network initialisation draws from torch's global generator, as
            rsl_rl's does; seed that before constructing (data-parallel ranks then take rank 0's weights).
        comm: the data-parallel communicator (None: a single process). All ranks must construct the learner.
        """
        self.cfg = cfg
        self.device = torch.device(device)
        self.precision = Precision.for_learner(cfg, self.device)
        obs = obs.to(self.device)
        self.num_envs = int(obs.batch_size[0])
        self.comm = comm if comm is not None else Communicator(device=self.device)
        counts = self.comm.all_gather(torch.tensor([self.num_envs], device=self.comm.device)).reshape(-1).tolist()
        self.env_offset = int(sum(counts[: self.comm.rank]))
        """Global id of this rank's env 0 (0 in one process)."""
        self.global_num_envs = int(sum(counts))
        """Envs over all ranks."""
        self.num_actions = num_actions
        groups = obs_groups_of(cfg.actor, cfg.critic)
        available = set(obs.keys())  # TensorDict has no `in`: membership goes through keys()
        for role, names in groups.items():
            missing = [g for g in names if g not in available]
            if missing:
                raise UserError(f"{role}.obs_groups: {missing} not in the env's observations {sorted(available)}")
        self.actor = build_actor(obs, groups, num_actions, cfg.actor).to(self.device)
        self.critic = build_critic(obs, groups, cfg.critic).to(self.device)
        self._actor_net = PrecisionNet(self.actor, self.precision)
        self._critic_net = PrecisionNet(self.critic, self.precision)
        self.value_normalizer = ValueNormalizer(cfg.uses_value_normalization(self.precision.is_bf16)).to(self.device)
        self.optimizer = FlatAdam(
            [self.actor.parameters(), self.critic.parameters()], lr=cfg.learning_rate, reduce_extra=_REDUCED
        )
        self.storage = RolloutStorage(
            cfg.num_steps_per_env, self.num_envs, obs, groups["actor"] + groups["critic"], num_actions, self.device
        )
        self._obs_groups = tuple(dict.fromkeys(groups["actor"] + groups["critic"]))
        """The observation groups the storage keeps (the actor's, then the critic's)."""
        self.generator = torch.Generator(device=self.device)
        """Draws the minibatch partition; in the same state on every rank."""
        seeds = seed_plan(seed, self.comm.rank)
        self.generator.manual_seed(seeds.minibatch)
        self.noise_generator = torch.Generator(device=self.device)
        """Draws the action noise when :attr:`action_noise` is None; seeded by (seed, global rank)."""
        self.noise_generator.manual_seed(seeds.noise)
        self.action_noise: Callable[[], torch.Tensor] | None = None
        """Source of the ``(N, A)`` standard-normal action noise; None: the learner's own generator. Set it to the
        env's per-env streams (``redline.seeding``, ``Domain.POLICY``) to make action sampling partition-invariant."""
        self.guard = NanGuard(cfg.max_consecutive_skips, self.device)
        self._rollout_ok = torch.ones((), dtype=torch.bool, device=self.device)
        """The rollout was finite (device bool); updated in place, as a captured step reads its address."""
        self._weights_ok = torch.ones((), dtype=torch.bool, device=self.device)
        """Every step of this update left the weights finite (device bool; else the update is rolled back)."""
        self.capture_plan = capture.resolve(cfg.capture, self.device, self.comm.distributed, cfg.capture_backend)
        """How :meth:`act`'s policy pass and each gradient step run (:mod:`redline.learning.capture`)."""
        self._policy_step = capture.wrap(self._policy, self.capture_plan, "policy inference")
        self._eager_pass = None
        """The eager rollout's lean policy pass (:mod:`redline.learning.policy_pass`), where it applies."""
        if not self.capture_plan.active and EagerPolicyPass.applies(self._actor_net, self._critic_net):
            self._eager_pass = EagerPolicyPass(self._actor_net, self._critic_net, self.value_normalizer, self.storage)
        self._train_step = capture.wrap(self._gradient_step, self.capture_plan, "gradient step")
        self._explained_variance = torch.zeros((), device=self.device)
        self._mean_reward = torch.zeros((), device=self.device)
        self.sync_replicas()

    def sync_replicas(self) -> None:
        """Make every rank hold rank 0's state: weights, optimizer moments, learning rate, normalisers (a no-op in
        a single process; called at construction and after loading a checkpoint)."""
        if not self.comm.distributed:
            return
        opt = self.optimizer
        buffers = [*self.actor.buffers(), *self.critic.buffers(), *self.value_normalizer.buffers()]
        self.comm.broadcast_([opt.flat_param, opt.exp_avg, opt.exp_avg_sq, opt.steps, opt.lr, *buffers])

    def check_replicas(self) -> None:
        """Raise :class:`~redline.learning.distributed.ReplicaDivergedError` unless all ranks hold the same
        parameters (one all-reduce; a no-op in a single process)."""
        self.comm.check_replicas(self.optimizer.flat_param)

    # ---------------------------------------------------------------------------------------------------------------
    # Rollout

    @property
    def learning_rate(self) -> torch.Tensor:
        """The current learning rate (0-dim device tensor)."""
        return self.optimizer.lr

    def action_std(self) -> torch.Tensor:
        """The policy's action std, shape ``(A,)`` (fp32)."""
        return gaussian.std_of(self.actor.distribution)

    def _values(self, obs: TensorDict) -> torch.Tensor:
        """V(s) in reward units, fp32, shape ``(B,)``."""
        return self.value_normalizer.denormalize(self._critic_net(obs).squeeze(-1))

    @torch.no_grad()
    def act(self, obs: TensorDict) -> torch.Tensor:
        """Sample actions for ``obs`` and record the step's observation, actions, log-probs, mean/std and values.

        Returns:
            actions, fp32, ``(N, A)``.
        """
        obs = obs.to(self.device)
        if self.action_noise is None:  # the policy pass draws nothing else, so drawing first gives the same numbers
            shape = (int(obs.batch_size[0]), self.num_actions)
            noise = torch.randn(shape, generator=self.noise_generator, device=self.device, dtype=torch.float32)
        else:
            noise = self.action_noise()
            noise = noise if noise.device == self.device else noise.to(self.device)
        groups = {g: obs[g] for g in self._obs_groups}
        if self._eager_pass is not None:
            if self.storage.step == 0:  # the std and the normalisers stay as they are for the whole rollout
                self._eager_pass.begin_rollout(self.action_std())
            return self._eager_pass(groups, noise)
        return self._act_with_noise(groups, noise)

    def _act_with_noise(self, obs: Mapping[str, torch.Tensor], noise: torch.Tensor) -> torch.Tensor:
        """:meth:`act` after the noise draw: the (captured) policy pass, then the storage write.

        Args:
            obs: the stored observation groups, each ``(N, *group_shape)``.
            noise: standard normals, ``(N, A)``.
        """
        actions, mean, std, log_probs, values = self._policy_step(obs, noise)
        self.storage.record_policy(
            obs, actions=actions, action_mean=mean, action_std=std, log_probs=log_probs, values=values
        )
        return actions  # a replay's outputs are already the caller's own (CudaGraphModule clones them)

    def _policy(
        self, obs: Mapping[str, torch.Tensor], noise: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The policy pass of one env step, free of host syncs: ``(actions, mean, std, log_probs, values)``, fp32,
        shapes ``(N, A)`` x 3, ``(N,)`` x 2; ``noise`` ``(N, A)`` is the standard-normal draw."""
        mean = self._actor_net(obs)  # type: ignore[arg-type]  # get_latent only indexes obs by group name
        std = self.action_std().expand_as(mean)
        # a = μ + σ ε
        actions = gaussian.sample(mean, std, noise=noise)
        return actions, mean, std, gaussian.log_prob(actions, mean, std), self._values(obs)  # type: ignore[arg-type]

    @torch.no_grad()
    def act_inference(self, obs: TensorDict) -> torch.Tensor:
        """Deterministic actions (the policy mean), without recording anything."""
        return self._actor_net(obs.to(self.device))

    @torch.no_grad()
    def process_env_step(self, rewards: torch.Tensor, dones: torch.Tensor, extras: Mapping[str, Any]) -> None:
        """Record the env's response to the last :meth:`act`.

        Args:
            rewards: ``(N,)``.
            dones: ``(N,)``, nonzero where the episode ended (terminated or timed out), as Isaac Lab returns it.
            extras: the env's extras; ``extras["time_outs"]`` (``(N,)`` bool) marks time-outs. A done env that did
                not time out terminated; a time-out bootstraps from the value function in :meth:`compute_returns`.
                (Isaac Lab cannot tell a step that both terminated and timed out from a time-out: such a step
                bootstraps, as in rsl_rl.)
        """
        slot = self.storage.slot()
        done = self._flat(dones) != 0
        time_outs = extras.get("time_outs")
        if time_outs is not None:
            torch.logical_and(self._flat(time_outs), done, out=slot["truncated"])
            torch.gt(done, slot["truncated"], out=slot["terminated"])  # done and not truncated
        else:
            slot["truncated"].zero_()
            slot["terminated"].copy_(done)
        slot["rewards"].copy_(self._flat(rewards))  # in the storage's fp32
        self.storage.advance()

    def _flat(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` on the learner's device as a vector (no op where it already is one)."""
        x = x if x.device == self.device else x.to(self.device)
        return x if x.dim() == 1 else x.reshape(-1)

    @torch.no_grad()
    def compute_returns(self, last_obs: TensorDict) -> None:
        """GAE over the finished rollout (fp32), value-normaliser update, advantage normalisation.

        Args:
            last_obs: the observation after the rollout's last step, batch ``[N]``.
        """
        st = self.storage
        if not st.full:
            raise RuntimeError(f"compute_returns after {st.step} of {st.num_steps} rollout steps")
        d = st.data
        values, rewards = d["values"], d["rewards"]
        last_values = self._values(last_obs.to(self.device))
        # a time-out bootstraps from V(s_t): Isaac Lab returns the reset observation, not the final one
        nxt = next_values(values, last_values, d["truncated"], bootstrap_values=values)
        advantages, returns = gae(rewards, values, nxt, d["terminated"], d["truncated"], self.cfg.gamma, self.cfg.lam)
        finite_obs = torch.stack([torch.isfinite(x).all() for x in d["obs"].values()]).all()
        finite_values = torch.isfinite(values).all() & torch.isfinite(last_values).all()
        nonfinite = torch.stack((~finite_obs, ~torch.isfinite(rewards).all(), ~finite_values))
        # the whole batch's statistics: every rank's (flags, return moments, advantage moments), merged in rank order
        local = torch.cat((nonfinite.float(), batch_moments(returns), batch_moments(advantages)))
        shares = self.comm.all_gather(local.to(self.comm.device)).to(self.device)
        self._rollout_ok.copy_(self.guard.check(shares[:, :3].amax(0) > 0, first="observations"))
        merged = self.value_normalizer.update(merge_moments(shares[:, 3:6]), self._rollout_ok)
        # normalised targets from overflowed statistics would poison every step: the iteration skips its steps
        self._rollout_ok.copy_(self._rollout_ok & self.guard.check(~merged.reshape(1), "value normaliser statistics"))
        d["returns"].copy_(returns)
        if not self.cfg.normalize_advantage_per_mini_batch:
            adv = merge_moments(shares[:, 6:9])
            # Â = (A − mean) / (std + 1e-8), over the whole batch of every rank (rsl_rl's normalisation)
            advantages = (advantages - adv[1]) / (variance(adv, correction=1).sqrt() + 1e-8)
        d["advantages"].copy_(advantages)
        self._explained_variance = explained_variance(values, returns)
        self._mean_reward = rewards.mean()

    # ---------------------------------------------------------------------------------------------------------------
    # Update

    def loss(self, batch: TensorDict, advantages: torch.Tensor | None = None) -> tuple[torch.Tensor, dict]:
        """The PPO loss of a batch of stored transitions (a slice of ``storage.flat``), with gradients.

        Args:
            batch: transitions, batch ``[B]``, with the storage's keys.
            advantages: advantages to use instead of ``batch["advantages"]`` (per-minibatch normalised ones).

        Returns:
            ``(loss, metrics)``: the scalar loss surrogate + c_v · value − c_e · entropy (fp32), and 0-dim detached
            metrics (``surrogate_loss``, ``value_loss``, ``entropy``, ``kl``, ``approx_kl``, ``clip_fraction``,
            ``ratio_dev_max`` = max |ratio − 1|, ``loss``).
        """
        cfg = self.cfg
        obs = batch["obs"]
        mean = self._actor_net(obs)
        std = self.action_std()
        log_prob = gaussian.log_prob(batch["actions"], mean, std)
        adv = batch["advantages"] if advantages is None else advantages
        surrogate, surrogate_metrics = surrogate_loss(log_prob, batch["log_probs"], adv, cfg.clip_param)
        values = self._critic_net(obs).squeeze(-1)  # normalised units when value normalisation is on
        vn = self.value_normalizer
        clip = cfg.clip_param if cfg.use_clipped_value_loss else None
        v_loss, _ = value_loss(values, vn.normalize(batch["values"]), vn.normalize(batch["returns"]), clip)
        ent_loss, entropy_metrics = entropy_bonus(gaussian.entropy(std))
        loss = surrogate + cfg.value_loss_coef * v_loss + cfg.entropy_coef * ent_loss
        with torch.no_grad():
            kl = gaussian.kl(batch["action_mean"], batch["action_std"], mean, std).mean()
            ratio_dev = (log_prob - batch["log_probs"]).exp().sub(1.0).abs().max()
        metrics = {
            "loss": loss.detach(),
            "surrogate_loss": surrogate.detach(),
            "value_loss": v_loss.detach(),
            "kl": kl,
            "ratio_dev_max": ratio_dev,
            **surrogate_metrics,
            **entropy_metrics,
        }
        return loss, metrics

    def update(self) -> dict[str, torch.Tensor]:
        """Run the epochs x minibatches (x micro-batches) of optimizer steps over the stored rollout.

        Returns:
            0-dim device tensors: the means over the steps taken of :data:`STEP_METRICS` (NaN when every step was
            skipped), ``lr`` (after the iteration), ``skipped_steps``, ``explained_variance`` and ``mean_reward``
            of the rollout, ``first_ratio_dev`` (max |ratio − 1| on the first minibatch, ~0 when the fp32 islands
            hold).

        Raises:
            NonFiniteError: ``max_consecutive_skips`` iterations in a row skipped steps on NaN/Inf.
        """
        cfg, st, opt = self.cfg, self.storage, self.optimizer
        if not st.full:
            raise RuntimeError("update before a complete rollout and compute_returns")
        opt.bind_grads()
        opt.snapshot()  # an update that overflows the weights rolls back to here
        self._weights_ok.fill_(True)
        sums = torch.zeros(len(STEP_METRICS), device=self.device)
        steps_taken = torch.zeros((), device=self.device)
        first_ratio_dev = None
        minibatches, adv_stats = [], None
        for epoch in range(cfg.num_learning_epochs):
            if epoch == 0 or cfg.reshuffle_each_epoch:  # else: the first epoch's partition again (rsl_rl)
                minibatches = st.minibatch_indices(
                    cfg.num_mini_batches,
                    self.generator,
                    self.env_offset,
                    self.global_num_envs,
                    stratified=cfg.stratify_minibatches,
                )
                per_mb = cfg.normalize_advantage_per_mini_batch
                adv = self.storage.flat["advantages"]
                adv_stats = minibatch_stats(adv, [i for i, _ in minibatches], self.comm) if per_mb else None
            for m, (indices, share) in enumerate(minibatches):
                step, ok, ratio_dev = self._train_step(indices, share, None if adv_stats is None else adv_stats[m])
                first_ratio_dev = ratio_dev.clone() if first_ratio_dev is None else first_ratio_dev
                sums += torch.where(ok, step, 0.0)
                steps_taken += ok.float()
        opt.restore_unless(self._weights_ok)  # no checkpoint ever holds an overflowed weight
        self._update_obs_normalizers()
        skipped = self.guard.skipped.clone()
        self.guard.end_iteration()  # the update's host read (1 of 3 per iteration); raises on a streak of skips
        st.clear()
        assert first_ratio_dev is not None  # an iteration has at least one minibatch
        metrics = dict(zip(STEP_METRICS, (sums / steps_taken).unbind(), strict=True))
        metrics.update(
            lr=opt.lr.clone(),
            skipped_steps=skipped,
            explained_variance=self._explained_variance,
            mean_reward=self._mean_reward,
            first_ratio_dev=first_ratio_dev,
        )
        return metrics

    def _gradient_step(
        self, indices: torch.Tensor, share: float = 1.0, adv_stats: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One optimizer step on the minibatch ``indices`` (into ``storage.flat``), accumulated over micro-batches.

        Args:
            indices: this rank's share of the minibatch (may be empty on a rank).
            share: the share's size / the global minibatch size (1 in a single process).
            adv_stats: ``(mean, std)`` of the global minibatch's advantages, to normalise them per minibatch.

        Returns:
            ``(metrics, ok, ratio_dev)``: the step's :data:`STEP_METRICS` as one vector, whether the step was taken
            (device bool, the same on every rank), and max |ratio − 1| over this rank's share.
        """
        cfg, st, opt = self.cfg, self.storage, self.optimizer
        opt.zero_grad()
        step = opt.reduce_extra  # the step's statistics travel with the gradient in one all-reduce
        step.zero_()
        ratio_dev = torch.zeros((), device=self.device)
        # a rank's share may be smaller than micro_batches: splitting finer never changes the sum
        parts = st.micro_batches(indices, min(cfg.micro_batches, indices.numel())) if indices.numel() else []
        for micro, weight in parts:
            batch = st.train_view[micro]
            adv = None if adv_stats is None else (batch["advantages"] - adv_stats[0]) / (adv_stats[1] + 1e-8)
            loss, m = self.loss(batch, adv)
            # weight · share = micro size / global minibatch size: the gradients of all micro-batches of all ranks
            # add up to the gradient of the global minibatch mean
            (loss * (weight * share)).backward()
            step += (weight * share) * torch.stack([m[k] for k in STEP_METRICS[:_REDUCED]])
            ratio_dev = torch.maximum(ratio_dev, m["ratio_dev_max"])
        if self.comm.distributed:
            reduced = opt.reduce_buffer
            if reduced.device != self.comm.device:
                reduced = reduced.to(self.comm.device)
            self.comm.all_reduce_(reduced)  # Σ over ranks; a NaN on any rank reaches every rank
            if reduced is not opt.reduce_buffer:
                opt.reduce_buffer.copy_(reduced)
        norms = opt.grad_norms()
        step = torch.cat((step, norms))
        if cfg.schedule == "adaptive":
            kl = step[STEP_METRICS.index("kl")]
            opt.lr.copy_(adaptive_lr(opt.lr, kl, cfg.desired_kl, cfg.min_learning_rate, cfg.max_learning_rate))
        nonfinite = torch.cat((~torch.isfinite(step[:1]), ~torch.isfinite(norms)))  # loss, actor/critic gradient
        ok = self.guard.check(nonfinite, first="loss") & self._rollout_ok
        finite = opt.step(ok, cfg.max_grad_norm, norms)  # finite gradients can still overflow the weights
        self._weights_ok.copy_(self._weights_ok & finite)
        ok = ok & self.guard.check(~finite.reshape(1), first="updated weights")
        self.guard.count_step(ok)
        return step, ok, ratio_dev

    @torch.no_grad()
    def _update_obs_normalizers(self) -> None:
        """Merge the rollout's observations into the models' normalisers (rsl_rl's order: after the update);
        a non-finite rollout leaves them unchanged."""
        models = [model for model in (self.actor, self.critic) if model.obs_normalization]
        if models:
            for merged in merge_obs_moments(models, self.storage.flat["obs"], self.comm, self._rollout_ok):
                # statistics that would overflow are not merged; the iteration counts as one that skipped
                self.guard.count_step(self.guard.check(~merged.reshape(1), first="observation normaliser statistics"))

    # ---------------------------------------------------------------------------------------------------------------
    # Checkpoints

    def state_dict(self) -> dict[str, Any]:
        """Everything to resume: rsl_rl's keys plus redline's extras (``weights_only``-loadable).

        rsl_rl keys: ``actor_state_dict``, ``critic_state_dict``, ``optimizer_state_dict`` (torch Adam format; the
        caller adds ``iter`` and ``infos``). Extras: ``value_normalizer_state_dict``, ``value_normalization``,
        ``rng_state`` (the learner generators), ``learning_rate``, ``nan_guard``, ``precision``. Tensors are copies:
        training on does not change a state dict already taken.
        """
        return {
            "actor_state_dict": {k: v.detach().clone() for k, v in self.actor.state_dict().items()},
            "critic_state_dict": {k: v.detach().clone() for k, v in self.critic.state_dict().items()},
            "optimizer_state_dict": self.optimizer.state_dict(),
            "value_normalizer_state_dict": {k: v.clone() for k, v in self.value_normalizer.state_dict().items()},
            "value_normalization": self.value_normalizer.enabled,
            "rng_state": {"generator": self.generator.get_state(), "noise_generator": self.noise_generator.get_state()},
            "learning_rate": float(self.optimizer.lr),
            "nan_guard": self.guard.state_dict(),
            "precision": self.precision.mode,
        }

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> None:
        """Restore :meth:`state_dict`; an rsl_rl checkpoint (no extras) loads its models and optimizer only."""
        enabled = state.get("value_normalization")
        if enabled is not None and bool(enabled) != self.value_normalizer.enabled:
            raise UserError(
                f"value_normalization: the checkpoint's critic was trained with it {'on' if enabled else 'off'}; "
                f"set value_normalization={bool(enabled)} to resume it"
            )
        self.actor.load_state_dict(state["actor_state_dict"], strict=strict)
        self.critic.load_state_dict(state["critic_state_dict"], strict=strict)
        if "optimizer_state_dict" in state:
            self.optimizer.load_state_dict(state["optimizer_state_dict"])
        if "value_normalizer_state_dict" in state:
            self.value_normalizer.load_state_dict(state["value_normalizer_state_dict"])
        if "rng_state" in state:
            self.generator.set_state(state["rng_state"]["generator"].cpu())
            if "noise_generator" in state["rng_state"] and self.comm.rank == 0:  # other ranks keep their own seed
                self.noise_generator.set_state(state["rng_state"]["noise_generator"].cpu())
        if "nan_guard" in state:
            self.guard.load_state_dict(state["nan_guard"])
        self.optimizer.bind_grads()
        self.sync_replicas()
