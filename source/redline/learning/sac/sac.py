"""The off-policy learner: SAC (or FastTD3's TD3) with a C51 clipped double-Q critic on a TensorDict replay,
data-parallel.

``SACConfig.variant="td3"`` swaps the policy side only: a deterministic actor explored with per-env Gaussian
noise, target actions smoothed by clipped noise, the actor loss ``-min_i Q_i`` and no temperature
(:mod:`.sac_losses`); everything below holds for both.

Per iteration the caller runs ``num_steps_per_env`` x (:meth:`SAC.act` -> ``env.step`` -> :meth:`SAC.process_env_step`),
then :meth:`SAC.update`: the observation normalisers take the iteration's observations, then
``num_steps_per_env * updates_per_step`` gradient steps run (none before ``learning_starts``). A gradient step samples
the global minibatch's share of this rank's envs (:mod:`.replay`), computes the critic loss against the projected
soft n-step target and, every ``policy_frequency``-th step, the actor and temperature losses; the gradients of all
three travel in one flat buffer through one all-reduce, then each network takes its own Adam step and the target
critic follows by Polyak averaging. The actor's loss reads the critic before this step's critic update (one step
stale, the price of one all-reduce per step).

Nothing in :meth:`SAC.update` reads a device value on the host: the step's branching (policy step or not, learning
started or not) follows host counters, the sampled indices and the exploration noise of the update come from
counter-based Philox draws on the device, and the metrics are returned as 0-dim device tensors.

Each gradient step (:meth:`SAC._gradient_step`) is captured as PPO's is (:mod:`redline.learning.capture`,
``SACConfig.capture``): for each value of its one host argument (a policy step or a critic-only step) it runs a
fixed sequence of kernels on tensors at fixed addresses (the replay, the flat parameter / gradient / target buffers,
the update counter, the skip flag), so on CUDA it is recorded as two graphs and replayed (``capturable=True``
optimizers); elsewhere ``capture="on"`` compiles it (``torch.compile``, the optimizers' steps as plain tensor ops).
A data-parallel learner runs eagerly (the all-reduce sits inside the step). :meth:`SAC.act`'s acting pass (actor and
squashed sample, after the noise draw) is captured the same way, as PPO's policy pass is.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import torch
from rsl_rl.models import MLPModel
from rsl_rl.utils import resolve_callable
from tensordict import TensorDict
from torch import nn

from redline.errors import UserError
from redline.learning import capture
from redline.learning.distributed import Communicator
from redline.learning.flat_params import FlatParams
from redline.learning.from_env import FromEnv
from redline.learning.models import PrecisionNet, merge_obs_moments
from redline.learning.optim import EXECUTION_FLAGS, adam_step, init_adam_state
from redline.learning.precision import Precision
from redline.learning.sac import sac_checkpoint
from redline.learning.sac.networks import DistributionalCritic, TanhGaussian, build_actor, squashed_sample
from redline.learning.sac.replay import ReplayBuffer, philox_key
from redline.learning.sac.reward_norm import RewardNormalizer
from redline.learning.sac.sac_config import SACConfig
from redline.learning.sac.sac_losses import (
    actor_loss,
    categorical_projection,
    clipped_double_q_target,
    critic_loss,
    deterministic_actions,
    deterministic_actor_loss,
    smoothed_target_actions,
    temperature_loss,
)
from redline.seeding.philox import MASK32, philox4x32, to_unit_float
from redline.seeding.plan import seed_plan

STEP_METRICS = ("critic_loss", "q_mean", "actor_loss", "alpha_loss", "entropy")
"""Per-gradient-step statistics that travel in the gradient all-reduce (the actor's on policy steps only)."""
_CRITIC_METRICS = 2
"""The first :data:`STEP_METRICS` are the critic's (every step); the others the actor's (policy steps)."""
NEXT_ACTION_NOISE, ACTION_NOISE = 0, 1
"""The update's two rows of noise per sample (:meth:`.replay.ReplayBuffer.draw`): the target's next action, the
actor loss's action."""


def standalone_copy[ModuleT: nn.Module](module: ModuleT) -> ModuleT:
    """A deep copy of ``module`` whose parameters have storage of their own (not views of a :class:`FlatParams`
    buffer) and no gradients."""
    clone = copy.deepcopy(module)
    for p in clone.parameters():
        p.data, p.grad = p.data.clone(), None
    return clone.requires_grad_(False)


def request_final_observation(env: Any) -> None:
    """Ask a redline task for each step's true final observation (``extras["final_observation"]``, its
    ``final_observation`` config switch); other envs give none (SAC then bootstraps time-outs from the reset
    observation, and says so once)."""
    cfg = getattr(getattr(env, "unwrapped", env), "cfg", None)
    if cfg is not None and hasattr(cfg, "final_observation"):
        cfg.final_observation = True


def bind_symmetry(learner: SAC, env: Any, algorithm_cfg: Mapping[str, Any]) -> None:
    """rsl_rl's ``algorithm.symmetry_cfg`` (a dict, or None) on the off-policy learner: with
    ``use_data_augmentation`` every minibatch trains on itself and its mirror images (:attr:`SAC.symmetry`, handed
    ``env``); a mirror loss, or a function that cannot be found, is refused in one line (SAC's update has no mirror
    loss)."""
    symmetry = algorithm_cfg.get("symmetry_cfg")
    if not symmetry:
        return
    if symmetry.get("use_mirror_loss"):
        raise UserError("algorithm.symmetry_cfg.use_mirror_loss: not taken by the off-policy learner (valid: "
                        "False; use_data_augmentation=True augments its minibatches)")  # fmt: skip
    if symmetry.get("use_data_augmentation"):
        func = symmetry.get("data_augmentation_func")
        try:
            func = resolve_callable(func) if isinstance(func, str) else func
        except (ImportError, AttributeError, ValueError) as exc:
            func = exc
        if not callable(func):
            raise UserError(
                f"algorithm.symmetry_cfg.data_augmentation_func: expected a function or 'module:function', got "
                f"{symmetry.get('data_augmentation_func')!r}" + (f" ({func})" if isinstance(func, Exception) else "")
            )
        _try_mirror(func, learner, env)
        learner.symmetry = func
        learner.symmetry_env = env


def _try_mirror(func: Callable[..., Any], learner: SAC, env: Any) -> None:
    """Mirror one all-zero sample of the replay's shapes (no env call: nothing is drawn), so that a mirror that does
    not fit this task (another robot, an observation it does not know) is one line before training, not a traceback
    at the first gradient step."""
    obs = learner.replay.data["obs"][0][:1]
    actions = torch.zeros(1, learner.num_actions, device=learner.device)
    try:
        mirrored, mirrored_actions = func(env=env, obs=obs, actions=actions)
        if mirrored_actions.shape[0] != mirrored.batch_size[0]:
            raise ValueError("observations and actions come back in different numbers")
    except (ValueError, KeyError, IndexError, RuntimeError, TypeError, AttributeError) as exc:
        line = " ".join(str(exc).split())[:300]
        raise UserError(
            f"algorithm.symmetry_cfg.data_augmentation_func: {getattr(func, '__name__', func)!s} cannot mirror this "
            f"task's observations ({type(exc).__name__}: {line}); use one made for this robot, or leave "
            "use_data_augmentation False"
        ) from None


def _env_uniform(seed: int, global_ids: torch.Tensor, lane: int) -> torch.Tensor:
    """``(N,)`` fp32 uniforms in [0, 1), one per global env id: Philox under the run's minibatch key at counter
    (2^32 - 1, id, 0, lane), an update index the minibatch draws never reach."""
    zeros = torch.zeros_like(global_ids)
    counter = torch.stack((zeros + MASK32, global_ids, zeros, zeros + lane), -1)
    return to_unit_float(philox4x32(counter, philox_key(seed))[:, 0])


def exploration_scales(seed: int, global_ids: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """Each env's factor on its exploration noise, ``(N, 1)`` fp32, log-uniform in [low, high]: a pure function of
    (seed, global env id) (lane 1 of :func:`_env_uniform`)."""
    u = _env_uniform(seed, global_ids, 1)
    return (low * torch.exp(u * math.log(high / low))).unsqueeze(-1)  # s = low · (high / low)^u


def exploration_stds(seed: int, global_ids: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """TD3: each env's exploration noise std ``(N, 1)`` fp32 [fraction of the action bound], uniform in [low, high]:
    a pure function of (seed, global env id) (lane 2 of :func:`_env_uniform`)."""
    u = _env_uniform(seed, global_ids, 2)
    return (low + (high - low) * u).unsqueeze(-1)  # σ = low + (high − low) u


class SAC(FromEnv):
    """SAC with a C51 clipped double-Q critic on a TensorDict replay, data-parallel, no host reads in update().

    Args:
        obs: one observation TensorDict of batch size ``[N]`` (``env.get_observations()``), for shapes.
        num_actions: A.
        cfg: hyper-parameters; kept as given (frozen).
        device: where the networks, the replay and the update live.
        seed: seeds the initial weights (the same on every rank, without touching torch's global generator), the
            minibatch and update-noise draws (the same on every rank: counter-based, keyed by it) and the
            exploration noise (``seed`` and the global rank, when :attr:`action_noise` is None).
        comm: the data-parallel communicator (None: a single process). All ranks must construct the learner.
    """

    def __init__(
        self,
        obs: TensorDict,
        num_actions: int,
        cfg: SACConfig,
        device: torch.device | str = "cpu",
        seed: int = 0,
        comm: Communicator | None = None,
    ) -> None:
        self.cfg = cfg
        self.device = torch.device(device)
        self.precision = Precision.for_learner(cfg, self.device)
        obs = obs.to(self.device)
        self.num_envs = int(obs.batch_size[0])
        self.num_actions = num_actions
        self.comm = comm if comm is not None else Communicator(device=self.device)
        counts = self.comm.all_gather(torch.tensor([self.num_envs], device=self.comm.device)).reshape(-1).tolist()
        self.env_offset = int(sum(counts[: self.comm.rank]))
        """Global id of this rank's env 0 (0 in one process)."""
        self.global_num_envs = int(sum(counts))
        """Envs over all ranks."""
        cfg.check_envs(self.global_num_envs)
        available = set(obs.keys())
        for role, names in (("actor", cfg.actor.obs_groups), ("critic", cfg.critic.obs_groups)):
            missing = [g for g in names if g not in available]
            if missing:
                raise UserError(f"{role}.obs_groups: {missing} not in the env's observations {sorted(available)}")
        seeds = seed_plan(seed, self.comm.rank)
        with torch.random.fork_rng(devices=[self.device] if self.device.type == "cuda" else []):
            torch.manual_seed(seeds.torch)
            self.actor = build_actor(obs, num_actions, cfg.actor, cfg.obs_normalization).to(self.device)
            self.critic = DistributionalCritic(obs, num_actions, cfg.critic, cfg.obs_normalization).to(self.device)
        self.target_qs = copy.deepcopy(self.critic.qs).requires_grad_(False)
        """The target critic's two Q networks (the critic's observation normaliser serves both)."""
        self.log_alpha = nn.Parameter(torch.tensor(math.log(cfg.alpha_init), device=self.device))
        self.target_entropy = float(-num_actions if cfg.target_entropy is None else cfg.target_entropy)
        self.flat = FlatParams(
            [self.actor.parameters(), self.critic.parameters(), [self.log_alpha]], reduce_extra=len(STEP_METRICS)
        )
        """Actor, critic and log alpha as views of one flat buffer (segments 0, 1, 2); one all-reduce per step."""
        self._frozen_qs = copy.deepcopy(self.critic.qs).requires_grad_(False)
        """The critic's Q networks without gradients: the same weights (views of :attr:`flat`), for the actor's loss,
        whose gradient must reach the actions but not the critic (no ``requires_grad_`` toggling in the step)."""
        for frozen, live in zip(self._frozen_qs.parameters(), self.critic.qs.parameters(), strict=True):
            frozen.data = live.detach()
        self.capture_plan = capture.resolve(cfg.capture, self.device, self.comm.distributed, cfg.capture_backend)
        """How each gradient step runs: eager, replayed from a CUDA graph, or compiled (:mod:`..capture`)."""
        self.optimizer_flags: dict[str, Any] = {
            **EXECUTION_FLAGS,
            "fused": self.device.type in ("cpu", "cuda") or None,
            "capturable": self.device.type == "cuda",  # a CUDA graph records the step count's update on the device
        }
        """The optimizers' kernel switches on this device (a checkpoint's are replaced by them on load)."""
        self.actor_optimizer = self._adam(self.actor.parameters(), cfg.actor_learning_rate)
        self.critic_optimizer = self._adam(self.critic.parameters(), cfg.critic_learning_rate)
        self.alpha_optimizer = self._adam([self.log_alpha], cfg.alpha_learning_rate)
        self._target_flat = torch.cat([p.detach().reshape(-1) for p in self.target_qs.parameters()])
        """The target critic's parameters as one buffer (they are views of it), laid out as the critic's segment of
        :attr:`flat` (the critic's parameters are its two Q networks')."""
        offset = 0
        for p in self.target_qs.parameters():
            p.data = self._target_flat[offset : offset + p.numel()].view_as(p)
            offset += p.numel()
        self._adam_slices = [
            self.flat.slices_of(opt.param_groups[0]["params"])
            for opt in (self.actor_optimizer, self.critic_optimizer, self.alpha_optimizer)
        ]
        """Each optimizer's parameters' slices of :attr:`flat` (actor, critic, log alpha), for a traced step."""
        self._found_inf = torch.zeros((), device=self.device)
        """1.0 where this step's reduced gradient is not finite: every optimizer then skips it (Adam's ``found_inf``,
        the protocol of ``GradScaler``; the fused kernel returns before touching anything)."""
        self._skipped = torch.zeros((), device=self.device)
        """Gradient steps skipped on a non-finite gradient this iteration."""
        self._actor_net = PrecisionNet(self.actor, self.precision)
        self._dist: TanhGaussian = self.actor.distribution  # type: ignore[assignment]
        self.policy: MLPModel = self.actor if cfg.policy_average == 0 else standalone_copy(self.actor)
        """The deployed policy (:meth:`get_policy`, :meth:`act_inference`, a checkpoint's ``actor_state_dict``): the
        actor itself, or with ``policy_average`` > 0 a running average of its weights (:meth:`_average_policy`)."""
        self._policy_net = self._actor_net if self.policy is self.actor else PrecisionNet(self.policy, self.precision)
        self._groups = tuple(dict.fromkeys(cfg.actor.obs_groups + cfg.critic.obs_groups))
        self.replay = ReplayBuffer(
            cfg.buffer_size_per_env,
            obs,
            self._groups,
            num_actions,
            self.device,
            env_offset=self.env_offset,
            global_num_envs=self.global_num_envs,
        )
        self.reward_normalizer = (
            RewardNormalizer(self.num_envs, cfg.gamma, cfg.reward_norm_max_return, self.device)
            if cfg.reward_normalization
            else None
        )
        """FlashSAC-style reward scale (:mod:`.reward_norm`), or None."""
        self.seed = seed
        self._key = philox_key(seed)
        """The Philox key of the minibatch and update-noise draws: the same on every rank."""
        self.noise_generator = torch.Generator(device=self.device)
        """Draws the exploration noise when :attr:`action_noise` is None; seeded by (seed, global rank)."""
        self.noise_generator.manual_seed(seeds.noise)
        self.action_noise: Callable[[], torch.Tensor] | None = None
        """Source of the ``(N, A)`` standard-normal exploration noise; None: :attr:`noise_generator`. Set it to the
        env's per-env streams (:func:`redline.seeding.plan.bind_action_noise`) for partition-invariant exploration."""
        self.symmetry: Callable[..., tuple[Any, Any]] | None = None
        """Symmetry augmentation: rsl_rl's ``data_augmentation_func(env=, obs=, actions=)`` (the originals first,
        then their mirrored copies), or None. Each sampled minibatch then trains on itself and its mirror images
        (observations, next observations and actions mirrored; rewards and discounts repeated)."""
        self.symmetry_env: Any = None
        """The ``env`` argument handed to :attr:`symmetry`."""
        self.gradient_steps = 0
        """Gradient steps taken (host int: decides the policy steps)."""
        self._update_index = torch.zeros((), dtype=torch.int64, device=self.device)
        """Device mirror of :attr:`gradient_steps`: the counter of the update's Philox draws."""
        self._scales: tuple[int, torch.Tensor] | None = None
        """(seed, this rank's envs' exploration factors): computed on the first :meth:`act`."""
        self._pending: tuple[dict[str, torch.Tensor], torch.Tensor] | None = None
        """The observation groups and actions of the last :meth:`act`, stored by :meth:`process_env_step`."""
        self._new_steps = 0
        """Env steps stored since the last :meth:`update` (the observation normalisers' batch)."""
        self._warned_final_obs = False
        self.td3 = cfg.variant == "td3"
        """FastTD3's deterministic policy (``SACConfig.variant``) instead of SAC's stochastic one."""
        td3_std = cfg.actor.action_scale * sum(cfg.exploration_std) / 2  # the envs' mean std [action units]
        self._std = torch.full((num_actions,), td3_std if self.td3 else 1.0, device=self.device)
        """Mean exploration std of the last policy step's batch, ``(A,)`` (TD3: of the envs' noise, fixed)."""
        self._grad_norms = torch.zeros(3, device=self.device)
        """Gradient norms (actor, critic, log alpha): the critic's of the last step, the others of the last policy
        step."""
        self._mean_reward = torch.zeros((), device=self.device)
        self._reward_sum = torch.zeros((), device=self.device)
        self.replay.local_plan(cfg.batch_size)  # the sampling plan's one host-to-device copy, here, not in update()
        self._train_step = capture.wrap(self._gradient_step, self.capture_plan, "SAC gradient step")
        """:meth:`_gradient_step` as :attr:`capture_plan` runs it."""
        self._policy_step = capture.wrap(self._policy, self.capture_plan, "SAC policy inference")
        """:meth:`_policy` (the acting pass of :meth:`act`) as :attr:`capture_plan` runs it."""
        self.sync_replicas()

    def _adam(self, params: Any, lr: float) -> torch.optim.Adam:
        """``torch.optim.Adam`` with :attr:`optimizer_flags` and its state made up front (a traced step reads it)."""
        flags = self.optimizer_flags
        optimizer = torch.optim.Adam(params, lr=lr, fused=flags["fused"], capturable=flags["capturable"])
        init_adam_state(optimizer)
        return optimizer

    # ---------------------------------------------------------------------------------------------------------------
    # Replicas

    def _synced_tensors(self) -> list[torch.Tensor]:
        averaged = [*self.policy.parameters(), *self.policy.buffers()] if self.policy is not self.actor else []
        return [
            self.flat.flat_param,
            self._target_flat,
            *self.actor.buffers(),
            *[b for b in self.critic.buffers() if b is not self.critic.support],
            *averaged,
        ]

    def sync_replicas(self) -> None:
        """Every rank takes rank 0's weights, target critic and normalisers (no-op in one process)."""
        if self.comm.distributed:
            self.comm.broadcast_(self._synced_tensors())

    def check_replicas(self) -> None:
        """Raise :class:`~redline.learning.distributed.ReplicaDivergedError` unless all ranks hold the same
        parameters (one all-reduce; a no-op in a single process)."""
        self.comm.check_replicas(torch.cat([self.flat.flat_param, self._target_flat]))

    # ---------------------------------------------------------------------------------------------------------------
    # Acting

    @property
    def learning_rate(self) -> float:
        """The actor's learning rate (constant)."""
        return self.cfg.actor_learning_rate

    @property
    def alpha(self) -> torch.Tensor:
        """The entropy temperature, 0-dim."""
        return self.log_alpha.detach().exp()

    def get_policy(self) -> MLPModel:
        """The deployed policy (:attr:`policy`), an rsl_rl ``MLPModel``: ``forward`` gives ``action_scale *
        tanh(mean)``; exports as rsl_rl's."""
        return self.policy

    @torch.no_grad()
    def act(self, obs: TensorDict) -> torch.Tensor:
        """Stochastic actions ``a = scale · tanh(μ + s σ ε)``, fp32 ``(N, A)``, ``s`` the env's exploration factor
        (``exploration_scale``; 1 by default); TD3: ``a = scale · clip(tanh μ + s σ_env ε, −1, 1)``. Keeps ``obs``
        and ``a`` for :meth:`process_env_step`."""
        obs = obs.to(self.device)
        if self.action_noise is None:
            shape = (self.num_envs, self.num_actions)
            noise = torch.randn(shape, generator=self.noise_generator, device=self.device, dtype=torch.float32)
        else:
            noise = self.action_noise()
            noise = noise if noise.device == self.device else noise.to(self.device)
        scale = self._exploration_scales()
        if scale is not None:
            noise = noise * scale
        groups = {g: obs[g] for g in self._groups}
        actions = self._policy_step(groups, noise)
        self._pending = ({g: x.clone() for g, x in groups.items()}, actions)
        return actions

    def _policy(self, obs: dict[str, torch.Tensor], noise: torch.Tensor) -> torch.Tensor:
        """The acting pass of one env step, free of host syncs: ``scale · tanh(μ + σ ε)`` (TD3: ``scale · clip(tanh μ
        + ε, −1, 1)``) ``(N, A)`` fp32 for the observation groups ``obs`` and the (scaled) normals ``noise``."""
        mean, log_std = self._dist.split(self._actor_net(obs))  # type: ignore[arg-type]  # indexed by group name
        if self.td3:
            return deterministic_actions(mean, noise, self.cfg.actor.action_scale)
        actions, _ = squashed_sample(mean, log_std, noise, self.cfg.actor.action_scale)
        return actions

    def _exploration_scales(self) -> torch.Tensor | None:
        """This rank's envs' factors on their standard-normal exploration noise, ``(N, 1)``, under the current
        :attr:`seed` (a checkpoint's after a resume): :func:`exploration_scales` (None at ``exploration_scale``
        (1, 1)), times :func:`exploration_stds` for TD3."""
        low, high = self.cfg.exploration_scale
        if not self.td3 and low == high == 1.0:
            return None
        if self._scales is None or self._scales[0] != self.seed:
            ids = torch.arange(self.env_offset, self.env_offset + self.num_envs, device=self.device)
            scales = exploration_scales(self.seed, ids, low, high) if (low, high) != (1.0, 1.0) else None
            if self.td3:
                stds = exploration_stds(self.seed, ids, *self.cfg.exploration_std)
                scales = stds if scales is None else stds * scales
            assert scales is not None
            self._scales = (self.seed, scales)
        return self._scales[1]

    @torch.no_grad()
    def act_inference(self, obs: TensorDict) -> torch.Tensor:
        """The deployed policy's (:attr:`policy`) deterministic actions ``scale · tanh(μ)``, fp32 ``(N, A)``."""
        return self._dist.deterministic_output(self._policy_net(obs.to(self.device)))

    @torch.no_grad()
    def process_env_step(
        self, next_obs: TensorDict, rewards: torch.Tensor, dones: torch.Tensor, extras: Mapping[str, Any]
    ) -> None:
        """Store the transition of the last :meth:`act`.

        Args:
            next_obs: the env's observation after the step (after the auto-reset where an episode ended).
            rewards, dones: ``(N,)``; dones nonzero where the episode ended (terminated or timed out).
            extras: ``extras["time_outs"]`` ``(N,)`` marks time-outs (bootstrapped; a done without it terminated);
                ``extras["final_observation"]`` (a TensorDict of the observation before the reset, valid where
                done) is what a time-out bootstraps from. Without it the reset observation stands in, with a warning
                once (biased for time-outs).
        """
        if self._pending is None:
            raise RuntimeError("process_env_step without a preceding act")
        obs, actions = self._pending
        self._pending = None
        next_obs = next_obs.to(self.device)
        done = dones.to(self.device).reshape(-1) != 0
        time_outs = extras.get("time_outs")
        time_outs = done & (time_outs.to(self.device).reshape(-1) != 0) if time_outs is not None else done & False
        final = extras.get("final_observation")
        if final is None:
            if not self._warned_final_obs:
                warnings.warn(
                    "SAC: the env gives no extras['final_observation']; time-outs bootstrap from the reset "
                    "observation instead of the true final one",
                    stacklevel=2,
                )
                self._warned_final_obs = True
            true_next = {g: next_obs[g] for g in self._groups}
        else:
            final = final.to(self.device)
            true_next = {
                g: torch.where(done.reshape(-1, *[1] * (next_obs[g].dim() - 1)), final[g], next_obs[g])
                for g in self._groups
            }
        rewards = rewards.to(self.device).reshape(-1)
        self.replay.add(obs, actions, rewards, done, time_outs, true_next)
        if self.reward_normalizer is not None:
            self.reward_normalizer.observe(rewards, done)
        self._reward_sum += rewards.mean()
        self._new_steps += 1

    def compute_returns(self, obs: TensorDict) -> None:
        """Nothing to do: n-step returns are computed when sampling (kept for the on-policy loop's interface)."""

    # ---------------------------------------------------------------------------------------------------------------
    # Update

    def update(self) -> dict[str, torch.Tensor]:
        """Update the normalisers, then run ``num_steps_per_env * updates_per_step`` gradient steps (none while
        fewer than ``learning_starts`` env steps per env are stored).

        Returns:
            0-dim device tensors: the means of :data:`STEP_METRICS` over the steps that computed them (0 before
            learning starts), ``alpha``, ``actor_grad_norm`` (of the last policy step) and ``critic_grad_norm`` (of
            the last step), before clipping,
            ``action_std`` (mean exploration std of the last policy step), ``mean_reward`` (of the iteration's
            steps), ``gradient_steps`` (run this iteration) and ``skipped_steps`` (of those, skipped on a
            non-finite gradient: no weight, moment or target moved).
        """
        cfg = self.cfg
        self._update_obs_normalizers()
        if self.reward_normalizer is not None:
            self.reward_normalizer.update(self.comm)
        steps = cfg.num_steps_per_env * cfg.updates_per_step if self.replay.steps >= cfg.learning_starts else 0
        sums = torch.zeros(len(STEP_METRICS), device=self.device)
        policy_steps = 0
        for _ in range(steps):
            policy = self.gradient_steps % cfg.policy_frequency == 0
            sums += self._train_step(policy)
            policy_steps += int(policy)
            self.gradient_steps += 1
        means = torch.cat((sums[:_CRITIC_METRICS] / max(steps, 1), sums[_CRITIC_METRICS:] / max(policy_steps, 1)))
        metrics = dict(zip(STEP_METRICS, means.unbind(), strict=True))
        self._dist.set_std(self._std.clone())
        if self.policy is not self.actor:
            if steps:
                self._average_policy()
            self.policy.distribution.set_std(self._dist.std)  # type: ignore[operator]  # the stock runner's output_std
        metrics.update(
            alpha=self.alpha,
            actor_grad_norm=self._grad_norms[0],
            critic_grad_norm=self._grad_norms[1],
            action_std=self._std.mean(),
            mean_reward=self._reward_sum / max(self._new_steps, 1),
            gradient_steps=torch.full((), float(steps), device=self.device),  # a fill: no host-to-device copy
            skipped_steps=self._skipped.clone(),
        )
        self._skipped.zero_()
        self._reward_sum = torch.zeros((), device=self.device)
        self._new_steps = 0
        return metrics

    @torch.no_grad()
    def _average_policy(self) -> None:
        """One step of the deployed policy's running average: its weights move ``policy_average`` of the way to the
        actor's, its normalisers are the actor's (on the device, no host read)."""
        # p <- p + rate (θ - p)
        torch._foreach_lerp_(list(self.policy.parameters()), list(self.actor.parameters()), self.cfg.policy_average)
        for mine, actors in zip(self.policy.buffers(), self.actor.buffers(), strict=True):
            mine.copy_(actors)

    @torch.no_grad()
    def _update_obs_normalizers(self) -> None:
        """Merge the observations stored since the last update into the normalisers (every rank's, in rank order)."""
        models = [m for m in (self.actor, self.critic) if m.obs_normalization]
        if models and self._new_steps:
            ok = torch.ones((), dtype=torch.bool, device=self.device)
            merge_obs_moments(models, self.replay.newest(self._new_steps), self.comm, ok)  # type: ignore[arg-type]

    def _gradient_step(self, policy_step: bool) -> torch.Tensor:
        """One gradient step on this rank's share of global minibatch :attr:`gradient_steps` (no host read).

        Args:
            policy_step: also update the actor and the temperature.

        Returns:
            the step's :data:`STEP_METRICS`, ``(len(STEP_METRICS),)``, summed over ranks (the actor's 0 on a critic
            step); the gradient norms after the all-reduce go to :attr:`_grad_norms`.
        """
        cfg, flat, critic = self.cfg, self.flat, self.critic
        scale = cfg.actor.action_scale
        batch_size = cfg.batch_size
        reward_scale = None if self.reward_normalizer is None else self.reward_normalizer.scale
        batch = self.replay.sample(
            self._key, self._update_index, batch_size, cfg.n_step, cfg.gamma, reward_scale, (2, self.num_actions)
        )
        share = batch.batch_size[0] / batch_size  # this rank's part of the global minibatch mean
        if self.symmetry is not None:  # every rank augments its share by the same factor: the share stays
            batch = self._mirrored(batch)
        flat.zero_grad()
        alpha = self.alpha
        with torch.no_grad():
            noise = batch["noise"][:, NEXT_ACTION_NOISE]
            next_mean, next_log_std = self._dist.split(self._actor_net(batch["next_obs"]))
            if self.td3:  # no entropy term
                next_actions = smoothed_target_actions(next_mean, noise, scale, cfg.policy_noise, cfg.noise_clip)
                entropy_term = torch.zeros_like(batch["rewards"])
            else:
                next_actions, next_log_prob = squashed_sample(next_mean, next_log_std, noise, scale)
                entropy_term = alpha * next_log_prob
            next_logits = critic.logits(critic.latent(batch["next_obs"]), next_actions, self.precision, self.target_qs)
            atoms, probs = clipped_double_q_target(
                next_logits, critic.support, batch["rewards"], batch["discounts"], entropy_term
            )
            target = categorical_projection(atoms, probs, critic.v_min, critic.v_max)
        latent = critic.latent(batch["obs"])
        logits = critic.logits(latent, batch["actions"], self.precision)
        c_loss, _ = critic_loss(logits, target)
        (c_loss * share).backward()
        stats = flat.reduce_extra
        with torch.no_grad():
            stats[0] += c_loss.detach() * share
            stats[1] += critic.expected(logits.detach()).mean() * share
        if policy_step and self.td3:
            mean, _ = self._dist.split(self._actor_net(batch["obs"]))
            actions = scale * torch.tanh(mean)  # the deterministic policy π(s)
            q_values = critic.expected(critic.logits(latent.detach(), actions, self.precision, self._frozen_qs))
            a_loss, _ = deterministic_actor_loss(q_values)
            (a_loss * share).backward()
            with torch.no_grad():
                stats[2] += a_loss.detach() * share
        elif policy_step:
            noise = batch["noise"][:, ACTION_NOISE]
            mean, log_std = self._dist.split(self._actor_net(batch["obs"]))
            actions, log_prob = squashed_sample(mean, log_std, noise, scale)
            # the actor's loss moves the actor only: the critic's weights enter it as constants
            q_values = critic.expected(critic.logits(latent.detach(), actions, self.precision, self._frozen_qs))
            a_loss, a_metrics = actor_loss(alpha, log_prob, q_values)
            t_loss, _ = temperature_loss(self.log_alpha, log_prob.detach(), self.target_entropy)
            ((a_loss + t_loss) * share).backward()
            with torch.no_grad():
                stats[2:] += torch.stack((a_loss.detach(), t_loss.detach(), a_metrics["entropy"])) * share
                self._std.copy_(log_std.detach().exp().mean(0))
        if self.comm.distributed:
            reduced = flat.reduce_buffer
            if reduced.device != self.comm.device:
                reduced = reduced.to(self.comm.device)
            self.comm.all_reduce_(reduced)
            if reduced is not flat.reduce_buffer:
                flat.reduce_buffer.copy_(reduced)
        norms = flat.grad_norms()
        # the same on every rank (computed after the all-reduce): a NaN or Inf anywhere skips the whole step
        self._found_inf.copy_(~torch.isfinite(norms.sum()))
        self._skipped += self._found_inf
        self._grad_norms.copy_(norms if policy_step else torch.cat((self._grad_norms[:1], norms[1:])))
        if cfg.max_grad_norm is not None:
            flat.clip_(cfg.max_grad_norm, norms, which=(0, 1))
        adam_step(self.critic_optimizer, self._found_inf, flat, self._adam_slices[1])
        if policy_step:
            adam_step(self.actor_optimizer, self._found_inf, flat, self._adam_slices[0])
            if not self.td3:  # TD3 has no temperature
                adam_step(self.alpha_optimizer, self._found_inf, flat, self._adam_slices[2])
        with torch.no_grad():  # a skipped step leaves the target as it was too
            # θ' ← θ' + τ (θ − θ')
            tau = (1.0 - self._found_inf) * cfg.tau
            self._target_flat.lerp_(flat.flat_param[flat.segments[1]], tau)  # one kernel, a device weight
        self._update_index += 1
        return stats.clone()

    def _mirrored(self, batch: TensorDict) -> TensorDict:
        """``batch`` and its mirror images (:attr:`symmetry`), batch ``[k b]``."""
        assert self.symmetry is not None
        obs, actions = self.symmetry(env=self.symmetry_env, obs=batch["obs"], actions=batch["actions"])
        next_obs, _ = self.symmetry(env=self.symmetry_env, obs=batch["next_obs"], actions=None)
        copies = actions.shape[0] // batch.batch_size[0]
        return TensorDict(
            {
                "obs": obs,
                "next_obs": next_obs,
                "actions": actions,
                "rewards": batch["rewards"].repeat(copies),
                "discounts": batch["discounts"].repeat(copies),
                "noise": batch["noise"].repeat(copies, 1, 1),
            },
            batch_size=[actions.shape[0]],
            device=self.device,
        )

    # ---------------------------------------------------------------------------------------------------------------
    # Checkpoints (:mod:`.sac_checkpoint`)

    def state_dict(self, replay_data: bool = True) -> dict[str, Any]:
        """Everything to resume (:func:`.sac_checkpoint.state_dict`); ``replay_data=False`` leaves the replay's data
        out (a data-parallel checkpoint holds every rank's once, in :meth:`rank_state_dict`'s parts)."""
        return sac_checkpoint.state_dict(self, replay_data)

    def rank_state_dict(self) -> dict[str, Any]:
        """This rank's own part of the state, as CPU copies (:func:`.sac_checkpoint.rank_state_dict`)."""
        return sac_checkpoint.rank_state_dict(self)

    def load_rank_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`rank_state_dict` (:func:`.sac_checkpoint.load_rank_state_dict`)."""
        sac_checkpoint.load_rank_state_dict(self, state)

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> None:
        """Restore :meth:`state_dict` (:func:`.sac_checkpoint.load_state_dict`)."""
        sac_checkpoint.load_state_dict(self, state, strict)
