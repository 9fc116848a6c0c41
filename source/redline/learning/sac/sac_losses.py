"""The SAC losses as pure functions returning ``(loss, metrics)``, with the formula beside each.

Everything here is fp32 (the precision policy keeps targets, the categorical projection and the losses out of bf16).
Shapes: B transitions, K atoms, A action dimensions.
"""

from __future__ import annotations

import torch


def categorical_projection(atoms: torch.Tensor, probs: torch.Tensor, v_min: float, v_max: float) -> torch.Tensor:
    """Project a distribution with mass ``probs`` at positions ``atoms`` onto the fixed support of K atoms evenly
    spaced on [v_min, v_max] (C51, Bellemare et al. 2017); positions outside are clipped onto the end atoms.

    Args:
        atoms: ``(B, K)`` positions of the shifted atoms (e.g. ``r + d z``).
        probs: ``(B, K)`` their probabilities (rows sum to 1).

    Returns:
        ``(B, K)`` probabilities on the fixed support; each row keeps its total mass.
    """
    num_atoms = probs.shape[-1]
    delta = (v_max - v_min) / (num_atoms - 1)
    # b = (clip(Tz, v_min, v_max) − v_min) / Δz; p splits onto l = ⌊b⌋ with weight (l + 1 − b) and l + 1 with (b − l)
    b = (atoms.clamp(v_min, v_max) - v_min) / delta
    # a NaN position indexes atom 0 but carries NaN mass (w_upper below), so the loss turns NaN and the step is skipped
    lower = b.nan_to_num(0.0).floor().clamp(0, num_atoms - 1)
    upper = (lower + 1).clamp(max=num_atoms - 1)
    w_upper = b - lower  # 0 where b sits on an atom (then lower == b and the whole mass goes there)
    out = torch.zeros_like(probs)
    out.scatter_add_(-1, lower.long(), probs * (1.0 - w_upper))
    out.scatter_add_(-1, upper.long(), probs * w_upper)
    return out


def clipped_double_q_target(
    next_logits: torch.Tensor,
    support: torch.Tensor,
    rewards: torch.Tensor,
    discounts: torch.Tensor,
    entropy_term: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The soft n-step target distribution of the clipped double-Q critic, before projection.

    Of the two target critics' distributions at (s', a'), each transition keeps the one with the smaller mean
    (clipped double Q, as FastTD3 does with distributions); its atoms move to ``r + d (z − α log π(a'|s'))``.

    Args:
        next_logits: ``(2, B, K)`` the target critics' logits at the bootstrap state and the policy's action there.
        support: ``(K,)`` the atoms z.
        rewards: ``(B,)`` the discounted n-step reward sums.
        discounts: ``(B,)`` γ^m of the m steps summed, 0 where the window ended in a termination.
        entropy_term: ``(B,)`` α log π(a'|s').

    Returns:
        ``(atoms (B, K), probs (B, K))``.
    """
    probs = next_logits.softmax(-1)
    means = (probs * support).sum(-1)  # (2, B)
    pick = (means[1] < means[0]).long()  # the critic with the smaller expected value, per transition
    chosen = torch.where(pick.bool().unsqueeze(-1), probs[1], probs[0])
    # Tz = r + d (z − α log π(a'|s'))
    atoms = rewards.unsqueeze(-1) + discounts.unsqueeze(-1) * (support.unsqueeze(0) - entropy_term.unsqueeze(-1))
    return atoms, chosen


def critic_loss(logits: torch.Tensor, target_probs: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Cross-entropy of both critics' distributions against the projected target, summed over critics.

    Args:
        logits: ``(2, B, K)`` the critics' logits at (s, a).
        target_probs: ``(B, K)`` the projected target distribution (no gradient).

    Returns:
        ``(loss, {"critic_loss"})``.
    """
    # L = Σ_i mean_B [ −Σ_k p_k log softmax(l_i)_k ]
    loss = -(target_probs.unsqueeze(0) * logits.log_softmax(-1)).sum(-1).mean(-1).sum()
    return loss, {"critic_loss": loss.detach()}


def actor_loss(
    alpha: torch.Tensor, log_prob: torch.Tensor, q_values: torch.Tensor
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """SAC's policy loss.

    Args:
        alpha: 0-dim temperature (no gradient).
        log_prob: ``(B,)`` log π(a|s) of the reparameterised actions.
        q_values: ``(2, B)`` both critics' expected values at (s, a).

    Returns:
        ``(loss, {"actor_loss", "entropy"})``; entropy is −mean log π.
    """
    q = q_values.min(0).values
    # L = mean_B [ α log π(a|s) − min_i Q_i(s, a) ]
    loss = (alpha * log_prob - q).mean()
    return loss, {"actor_loss": loss.detach(), "entropy": -log_prob.detach().mean()}


def temperature_loss(
    log_alpha: torch.Tensor, log_prob: torch.Tensor, target_entropy: float
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """SAC's automatic temperature loss (Haarnoja et al. 2018b).

    Args:
        log_alpha: 0-dim log α (with gradient).
        log_prob: ``(B,)`` log π(a|s) (no gradient).

    Returns:
        ``(loss, {"alpha_loss"})``.
    """
    # L = −mean_B [ log α · (log π(a|s) + H_target) ]
    loss = -(log_alpha * (log_prob.detach() + target_entropy)).mean()
    return loss, {"alpha_loss": loss.detach()}


def deterministic_actions(mean: torch.Tensor, noise: torch.Tensor, scale: float) -> torch.Tensor:
    """TD3's actions: the deterministic policy plus Gaussian noise, kept within the bound (fp32).

    Args:
        mean: ``(B, A)`` the actor's pre-tanh output.
        noise: ``(B, A)`` the noise already scaled [fraction of the bound] (zeros: the deterministic policy).
        scale: the action bound.

    Returns:
        ``(B, A)``: a = scale · clip(tanh μ + n, −1, 1).
    """
    return scale * (torch.tanh(mean) + noise).clamp(-1.0, 1.0)


def smoothed_target_actions(
    mean: torch.Tensor, noise: torch.Tensor, scale: float, policy_noise: float, noise_clip: float
) -> torch.Tensor:
    """TD3's target policy smoothing (Fujimoto et al. 2018; FastTD3 without a target actor).

    Args:
        mean: ``(B, A)`` the actor's pre-tanh output at the bootstrap state.
        noise: ``(B, A)`` standard normals ε.
        scale: the action bound.

    Returns:
        ``(B, A)``: a' = scale · clip(tanh μ + clip(σ ε, −c, c), −1, 1), σ = ``policy_noise``, c = ``noise_clip``.
    """
    return deterministic_actions(mean, (policy_noise * noise).clamp(-noise_clip, noise_clip), scale)


def deterministic_actor_loss(q_values: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """TD3's policy loss with FastTD3's clipped double Q.

    Args:
        q_values: ``(2, B)`` both critics' expected values at (s, π(s)).

    Returns:
        ``(loss, {"actor_loss"})``.
    """
    # L = −mean_B min_i Q_i(s, π(s))
    loss = -q_values.min(0).values.mean()
    return loss, {"actor_loss": loss.detach()}
