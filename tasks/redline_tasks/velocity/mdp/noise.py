"""Uniform observation noise drawn from the env's per-env streams (Isaac Lab's ``uniform_noise`` uses torch's
global generator)."""

from __future__ import annotations

from typing import Any

import torch
from isaaclab.managers import ObservationGroupCfg
from isaaclab.utils import configclass
from isaaclab.utils.noise import UniformNoiseCfg

from redline.seeding import EnvStreams


class StreamsHandle:
    """Points at an env's :class:`EnvStreams`; deep copies return the handle itself, so the copies of the config
    that Isaac Lab's managers make still reach the env's streams (and their counters)."""

    def __init__(self, streams: EnvStreams) -> None:
        self.streams = streams

    def __deepcopy__(self, memo: dict[int, Any]) -> StreamsHandle:
        return self


def stream_uniform_noise(data: torch.Tensor, cfg: StreamUniformNoiseCfg) -> torch.Tensor:
    """``data`` (num_envs, ...) plus uniform noise in [n_min, n_max) drawn row by row from each env's stream."""
    if cfg.streams is None:
        raise RuntimeError("StreamUniformNoiseCfg has no streams: the env did not bind them (bind_noise_streams)")
    noise = cfg.streams.streams.uniform(None, tuple(data.shape[1:]), cfg.n_min, cfg.n_max)
    return data + noise


@configclass
class StreamUniformNoiseCfg(UniformNoiseCfg):
    """Additive uniform noise (``n_min``, ``n_max``) from the env's per-env streams."""

    func: Any = stream_uniform_noise
    streams: StreamsHandle | None = None
    """Set by the env before its managers are built (:func:`bind_noise_streams`)."""


def bind_noise_streams(observations: Any, streams: EnvStreams) -> None:
    """Point every :class:`StreamUniformNoiseCfg` of the observation groups in ``observations`` at ``streams``."""
    handle = StreamsHandle(streams)
    for group in vars(observations).values():
        if not isinstance(group, ObservationGroupCfg):
            continue
        for term in vars(group).values():
            if isinstance(getattr(term, "noise", None), StreamUniformNoiseCfg):
                term.noise.streams = handle
