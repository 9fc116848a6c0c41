"""The off-policy learner's networks: a tanh-squashed Gaussian actor and a C51 clipped double-Q critic.

The actor is an rsl_rl 5.5.1 ``MLPModel`` whose output distribution is :class:`TanhGaussian`: its state dict keeps
rsl_rl's keys, and ``forward`` / ``as_jit`` / ``as_onnx`` / ``output_std`` work as rsl_rl's stock runner, play and
redline's export (:mod:`redline.media.export`) use them, giving the deterministic policy ``action_scale * tanh(mean)``.
"""

from __future__ import annotations

import math

import torch
from rsl_rl.models import MLPModel
from rsl_rl.modules import EmpiricalNormalization
from rsl_rl.modules.distribution import Distribution
from rsl_rl.utils import resolve_nn_activation
from tensordict import TensorDict
from torch import nn
from torch.nn import functional

from redline.learning.precision import Precision
from redline.learning.sac.sac_config import SACActorConfig, SACCriticConfig

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def squash_log_std(raw: torch.Tensor, low: float, high: float) -> torch.Tensor:
    """The network's raw log-std output mapped smoothly into [low, high] (FastSAC / CleanRL)."""
    # log σ = low + (high − low) (tanh(raw) + 1) / 2
    return low + 0.5 * (high - low) * (torch.tanh(raw) + 1.0)


