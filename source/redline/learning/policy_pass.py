"""The rollout's policy pass when it runs eagerly (no capture): the same numbers as :meth:`PPO._policy`, in fewer ops.

Per env step the policy pass computes the action mean and the value, samples a = mu + sigma * eps, its log-prob, and
writes the step into the storage. Eagerly, on the CPU, each torch op costs microseconds of dispatch whatever its
size, so this pass does per rollout what does not change within one (the std, its log, the observation normalisers'
denominators, the ``action_std`` storage rows) and writes the heads' outputs straight into the storage step's views
(``out=``) instead of copying them there. The arithmetic is op for op that of the plain pass (``F.linear`` is
``addmm`` for a 2-D input with a bias; rsl_rl's ``EmpiricalNormalization`` is (x - mean) / (std + eps)), so the
results are bitwise the same; ``tests/learning/test_ppo.py`` holds it to that.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch
from torch import nn

from redline.learning.models import PrecisionNet
from redline.learning.storage import RolloutStorage
from redline.learning.value_norm import ValueNormalizer

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class EagerPolicyPass:
    """:meth:`PPO.act`'s policy pass and storage write, eager, fp32 bodies (see the module docstring).

    Args:
        actor: the actor's forward under the precision policy.
        critic: the critic's.
        value_normalizer: turns the critic's output into reward units.
        storage: the rollout storage the step is written to.
    """

    def __init__(
        self, actor: PrecisionNet, critic: PrecisionNet, value_normalizer: ValueNormalizer, storage: RolloutStorage
    ) -> None:
        self.actor, self.critic, self.value_normalizer, self.storage = actor, critic, value_normalizer, storage
        self._std = self._log_std = self._value_std = torch.empty(0)
        self._denominators: dict[int, torch.Tensor] = {}

    @staticmethod
    def applies(actor: PrecisionNet, critic: PrecisionNet) -> bool:
        """The nets have what this pass assumes: fp32 bodies, biased linear heads, rsl_rl's normaliser or none."""
        return all(
            not net.precision.is_bf16
            and net.head.bias is not None
            and (not net.model.obs_normalization or hasattr(net.model.obs_normalizer, "_std"))
            for net in (actor, critic)
        )

    def begin_rollout(self, std: torch.Tensor) -> None:
        """Take the rollout's constants: the action std ``(A,)`` (written into every ``action_std`` row of the
        storage), its log, the normalisers' (std + eps) and the value normaliser's scale."""
        self._std, self._log_std = std, std.log()
        self.storage.data["action_std"].copy_(std.expand_as(self.storage.data["action_std"]))
        self._denominators = {
            id(net): net.model.obs_normalizer._std + net.model.obs_normalizer.eps
            for net in (self.actor, self.critic)
            if net.model.obs_normalization
        }
        self._value_std = self.value_normalizer.std if self.value_normalizer.enabled else torch.empty(0)

    def __call__(self, obs: Mapping[str, torch.Tensor], noise: torch.Tensor) -> torch.Tensor:
        """Sample the step's actions from ``obs`` and standard normals ``noise`` ``(N, A)``, write the step (obs,
        actions, mean, log-prob, value) into the storage; returns the actions ``(N, A)`` fp32 (not a storage view:
        the env may keep or change them)."""
        slot = self.storage.slot()
        mean = self._forward(self.actor, obs, slot["action_mean"])
        value_out = slot["values"] if not self.value_normalizer.enabled else None
        value = self._forward(self.critic, obs, None if value_out is None else value_out.unsqueeze(-1))
        if value_out is None:
            vn = self.value_normalizer
            torch.addcmul(vn.mean, value.squeeze(-1), self._value_std, out=slot["values"])  # V = mu + sigma * v
        # a = μ + σ ε
        actions = torch.addcmul(mean, self._std, noise if noise.dtype == mean.dtype else noise.to(mean.dtype))
        # log p = sum_i [ -(a_i - mu_i)^2 / (2 sigma_i^2) - log sigma_i ] - A log(2 pi) / 2
        z = (actions - mean) / self._std
        torch.sub((-0.5 * z.square() - self._log_std).sum(-1), _HALF_LOG_2PI * actions.shape[-1], out=slot["log_probs"])
        slot["actions"].copy_(actions)
        for key, view in slot.items():
            if key.startswith("obs/"):
                view.copy_(obs[key[4:]])
        return actions

    def normalise(self, net: PrecisionNet, x: torch.Tensor) -> torch.Tensor:
        """rsl_rl's ``EmpiricalNormalization`` of ``x`` with the rollout's (std + eps)."""
        return (x - net.model.obs_normalizer._mean) / self._denominators[id(net)]

    def _forward(self, net: PrecisionNet, obs: Mapping[str, torch.Tensor], out: torch.Tensor | None) -> torch.Tensor:
        """The net's head output ``(B, out_dim)``, into ``out`` when given."""
        groups = net.model.obs_groups
        x = obs[groups[0]] if len(groups) == 1 else torch.cat([obs[g] for g in groups], dim=-1)
        if net.model.obs_normalization:
            x = self.normalise(net, x)
        if x.dtype != torch.float32:
            x = x.float()
        for layer in net.body:
            x = layer(x)
        head: nn.Linear = net.head
        if out is None:
            return torch.addmm(head.bias, x, head.weight.t())
        return torch.addmm(head.bias, x, head.weight.t(), out=out)
