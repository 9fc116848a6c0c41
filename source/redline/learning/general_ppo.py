"""rsl_rl's PPO for every model and extension rsl_rl 5.5.1 offers, with redline's rules for the update's hot path.

:class:`redline.learning.ppo.PPO` is specialised for what most locomotion configs use (MLP actor and critic, a
Gaussian policy, Adam): one flat parameter buffer, capture, fp32 heads under a bf16 body. Everything else rsl_rl's
agent config can ask for (``RNNModel`` with GRU/LSTM, ``CNNModel`` and ``share_cnn_encoders``, the Beta and
heteroscedastic Gaussian distributions, symmetry augmentation and mirror loss, RND, adamw/sgd/rmsprop, its
multi-GPU mode) runs here: rsl_rl's own models, storage (padded trajectories and masks for recurrent models),
``Symmetry`` and ``RandomNetworkDistillation``, driven by an update that keeps redline's rules where they apply:

- no host read in the minibatch loop: the losses stay on the device and are read once per update; the KL-adaptive
  learning rate is a device tensor decided on the device (:func:`redline.learning.optim.adaptive_lr`), not a Python
  float compared on the host per minibatch;
- torch's fused optimizers (``Adam``/``AdamW``/``SGD(fused=True)``, one kernel for all parameters); RMSprop has no
  fused kernel and runs ``foreach``;
- the NaN guard (:class:`redline.learning.guard.NanGuard`): a minibatch whose loss or gradients are not finite skips
  its optimizer step on the device (the fused kernels' ``found_inf``); RMSprop, without one, reads a flag per step;
- data-parallel ranks: one all-reduce per minibatch of one flat buffer (every gradient, RND's too, and the KL);
  every rank then decides the same learning rate, with no broadcast;
- the precision policy: bf16 autocast over the network bodies (MLP, RNN and CNN layers) with the output head — the
  last ``Linear`` of the MLP — and everything after it (distribution, log-probs, ratio, losses) in fp32.

Not applied here (docs/learner.md): capture (rsl_rl's models keep their distribution and hidden state on the module,
and recurrent minibatches are built per step on the host), value normalisation and the stratified minibatch
partition (rsl_rl's storage draws its own), per-env action noise streams (rsl_rl's distributions sample from torch's
global generator).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable, Iterator
from typing import Any

import torch
from rsl_rl.algorithms import PPO as RslPPO
from torch import nn

from redline.learning.distributed import Communicator
from redline.learning.guard import NanGuard
from redline.learning.losses import surrogate_loss, value_loss
from redline.learning.optim import adaptive_lr
from redline.learning.precision import Precision
from redline.run_state.parts import RunnerEnvState

OPTIMIZERS = ("adam", "adamw", "sgd", "rmsprop")
"""rsl_rl's optimizer names (``algorithm.optimizer``)."""
MIN_LR, MAX_LR = 1e-5, 1e-2
"""rsl_rl's bounds on the KL-adaptive learning rate."""
LOSSES = ("value", "surrogate", "entropy", "rnd", "symmetry")
"""The update's mean losses, in rsl_rl's names (``rnd`` / ``symmetry`` reported only when those are on)."""


def make_optimizer(name: str, params: Iterable[nn.Parameter], lr: torch.Tensor) -> torch.optim.Optimizer:
    """torch.optim's ``name`` optimizer (rsl_rl's defaults otherwise) with a tensor learning rate ``lr`` (0-dim).

    Adam, AdamW and SGD are fused (one kernel; they honour ``found_inf``); RMSprop runs ``foreach`` (capturable on
    CUDA, where a tensor learning rate needs it). An optimizer given a parameter twice (a CNN encoder shared by actor
    and critic: rsl_rl's optimizer steps it once per model) runs torch's per-tensor loop, as a fused or foreach
    kernel given one tensor twice is not defined.
    """
    params = list(params)
    fused = len({id(p) for p in params}) == len(params)
    kind = name.lower()
    if kind == "adam":
        return torch.optim.Adam(params, lr=lr, fused=fused, foreach=False)
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=lr, fused=fused, foreach=False)
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr, fused=fused, foreach=False)
    if kind == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, foreach=fused, capturable=lr.device.type == "cuda")
    raise ValueError(f"optimizer: unknown '{name}' (valid: {', '.join(OPTIMIZERS)})")


FP32_DISTRIBUTION_METHODS = ("update", "log_prob", "kl_divergence", "deterministic_output")
"""The distribution's methods run outside autocast: its parameters, samples, log-probs and KL stay fp32."""