def squashed_sample(
    mean: torch.Tensor, log_std: torch.Tensor, noise: torch.Tensor, scale: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reparameterised tanh-Gaussian actions and their log-probabilities (fp32).

    Args:
        mean, log_std: ``(B, A)`` the pre-tanh Gaussian.
        noise: ``(B, A)`` standard normals ε.
        scale: the action bound.

    Returns:
        ``(actions (B, A), log_prob (B,))``: a = scale · tanh(μ + σ ε), and log π(a|s).
    """
    u = mean + log_std.exp() * noise
    # log π(a) = Σ [ log N(u; μ, σ) − log(scale (1 − tanh² u)) ],  log(1 − tanh² u) = 2 (log 2 − u − softplus(−2u))
    log_normal = -0.5 * noise.square() - log_std - LOG_SQRT_2PI
    log_jacobian = 2.0 * (math.log(2.0) - u - functional.softplus(-2.0 * u)) + math.log(scale)
    return scale * torch.tanh(u), (log_normal - log_jacobian).sum(-1)


class TanhMean(nn.Module):
    """Export-friendly deterministic output: ``scale * tanh(mean)`` of the MLP's ``[mean | raw log std]``."""

    def __init__(self, num_actions: int, scale: float) -> None:
        super().__init__()
        self.num_actions, self.scale = num_actions, scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale * torch.tanh(x[..., : self.num_actions])


class TanhGaussian(Distribution):
    """rsl_rl ``Distribution``: a Gaussian with state-dependent log std, squashed by tanh into ±``action_scale``.

    The MLP outputs ``[mean | raw log std]`` (``2 A``). The learner samples through :func:`squashed_sample`; the
    rsl_rl methods here serve the stock runner and play (deterministic output, ``std`` for its logger).
    """

    def __init__(
        self, output_dim: int, log_std_range: tuple[float, float] = (-5.0, 0.0), action_scale: float = 1.0
    ) -> None:
        super().__init__(output_dim)
        self.log_std_range = (float(log_std_range[0]), float(log_std_range[1]))
        self.action_scale = float(action_scale)
        self._mean = torch.zeros(output_dim)
        self._std = torch.ones(output_dim)
        """The last std seen (``(A,)`` or ``(B, A)``): what rsl_rl's logger reads as ``output_std``."""

    def split(self, mlp_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean, log_std)``, each ``(B, A)``, of the MLP output ``(B, 2 A)``."""
        mean, raw = mlp_output.split(self.output_dim, dim=-1)
        return mean, squash_log_std(raw, *self.log_std_range)

    def update(self, mlp_output: torch.Tensor) -> None:
        mean, log_std = self.split(mlp_output)
        self._mean, self._std = mean, log_std.exp()

    def sample(self) -> torch.Tensor:
        noise = torch.randn_like(self._mean)
        return squashed_sample(self._mean, self._std.log(), noise, self.action_scale)[0]

    def deterministic_output(self, mlp_output: torch.Tensor) -> torch.Tensor:
        return self.action_scale * torch.tanh(mlp_output[..., : self.output_dim])

    def as_deterministic_output_module(self) -> nn.Module:
        return TanhMean(self.output_dim, self.action_scale)

    def set_std(self, std: torch.Tensor) -> None:
        """Record the std the logger reports (the learner's batch mean, ``(A,)``)."""
        self._std = std

    @property
    def input_dim(self) -> int:
        return 2 * self.output_dim

    @property
    def mean(self) -> torch.Tensor:
        return self._mean

    @property
    def std(self) -> torch.Tensor:
        return self._std

    @property
    def entropy(self) -> torch.Tensor:
        """The pre-tanh Gaussian's entropy, summed over actions."""
        return (0.5 + LOG_SQRT_2PI + self._std.log()).sum(-1)

    @property
    def params(self) -> tuple[torch.Tensor, ...]:
        return (self._mean, self._std)


def build_actor(obs: TensorDict, num_actions: int, cfg: SACActorConfig, obs_normalization: bool) -> MLPModel:
    """The policy: ``MLPModel`` over ``cfg.obs_groups`` with a :class:`TanhGaussian` output (``2 A`` MLP outputs)."""
    return MLPModel(
        obs,
        {"actor": list(cfg.obs_groups)},
        "actor",
        num_actions,
        hidden_dims=list(cfg.hidden_dims),
        activation=cfg.activation,
        obs_normalization=obs_normalization,
        distribution_cfg={
            "class_name": TanhGaussian,
            "log_std_range": cfg.log_std_range,
            "action_scale": cfg.action_scale,
        },
    )


def q_network(in_dim: int, cfg: SACCriticConfig) -> nn.Sequential:
    """One distributional Q network: ``[Linear, (LayerNorm), activation] x hidden, Linear -> num_atoms logits``."""
    layers: list[nn.Module] = []
    for width in cfg.hidden_dims:
        layers.append(nn.Linear(in_dim, width))
        if cfg.layer_norm:
            layers.append(nn.LayerNorm(width))
        layers.append(resolve_nn_activation(cfg.activation))
        in_dim = width
    layers.append(nn.Linear(in_dim, cfg.num_atoms))
    return nn.Sequential(*layers)


class DistributionalCritic(nn.Module):
    """Two C51 Q networks on ``[normalised obs | action]``, their support and their observation normaliser.

    Attributes ``obs_groups``, ``obs_normalization`` and ``obs_normalizer`` match rsl_rl's ``MLPModel``, so the
    normaliser update of :func:`redline.learning.models.merge_obs_moments` serves both networks.
    """

    def __init__(self, obs: TensorDict, num_actions: int, cfg: SACCriticConfig, obs_normalization: bool) -> None:
        super().__init__()
        self.obs_groups = list(cfg.obs_groups)
        self.obs_dim = sum(int(obs[g].shape[-1]) for g in self.obs_groups)
        self.obs_normalization = obs_normalization
        self.obs_normalizer: nn.Module = EmpiricalNormalization(self.obs_dim) if obs_normalization else nn.Identity()
        self.qs = nn.ModuleList([q_network(self.obs_dim + num_actions, cfg) for _ in range(2)])
        self.v_min, self.v_max = float(cfg.v_min), float(cfg.v_max)
        self.support: torch.Tensor
        self.register_buffer("support", torch.linspace(cfg.v_min, cfg.v_max, cfg.num_atoms), persistent=False)

    def latent(self, obs: TensorDict) -> torch.Tensor:
        """The normalised observation input, fp32 ``(B, obs_dim)``."""
        x = obs[self.obs_groups[0]] if len(self.obs_groups) == 1 else torch.cat([obs[g] for g in self.obs_groups], -1)
        return self.obs_normalizer(x.float())

    def logits(
        self, latent: torch.Tensor, actions: torch.Tensor, precision: Precision, qs: nn.ModuleList | None = None
    ) -> torch.Tensor:
        """``(2, B, K)`` logits of both Q networks (``qs``: the target copies instead), fp32 heads."""
        x = torch.cat((latent, actions), dim=-1)
        nets: list[nn.Sequential] = list(self.qs if qs is None else qs)  # type: ignore[arg-type]
        return torch.stack([precision.mlp_forward(list(net)[:-1], net[-1], x) for net in nets])  # type: ignore[arg-type]

    def expected(self, logits: torch.Tensor) -> torch.Tensor:
        """Expected values ``(..., B)`` of ``(..., B, K)`` logits."""
        return (logits.softmax(-1) * self.support).sum(-1)
