"""Episode returns and lengths accumulated on the device, read once per iteration (no per-step host sync), and
rsl_rl's random initial episode lengths drawn from per-env streams."""

from __future__ import annotations

from typing import Any

import torch

from redline.runs.checkpoints import env_streams
from redline.seeding import Strategy


class EpisodeTracker:
    """Running return/length per env; sums over the episodes that finish within one logging window.

    ``step`` is called every env step and only does device arithmetic; ``read`` is the one host sync per
    iteration. Reported means are over the episodes that finished since the previous ``read`` (rsl_rl reports
    the last 100 finished episodes instead); a window in which none finished keeps the previous value.

    Args:
        num_envs: envs in this process.
        device: where the env's rewards live.
    """

    def __init__(self, num_envs: int, device: torch.device | str) -> None:
        self._return = torch.zeros(num_envs, device=device)  # (num_envs,) return so far of the current episode
        self._length = torch.zeros(num_envs, device=device)  # (num_envs,) steps so far of the current episode
        self._sums = torch.zeros(3, device=device)  # [finished episodes, their return sum, their length sum]
        self._log_sums: dict[str, torch.Tensor] = {}  # key -> [sum, count] of the env's extras["log"] values
        self._last: dict[str, float | None] = {"mean_reward": None, "mean_episode_length": None}

    def step(self, rewards: torch.Tensor, dones: torch.Tensor, log: dict[str, torch.Tensor] | None = None) -> None:
        """Add one step: ``rewards`` (num_envs,), ``dones`` (num_envs,) (terminated or truncated)."""
        done = dones.to(self._return.dtype)
        self._return += rewards
        self._length += 1.0
        finished = torch.stack((done.sum(), (self._return * done).sum(), (self._length * done).sum()))
        self._sums += finished
        self._return *= 1.0 - done
        self._length *= 1.0 - done
        for key, value in (log or {}).items():
            value = torch.as_tensor(value, dtype=torch.float32, device=self._sums.device).reshape(-1)
            acc = self._log_sums.setdefault(key, torch.zeros(2, device=self._sums.device))
            acc += torch.stack((value.sum(), torch.full((), float(value.numel()), device=acc.device)))  # no H2D copy

    def read(self, comm: Any = None) -> dict[str, float | None]:
        """``mean_reward``, ``mean_episode_length`` and ``episode/<key>`` means for the window; starts a new one.

        Args:
            comm: a data-parallel :class:`~redline.learning.distributed.Communicator`: the episode counts and sums
                are summed over all ranks first (every rank must call ``read``); ``episode/<key>`` stay this rank's.
        """
        if comm is not None and comm.distributed:
            comm.all_reduce_(self._sums)
        values = torch.cat([self._sums, *self._log_sums.values()]).tolist()  # the one host sync
        count, ret, length = values[:3]
        if count > 0:
            self._last = {"mean_reward": ret / count, "mean_episode_length": length / count}
        out: dict[str, float | None] = dict(self._last)
        for i, key in enumerate(self._log_sums):
            s, n = values[3 + 2 * i : 5 + 2 * i]
            out[f"episode/{key.split('/')[-1]}"] = s / n if n else None
        self._sums.zero_()
        self._log_sums.clear()
        return out


def randomize_episode_lengths(env: Any) -> None:
    """rsl_rl's ``init_at_random_ep_len``: start each env at a random step of its episode.

    ``episode_length_buf`` becomes uniform over ``[0, max_episode_length)``, so time-outs spread over iterations
    instead of arriving for every env in one wave every ``max_episode_length`` steps. With per-env streams
    (``per_env``/``eval``) each env draws its offset from its own stream, so the offsets do not depend on how the
    envs are split over processes; under ``shared`` (or an env without streams) from torch's generator, as rsl_rl.

    Args:
        env: an rsl_rl vec env (``episode_length_buf`` ``(num_envs,)``, ``max_episode_length`` [steps]).
    """
    buf, high = env.episode_length_buf, int(env.max_episode_length)
    streams = env_streams(env)
    if streams is None or streams.strategy is Strategy.SHARED:
        env.episode_length_buf = torch.randint_like(buf, high=high)
        return
    u = streams.uniform(None, (1,)).reshape(-1).to(buf.device)
    env.episode_length_buf = (u * high).floor().clamp(max=high - 1).to(buf.dtype)  # floor(u · high) ∈ [0, high)
