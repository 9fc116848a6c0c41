"""Episode returns and lengths accumulated on the device, read once per iteration (no per-step host sync), and
rsl_rl's random initial episode lengths drawn from per-env streams."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from redline.seeding import Strategy
from redline.seeding.state import env_streams

HISTORY = 100
"""Finished episodes in ``mean_reward`` / ``mean_episode_length`` (rsl_rl's ``rewbuffer``/``lenbuffer`` length)."""


class EpisodeTracker:
    """Running return/length per env and the episode statistics of both learners, kept on the device.

    ``step`` is called every env step and does a few device operations (add the rewards, keep a copy of the running
    returns and lengths, zero the finished envs'); ``read`` (once per iteration) files the kept steps into the
    statistics in one batch and is the one host sync. Two statistics, with the same meaning for the redline and the
    rsl_rl learner:

    - ``mean_reward`` / ``mean_episode_length``: over the last :data:`HISTORY` finished episodes, as rsl_rl's
      ``Train/mean_reward`` (a ring buffer on the device; when more than :data:`HISTORY` finish in one step, those of
      the highest env ids are kept, as rsl_rl's deque keeps the last ones it is given);
    - ``mean_reward_window``: over the episodes that finished since the previous ``read`` (None if none did);
    - ``episodes`` / ``time_outs``: how many episodes finished since the previous ``read``, and how many of them by
      the time limit (``extras["time_outs"]``), exact counts, where Isaac Lab's ``extras["log"]`` (and so
      ``episode/<key>``) repeats the last resets' figures on every step until the next reset.

    Args:
        num_envs: envs in this process.
        device: where the env's rewards live.
    """

    PENDING_STEPS = 256
    """Steps kept before they are filed without a ``read`` (bounds the memory of a caller that never reads)."""

    def __init__(self, num_envs: int, device: torch.device | str) -> None:
        self._return = torch.zeros(num_envs, device=device)  # (num_envs,) return so far of the current episode
        self._length = torch.zeros(num_envs, device=device)  # (num_envs,) steps so far of the current episode
        self._sums = torch.zeros(2, device=device)  # [episodes finished in the window, their return sum]
        self._time_outs = torch.zeros((), device=device)  # episodes of the window that ended by the time limit
        self._history = torch.zeros(2, HISTORY + 1, device=device)  # [return; length] of the last HISTORY + a spare
        self._written = torch.zeros((), dtype=torch.long, device=device)  # episodes written to the ring so far
        self._log_sums: dict[str, torch.Tensor] = {}  # key -> [sum, count] of the env's extras["log"] values
        self._pending: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []  # (finished, return, length)
        self._pending_time_outs: list[torch.Tensor] = []  # (num_envs,) finished by the time limit, per pending step
        self._pending_logs: list[Mapping[str, Any]] = []  # the env's extras["log"] of the pending steps

    def step(self, rewards: torch.Tensor, dones: torch.Tensor, extras: Mapping[str, Any] | None = None) -> None:
        """Add one step: ``rewards`` (num_envs,), ``dones`` (num_envs,) (terminated or truncated), and the env's
        ``extras["log"]`` means (Isaac Lab's per-episode reward terms, terminations, metrics) and
        ``extras["time_outs"]`` (num_envs,) (which dones are the time limit's; none when absent)."""
        finished = (dones if dones.dim() == 1 else dones.reshape(-1)) > 0
        time_outs = (extras or {}).get("time_outs")
        if time_outs is not None:
            self._pending_time_outs.append(finished & (time_outs.reshape(-1) > 0))
        rewards = rewards if rewards.dim() == 1 else rewards.reshape(-1)
        rewards = rewards if rewards.dtype == self._return.dtype else rewards.to(self._return.dtype)
        self._return += torch.nan_to_num(rewards, nan=0.0)
        self._length += 1.0
        self._pending.append((finished, self._return.clone(), self._length.clone()))
        self._return.masked_fill_(finished, 0.0)
        self._length.masked_fill_(finished, 0.0)
        log = (extras or {}).get("log")
        if log:
            self._pending_logs.append(log)
        if len(self._pending) >= self.PENDING_STEPS:
            self._file()

    def _file(self) -> None:
        """File the pending steps into the window sums, the ring buffer and the log sums, in one batch: the ring
        ends as step-by-step writes leave it (each step's finished envs in env order, the first of a step beyond
        :data:`HISTORY` skipped), the window's per-step sums are added in step order."""
        if self._pending:
            finished, returns, lengths = (torch.stack(x) for x in zip(*self._pending, strict=True))  # (S, N) each
            self._pending.clear()
            done = finished.to(returns.dtype)
            for row in torch.stack((done.sum(1), (returns * done).sum(1)), dim=1):  # (S, 2), summed in step order
                self._sums += row
            count = finished.sum(1)  # (S,) episodes finished at each step
            skipped = (count - HISTORY).clamp(min=0)  # per step, the first ones beyond HISTORY are never written
            kept = count - skipped
            order = torch.cumsum(finished, 1) - 1  # (S, N): an env's rank among its step's finished envs
            # episode k of step s gets ring index written + (kept before step s) + k - skipped_s; only the last
            # HISTORY indices survive (a later write to the same slot would overwrite the earlier one)
            index = self._written + (torch.cumsum(kept, 0) - kept - skipped)[:, None] + order
            total = self._written + kept.sum()
            write = finished & (order >= skipped[:, None]) & (index >= total - HISTORY)
            slot = torch.where(write, index % HISTORY, HISTORY)  # every other env writes the spare slot HISTORY
            self._history[:, slot.reshape(-1)] = torch.stack((returns.reshape(-1), lengths.reshape(-1)))
            self._written.copy_(total)
        if self._pending_time_outs:
            self._time_outs += torch.stack(self._pending_time_outs).sum()
            self._pending_time_outs.clear()
        keys: dict[str, list[torch.Tensor]] = {}
        for log in self._pending_logs:
            for key, value in log.items():
                keys.setdefault(key, []).append(torch.as_tensor(value, dtype=torch.float32).reshape(-1))
        self._pending_logs.clear()
        for key, values in keys.items():
            flat = torch.cat([v.to(self._sums.device) for v in values])
            acc = self._log_sums.setdefault(key, torch.zeros(2, device=self._sums.device))
            acc += torch.stack((flat.sum(), torch.full((), float(flat.numel()), device=acc.device)))  # no H2D copy

    STATE_LAYOUT = {"return": "env", "length": "env", "sums": "shared", "history": "shared", "written": "shared"}
    """How :meth:`state_dict`'s values lie over the envs (:mod:`redline.run_state.layout`): the running episodes per
    env; the window's sums and ``(2, HISTORY + 1)`` ring are the rank's, and a run regrouped onto another process
    count continues rank 0's."""

    def state_dict(self) -> dict[str, torch.Tensor]:
        """What the next ``read`` depends on (the pending steps filed first): per env (``return``, ``length``: the
        running episodes) and the window (sums, ring of the last :data:`HISTORY` episodes); ``extras["log"]`` sums
        and the time-out count are left out (empty after a ``read``, where the runner saves)."""
        self._file()
        names = ("_return", "_length", "_sums", "_history", "_written")
        return {name.lstrip("_"): getattr(self, name).clone() for name in names}

    def load_state_dict(self, state: Mapping[str, torch.Tensor]) -> None:
        """Restore :meth:`state_dict` (same env count)."""
        self._pending.clear()
        self._pending_time_outs.clear()
        self._pending_logs.clear()
        self._log_sums.clear()
        self._time_outs.zero_()
        for name, value in state.items():
            mine = getattr(self, f"_{name}")
            if mine.shape != value.shape:
                raise ValueError(f"episode tracker: {name} has shape {tuple(value.shape)}, not {tuple(mine.shape)}")
            mine.copy_(value)

    def read(self, comm: Any = None) -> dict[str, float | None]:
        """``mean_reward``, ``mean_episode_length``, ``mean_reward_window``, the ``episodes`` and ``time_outs``
        counts and ``episode/<key>`` means; starts a new window.

        Args:
            comm: a data-parallel :class:`~redline.learning.distributed.Communicator`: the counts and sums are summed
                over all ranks first (every rank must call ``read``), so the means cover the last :data:`HISTORY`
                episodes of every rank and the counts are every rank's; ``episode/<key>`` stay this rank's.
        """
        self._file()
        kept = self._written.clamp(max=HISTORY).to(self._sums.dtype)
        totals = torch.cat(
            (self._sums, kept.reshape(1), self._history[:, :HISTORY].sum(dim=1), self._time_outs.reshape(1))
        )
        if comm is not None and comm.distributed:
            comm.all_reduce_(totals)
        values = torch.cat([totals, *self._log_sums.values()]).tolist()  # the one host sync
        count, ret, kept_n, kept_ret, kept_len, time_outs = values[:6]
        out: dict[str, float | None] = {
            "mean_reward": kept_ret / kept_n if kept_n else None,
            "mean_episode_length": kept_len / kept_n if kept_n else None,
            "mean_reward_window": ret / count if count else None,
            "episodes": round(count),
            "time_outs": round(time_outs),
        }
        for i, key in enumerate(self._log_sums):
            s, n = values[6 + 2 * i : 8 + 2 * i]
            out[episode_key(key)] = s / n if n else None
        self._sums.zero_()
        self._time_outs.zero_()
        self._log_sums.clear()
        return out


def episode_key(key: str) -> str:
    """The ``metrics.jsonl`` key of an env's ``extras["log"]`` entry: ``episode/`` + the env's own key, whole
    (``Episode_Reward/x`` and ``Episode_Termination/x`` stay apart)."""
    return f"episode/{key}"


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
