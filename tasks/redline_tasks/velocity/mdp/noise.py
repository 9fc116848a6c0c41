"""Uniform observation noise drawn from the env's per-env streams (Isaac Lab's ``uniform_noise`` uses torch's
global generator, and its noise functions never see the env, so redline's noise is part of the observation term)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from isaaclab.envs import ManagerBasedEnv

from .events import streams_of


def noisy(
    env: ManagerBasedEnv,
    term: Callable[..., torch.Tensor],
    n_min: float,
    n_max: float,
    group: str = "policy",
    term_params: dict[str, Any] | None = None,
) -> torch.Tensor:
    """``term(env, **term_params)`` (num_envs, ...) plus uniform noise in [n_min, n_max) drawn row by row from each
    env's own stream, where Isaac Lab adds its noise (before clipping and scaling).

    Isaac Lab's switch applies: no noise when the observation group ``group`` has ``enable_corruption`` off. The
    observation manager's first call, which only sizes the term, draws nothing.
    """
    data = term(env, **(term_params or {}))
    if not hasattr(env, "observation_manager") or not getattr(env.cfg.observations, group).enable_corruption:
        return data
    return data + streams_of(env).uniform(None, tuple(data.shape[1:]), n_min, n_max)


def noisy_term(term: Callable[..., torch.Tensor], n_min: float, n_max: float, **params: Any) -> dict[str, Any]:
    """The ``func``/``params`` of an ``ObservationTermCfg`` for :func:`noisy` (``ObsTerm(**noisy_term(...))``);
    ``params`` are ``term``'s own."""
    return {"func": noisy, "params": {"term": term, "n_min": n_min, "n_max": n_max, "term_params": params}}