def fp32_head(model: nn.Module) -> None:
    """Run the model's output head (the last ``Linear`` of ``model.mlp``) and its distribution in fp32 even under
    bf16 autocast.

    The methods are wrapped on the instances, so the modules, their parameters and their state-dict keys stay
    rsl_rl's (checkpoints and export are unchanged).
    """
    _outside_autocast(model.mlp[-1], "forward")  # type: ignore[index]
    distribution = getattr(model, "distribution", None)
    if distribution is not None:
        for name in FP32_DISTRIBUTION_METHODS:
            _outside_autocast(distribution, name)


def _outside_autocast(owner: object, name: str) -> None:
    """Replace ``owner.name`` (a method) on the instance by one that runs with autocast off, its tensor arguments
    cast to fp32; a second call is a no-op."""
    plain = getattr(owner, name)
    if name in vars(owner):
        return

    @functools.wraps(plain)
    def fp32(*args: Any) -> Any:
        args = tuple(_fp32(a) for a in args)
        device = next((a.device.type for a in args if isinstance(a, torch.Tensor)), "cpu")
        with torch.autocast(device_type=device, enabled=False):
            return plain(*args)

    setattr(owner, name, fp32)


def _fp32(x: Any) -> Any:
    """A floating tensor (or a tuple of them) as fp32; anything else as it is."""
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.float()
    if isinstance(x, tuple):
        return tuple(_fp32(v) for v in x)
    return x


