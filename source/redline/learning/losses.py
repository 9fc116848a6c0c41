"""The PPO loss pieces as pure functions returning ``(loss, metrics)``.

Every metric is a 0-dim tensor on the inputs' device (detached); nothing here reads a value back to the host.
Inputs are fp32 (the precision policy keeps log-probs, values and targets fp32).
"""

from __future__ import annotations

import torch

Metrics = dict[str, torch.Tensor]


def surrogate_loss(
    log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor, clip: float
) -> tuple[torch.Tensor, Metrics]:
    """Clipped surrogate objective, as a loss to minimise.

    Args:
        log_prob: log pi(a_t | s_t) under the current policy, ``(B,)``.
        old_log_prob: the same under the rollout policy, ``(B,)``.
        advantages: A_t, ``(B,)``.
        clip: epsilon.

    Returns:
        loss = mean_t max(−A_t ρ_t, −A_t clip(ρ_t, 1 − ε, 1 + ε)); metrics ``clip_fraction`` (share of samples with
        |ρ − 1| > ε) and ``approx_kl`` (the low-variance estimator mean[(ρ − 1) − log ρ]).
    """
    log_ratio = log_prob - old_log_prob
    # ρ_t = π(a_t|s_t) / π_old(a_t|s_t)
    ratio = log_ratio.exp()
    # L = mean max(−A ρ, −A clip(ρ, 1−ε, 1+ε))
    loss = torch.max(-advantages * ratio, -advantages * ratio.clamp(1.0 - clip, 1.0 + clip)).mean()
    with torch.no_grad():
        metrics = {
            "clip_fraction": ((ratio - 1.0).abs() > clip).float().mean(),
            "approx_kl": ((ratio - 1.0) - log_ratio).mean(),
        }
    return loss, metrics


def value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, clip: float | None
) -> tuple[torch.Tensor, Metrics]:
    """Value regression loss, optionally clipped around the rollout values (rsl_rl's form, no 1/2 factor).

    Args:
        values: V(s_t) from the current critic, ``(B,)``.
        old_values: V(s_t) recorded during the rollout, ``(B,)``.
        returns: value targets R_t, ``(B,)``.
        clip: epsilon for the value change, or ``None`` for the plain squared error.

    Returns:
        loss = mean max((V − R)^2, (V_old + clip(V − V_old, −ε, ε) − R)^2), or mean (V − R)^2 unclipped; no metrics.
    """
    if clip is None:
        # L = mean (V − R)^2
        return (values - returns).square().mean(), {}
    clipped = old_values + (values - old_values).clamp(-clip, clip)
    # L = mean max((V − R)^2, (V_clip − R)^2)
    return torch.max((values - returns).square(), (clipped - returns).square()).mean(), {}


def entropy_bonus(entropy: torch.Tensor) -> tuple[torch.Tensor, Metrics]:
    """Entropy bonus as a loss: −mean H (the caller scales it by ``entropy_coef``); metric ``entropy`` = mean H."""
    mean = entropy.mean()
    return -mean, {"entropy": mean.detach()}


def explained_variance(values: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
    """1 − Var[R − V] / Var[R] over all elements: 1 is a perfect critic, 0 no better than a constant (0-dim)."""
    return 1.0 - (returns - values).var() / returns.var()
