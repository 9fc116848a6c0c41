"""Generalised advantage estimation as pure fp32 functions, vectorised over environments.

Terminated and truncated steps stay apart. A terminated step has no future: its next value is zero. A truncated step
(time-out) does have one, so it bootstraps from ``next_values[t]``, the value of the episode's next state, which the
caller supplies (:func:`next_values`); in both cases the advantage recursion stops at the episode boundary.
"""

from __future__ import annotations

import torch


def next_values(
    values: torch.Tensor, last_values: torch.Tensor, truncated: torch.Tensor, bootstrap_values: torch.Tensor
) -> torch.Tensor:
    """V(s_{t+1}) of the same episode for each step, shape ``(T, N)``.

    Args:
        values: V(s_t) from the rollout, ``(T, N)``.
        last_values: V(s_T) of the observation after the last step, ``(N,)``.
        truncated: time-out flags, ``(T, N)`` bool. After a time-out the env has reset, so ``values[t + 1]`` belongs
            to the next episode; the bootstrap value is used instead.
        bootstrap_values: the value to bootstrap a time-out from, ``(T, N)`` (read only where ``truncated``). Isaac
            Lab's env wrapper returns the reset observation, not the final one, so the learner passes V(s_t) here,
            the same approximation as rsl_rl's ``r_t += gamma * V(s_t)`` on time-outs.
    """
    shifted = torch.cat((values[1:], last_values.unsqueeze(0)), dim=0)
    return torch.where(truncated, bootstrap_values, shifted)


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    next_values: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Advantages and returns (value targets) by GAE, in fp32.

    Args:
        rewards: r_t, ``(T, N)``.
        values: V(s_t), ``(T, N)``.
        next_values: V(s_{t+1}) of the same episode, ``(T, N)`` (see :func:`next_values`).
        terminated: episode ended in a terminal state at step t, ``(T, N)`` bool.
        truncated: episode was cut by a time-out at step t, ``(T, N)`` bool.
        gamma: discount factor.
        lam: GAE lambda.

    Returns:
        ``(advantages, returns)``, both ``(T, N)`` fp32, with returns = advantages + values.
    """
    rewards, values, next_values = rewards.float(), values.float(), next_values.float()
    not_terminated = (~terminated).float()
    not_done = (~(terminated | truncated)).float()
    # δ_t = r_t + γ V(s_{t+1}) (1 − term_t) − V(s_t), for all t at once
    deltas = rewards + gamma * next_values * not_terminated - values
    decay = (gamma * lam) * not_done
    advantages = torch.empty_like(deltas)
    advantage = torch.zeros_like(deltas[0])
    # The recursion is a first-order linear scan backwards in time: each step needs the next one's result, so it runs
    # as a loop over T (16-64 steps), each iteration one fused multiply-add over all N envs. The loop-free forms
    # either divide by cumulative products of γλ(1 − done), which underflow or hit zero at episode ends, or build a
    # T x T x N matrix; neither is worth it at these T, and under CUDA-graph capture the loop costs nothing extra.
    for t in range(deltas.shape[0] - 1, -1, -1):
        # A_t = δ_t + γλ (1 − done_t) A_{t+1}
        advantage = torch.addcmul(deltas[t], decay[t], advantage)
        advantages[t] = advantage
    # R_t = A_t + V(s_t)
    returns = advantages + values
    return advantages, returns


def normalize(x: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """(x − mean) / (std + eps) over all elements, in fp32 (rsl_rl's advantage normalisation)."""
    x = x.float()
    std, mean = torch.std_mean(x)
    return (x - mean) / (std + eps)