class GeneralPPO(RslPPO):
    """rsl_rl's ``PPO`` (same constructor, rollout, GAE, storage, extensions, checkpoints) with redline's update.

    Args:
        args, kwargs: rsl_rl ``PPO``'s arguments (``multi_gpu_cfg`` set: the default process group exists).
        precision: ``"auto"`` (bf16 on CUDA devices that have it, else fp32), ``"bf16"`` or ``"fp32"``; None (the
            default): rsl_rl's ``use_mixed_precision``, True bf16, False fp32 (:meth:`Precision.for_rsl_rl`).
        max_consecutive_skips: iterations in a row with a skipped step before training stops.
        timeout_s: the process group's timeout [s], quoted when a rank is lost.
    """

    def __init__(
        self,
        *args: Any,
        precision: str | None = None,
        max_consecutive_skips: int = 3,
        timeout_s: float = 0.0,
        **kwargs: Any,
    ) -> None:
        mixed = bool(kwargs.pop("use_mixed_precision", False))
        super().__init__(*args, **kwargs)
        self.use_mixed_precision = False  # the precision policy below replaces rsl_rl's whole-loss autocast
        dev = torch.device(self.device)
        self.precision = Precision.for_rsl_rl(mixed, precision, dev)
        if self.precision.is_bf16:
            for model in self._models():
                fp32_head(model)
        self.comm = Communicator.from_process_group(dev, timeout_s) if self.is_multi_gpu else Communicator(device=dev)
        self._lr = torch.tensor(self.__dict__.pop("_initial_lr"), device=dev)
        """The learning rate on the device (every optimizer group's ``lr`` is this tensor)."""
        name = kwargs.get("optimizer", "adam")
        self.optimizer = make_optimizer(name, self._trained(self.actor, self.critic), self._lr)
        if self.rnd:  # RND's predictor keeps its own Adam and learning rate whatever PPO's optimizer, as rsl_rl's
            rnd_lr = self.rnd.optimizer.param_groups[0]["lr"]  # (so rsl_rl's PPO loads and trains on its state)
            self.rnd.optimizer = make_optimizer(
                "adam", self.rnd.predictor.parameters(), torch.tensor(rnd_lr, device=dev)
            )
        self.guard = NanGuard(max_consecutive_skips, dev)
        self.last_skipped = 0
        """Optimizer steps the NaN guard skipped in the last update."""
        self.env_state = RunnerEnvState(None)
        """The env's part of the checkpoints (:class:`~redline.run_state.parts.RunnerEnvState`), given the
        runner's env by :func:`redline.learning.rsl_rl.construct_general`."""

    # rsl_rl's runner and logger read (and rsl_rl's __init__ sets) a float learning rate -------------------------------

    @property  # type: ignore[override]
    def learning_rate(self) -> float:
        """The current learning rate (one host read; the runner's logger reads it once per iteration)."""
        return float(self._lr)

    @learning_rate.setter
    def learning_rate(self, value: float) -> None:
        if "_lr" in self.__dict__:
            self._lr.fill_(float(value))
        else:  # rsl_rl's __init__ sets it before the device tensor exists
            self.__dict__["_initial_lr"] = float(value)

    def _models(self) -> Iterator[nn.Module]:
        yield self.actor
        yield self.critic

    @staticmethod
    def _trained(*models: nn.Module) -> list[nn.Parameter]:
        """The models' parameters in rsl_rl's order; a CNN encoder shared by actor and critic appears in both, and
        is stepped twice per minibatch as rsl_rl's optimizer does (the same training)."""
        return [p for m in models for p in m.parameters()]

    def _all_params(self) -> list[nn.Parameter]:
        params = self._trained(self.actor, self.critic)
        return params + (list(self.rnd.predictor.parameters()) if self.rnd else [])

    # the update ---------------------------------------------------------------------------------------------------

    def update(self) -> dict[str, float]:
        """rsl_rl's update: the same minibatches, losses, clipping and schedule; one host read at the end."""
        recurrent = self.actor.is_recurrent or self.critic.is_recurrent
        if recurrent:
            batches = self.storage.recurrent_mini_batch_generator(self.num_mini_batches, self.num_learning_epochs)
        else:
            batches = self.storage.mini_batch_generator(self.num_mini_batches, self.num_learning_epochs)
        sums = torch.zeros(len(LOSSES), device=self.device)
        for batch in batches:
            sums += self._step(batch)
        obs = self.storage.observations.flatten(0, 1)
        self.actor.update_normalization(obs)
        self.critic.update_normalization(obs)
        if self.rnd:
            self.rnd.update_normalization(obs)
        num_updates = self.num_learning_epochs * self.num_mini_batches
        means = (sums / num_updates).tolist()  # the update's one host read (the guard's below is the other)
        self.last_skipped = self.guard.end_iteration()
        self.storage.clear()
        losses = dict(zip(LOSSES, means, strict=True))
        if not self.rnd:
            del losses["rnd"]
        if not self.symmetry:
            del losses["symmetry"]
        return losses

    def _autocast(self) -> contextlib.AbstractContextManager:
        return self.precision.body_autocast(self.device)

    def _step(self, batch: Any) -> torch.Tensor:
        """One minibatch: forward, losses, gradients, their all-reduce, clip, step. Returns the 5 losses (device)."""
        n = batch.observations.batch_size[0]
        if self.normalize_advantage_per_mini_batch:
            with torch.no_grad():
                batch.advantages = (batch.advantages - batch.advantages.mean()) / (batch.advantages.std() + 1e-8)
        if self.symmetry:
            self.symmetry.augment_batch(batch, n)
        with self._autocast():
            masks, (actor_hidden, critic_hidden) = batch.masks, batch.hidden_states
            self.actor(batch.observations, masks=masks, hidden_state=actor_hidden, stochastic_output=True)
            log_prob = self.actor.get_output_log_prob(batch.actions).float()
            values = self.critic(batch.observations, masks=masks, hidden_state=critic_hidden).float()
            params = tuple(p[:n] for p in self.actor.output_distribution_params)
            entropy = self.actor.output_entropy[:n].float()
            adaptive = self.desired_kl is not None and self.schedule == "adaptive"
            if adaptive:
                with torch.no_grad():
                    kl_mean = self.actor.get_kl_divergence(batch.old_distribution_params, params).float().mean()
            # the fast learner's pure losses, on rsl_rl's batch shapes
            old_log_prob, advantages = torch.squeeze(batch.old_actions_log_prob), torch.squeeze(batch.advantages)
            surrogate, _ = surrogate_loss(log_prob, old_log_prob, advantages, self.clip_param)
            value_clip = self.clip_param if self.use_clipped_value_loss else None
            value, _ = value_loss(values, batch.values, batch.returns, value_clip)
            loss = surrogate + self.value_loss_coef * value - self.entropy_coef * entropy.mean()
            zero = torch.zeros((), device=self.device)
            rnd_loss = self.rnd.compute_loss(batch.observations[:n]) if self.rnd else zero
            symmetry_loss = zero
            if self.symmetry:
                symmetry_loss = self.symmetry.compute_loss(self.actor, batch, n)
                if self.symmetry.use_mirror_loss:
                    loss = loss + self.symmetry.mirror_loss_coeff * symmetry_loss
        self.optimizer.zero_grad()
        loss.backward()
        if self.rnd:
            self.rnd.optimizer.zero_grad()
            rnd_loss.backward()
        kl = kl_mean if adaptive else None
        kl = self._reduce(kl)
        if kl is not None:  # every rank holds the same mean KL: the same learning rate, no broadcast
            self._lr.copy_(adaptive_lr(self._lr, kl, self.desired_kl, MIN_LR, MAX_LR))
        # the clip's norms double as the NaN guard's check of the gradients (a non-finite gradient: a non-finite norm)
        actor_norm = nn.utils.clip_grad_norm_(self.actor.parameters(), self.max_grad_norm, foreach=True)
        critic_norm = nn.utils.clip_grad_norm_(self.critic.parameters(), self.max_grad_norm, foreach=True)
        if self.rnd:  # RND's gradients are not clipped (as rsl_rl), only checked
            grads = [p.grad for p in self.rnd.predictor.parameters() if p.grad is not None]
            critic_norm = critic_norm + nn.utils.get_total_norm(grads, foreach=True)
        ok = self.guard.check(~torch.isfinite(torch.stack([loss + rnd_loss, actor_norm, critic_norm])), "loss")
        self.guard.count_step(ok)
        self._apply(self.optimizer, ok)
        if self.rnd:
            self._apply(self.rnd.optimizer, ok)
        return torch.stack(
            [value.detach(), surrogate.detach(), entropy.detach().mean(), rnd_loss.detach(), symmetry_loss.detach()]
        )

    def _reduce(self, kl: torch.Tensor | None) -> torch.Tensor | None:
        """Average the gradients (and the KL) over the ranks: one all-reduce of one flat buffer per minibatch."""
        if not self.comm.distributed:
            return kl
        grads = [p.grad for p in self._all_params() if p.grad is not None]
        extra = [kl.reshape(1)] if kl is not None else []
        flat = torch.cat([g.reshape(-1) for g in grads] + extra).to(self.comm.device)
        self.comm.all_reduce_(flat).div_(self.comm.world_size)
        flat = flat.to(self.device)
        offset = 0
        for g in grads:
            g.copy_(flat[offset : offset + g.numel()].view_as(g))
            offset += g.numel()
        return flat[-1] if kl is not None else None

    @staticmethod
    def _apply(optimizer: torch.optim.Optimizer, ok: torch.Tensor) -> None:
        """Step ``optimizer`` unless ``ok`` (device bool) is False: fused kernels skip on the device (``found_inf``),
        RMSprop reads the flag on the host."""
        if optimizer.defaults.get("fused"):
            optimizer.found_inf = (~ok).float()  # type: ignore[attr-defined]
            optimizer.step()
        elif bool(ok):
            optimizer.step()

    # multi-GPU ----------------------------------------------------------------------------------------------------

    def broadcast_parameters(self) -> None:
        """Every rank takes rank 0's models (actor, critic, RND's predictor and target): one broadcast per tensor."""
        models: list[nn.Module] = [self._raw_actor, self._raw_critic]
        if self.rnd:
            models += [self.rnd.predictor, self.rnd.target]
        self.comm.broadcast_([t for m in models for t in m.state_dict().values()])

    def reduce_parameters(self) -> None:
        """rsl_rl's hook; the gradients are averaged inside :meth:`update` (one flat all-reduce per minibatch)."""

    # checkpoints --------------------------------------------------------------------------------------------------

    def act(self, obs: Any) -> torch.Tensor:
        """rsl_rl's ``act``; the first action after a load acts on the restored env (:class:`RunnerEnvState`)."""
        return super().act(self.env_state.before_act(obs))

    def save(self) -> dict:
        """rsl_rl's checkpoint dict, the optimizers' learning rates as floats (rsl_rl's own PPO loads the checkpoint
        into its per-tensor optimizer, which takes no tensor learning rate on CUDA)."""
        saved = super().save()
        for key in ("optimizer_state_dict", "rnd_optimizer_state_dict"):
            for group in saved.get(key, {}).get("param_groups", []):
                group["lr"] = float(group["lr"])
        self.env_state.save_into(saved)
        return saved

    def load(self, loaded_dict: dict, load_cfg: dict | None, strict: bool) -> bool:
        """rsl_rl's ``load``; the optimizer's learning rate stays the device tensor."""
        result = super().load(loaded_dict, load_cfg, strict)  # sets self.learning_rate: copied into self._lr
        for group in self.optimizer.param_groups:
            group["lr"] = self._lr
        if self.rnd:
            for group in self.rnd.optimizer.param_groups:
                group["lr"] = torch.as_tensor(group["lr"], dtype=torch.float32, device=self.device).clone()
        self.env_state.load(loaded_dict)  # restored at the first action of training (not in play or export)
        return result
