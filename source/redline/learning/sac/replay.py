"""The replay: a ring buffer per env on TensorDict, sampled by counter-based draws, n-step returns at sampling.

Each field is stored ``(capacity, num_envs, ...)`` on the learner's device. Writes and reads make no host read: the
write position and the fill level are host ints (the host counts its own writes) mirrored into device tensors, and
the sampled time indices come from Philox4x32 (:mod:`redline.seeding.philox`) keyed by the seed and counted by
``(update, global env id, draw)``. Global sample ``j`` of an update belongs to global env ``j mod G`` (G envs over
all ranks), so each rank draws exactly the global minibatch's samples of its own envs: R ranks x N/R envs and one
process x N envs sample the same global minibatch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from tensordict import TensorDict

from redline.seeding.philox import MASK32, philox4x32, to_unit_float
from redline.seeding.plan import seed_plan

FIELDS = ("obs", "next_obs", "actions", "rewards", "dones", "time_outs")
"""What each stored transition holds: the observation groups before and after (the true final observation where the
episode ended), the action, the reward, ``dones`` (the episode ended: terminated or timed out) and ``time_outs``."""


def philox_key(seed: int) -> tuple[int, int]:
    """The Philox key of a run's minibatch and update-noise draws (the seed plan's minibatch seed, two words)."""
    minibatch = seed_plan(seed).minibatch
    return (minibatch & MASK32, (minibatch >> 32) & MASK32)


class ReplayBuffer:
    """Ring buffer of ``capacity`` transitions per env for ``num_envs`` envs (this rank's).

    Args:
        capacity: transitions kept per env.
        obs: one observation TensorDict, batch ``[num_envs]``, for the groups' shapes.
        groups: the observation groups to keep.
        num_actions: A.
        device: where everything lives.
        env_offset: global id of this rank's env 0.
        global_num_envs: envs over all ranks (None: ``num_envs``, a single process).
    """

    def __init__(
        self,
        capacity: int,
        obs: TensorDict,
        groups: Sequence[str],
        num_actions: int,
        device: torch.device | str = "cpu",
        env_offset: int = 0,
        global_num_envs: int | None = None,
    ) -> None:
        self.device = torch.device(device)
        self.capacity = capacity
        self.num_envs = int(obs.batch_size[0])
        self.env_offset = env_offset
        self.global_num_envs = self.num_envs if global_num_envs is None else global_num_envs
        self.groups = tuple(dict.fromkeys(groups))
        shape = (capacity, self.num_envs)
        kw: dict[str, Any] = {"device": self.device}

        def groups_td() -> TensorDict:
            return TensorDict(
                {g: torch.zeros(*shape, *obs[g].shape[1:], dtype=obs[g].dtype, **kw) for g in self.groups},
                batch_size=shape,
                device=self.device,
            )

        self.data = TensorDict(
            {
                "obs": groups_td(),
                "next_obs": groups_td(),
                "actions": torch.zeros(*shape, num_actions, **kw),
                "rewards": torch.zeros(*shape, **kw),
                "dones": torch.zeros(*shape, dtype=torch.bool, **kw),
                "time_outs": torch.zeros(*shape, dtype=torch.bool, **kw),
            },
            batch_size=shape,
            device=self.device,
        )
        self.pos = 0
        """Next slot to write (host int)."""
        self.size = 0
        """Filled slots per env (host int), at most ``capacity``."""
        self.steps = 0
        """Transitions added per env since the start (host int)."""
        self._size_t = torch.zeros((), dtype=torch.int64, **kw)
        self._start_t = torch.zeros((), dtype=torch.int64, **kw)
        """Device mirrors of the fill level and of the oldest slot, read by :meth:`sample`."""
        self._plan: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def add(
        self,
        obs: Mapping[str, torch.Tensor],
        actions: torch.Tensor,
        rewards: torch.Tensor,
        dones: torch.Tensor,
        time_outs: torch.Tensor,
        next_obs: Mapping[str, torch.Tensor],
    ) -> None:
        """Write one vector env step (every input ``(num_envs, ...)``; ``next_obs`` the true next observation)."""
        slot = self.data[self.pos]
        for g in self.groups:
            slot["obs", g].copy_(obs[g])
            slot["next_obs", g].copy_(next_obs[g])
        slot["actions"].copy_(actions)
        slot["rewards"].copy_(rewards.reshape(-1))
        slot["dones"].copy_(dones.reshape(-1) != 0)
        slot["time_outs"].copy_(time_outs.reshape(-1) != 0)
        self.pos = (self.pos + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)
        self.steps += 1
        self._sync_positions()

    def _sync_positions(self) -> None:
        self._size_t.fill_(self.size)
        self._start_t.fill_((self.pos - self.size) % self.capacity)

    def newest(self, k: int) -> TensorDict:
        """The observation groups of the newest ``k`` writes, flat ``(k * num_envs, ...)`` (normaliser updates)."""
        k = min(k, self.size)
        slots = (torch.arange(k, device=self.device) + (self.pos - k)) % self.capacity  # oldest first, no copy
        return self.data["obs"][slots].reshape(-1)

    def local_plan(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """This rank's share of a global minibatch of ``batch_size``: ``(local env, global env, draw)``, each
        ``(b,)`` int64, for the global samples j with ``j mod G`` among this rank's envs (global env ``j mod G``,
        draw ``j div G``). Fixed per batch size: computed once on the host."""
        if batch_size not in self._plan:
            g_all = self.global_num_envs
            j = torch.arange(batch_size, dtype=torch.int64)
            env = j % g_all
            mine = (env >= self.env_offset) & (env < self.env_offset + self.num_envs)
            env, draw = env[mine], (j // g_all)[mine]
            self._plan[batch_size] = tuple(t.to(self.device) for t in (env - self.env_offset, env, draw))  # type: ignore[assignment]
        return self._plan[batch_size]

    def draw(
        self, key: tuple[int, int], update: torch.Tensor, batch_size: int, streams: int = 0, width: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """This rank's share of an update's random draws, in one Philox call: each sample's logical time index
        (0 = oldest, uniform over the filled slots) and ``streams`` rows of ``width`` standard normals (Box-Muller).
        A pure function of (key, update, global env id, draw) and the fill level.

        Args:
            key: the Philox key (two 32-bit words of the seed).
            update: 0-dim int64 device tensor, the gradient step's index.

        Returns:
            ``(times (b,) int64, normals (b, streams, width) fp32)``.
        """
        _, global_env, draw = self.local_plan(batch_size)
        per_stream = -(-width // 4)  # 4 normals per counter
        blocks = 1 + streams * per_stream  # counter word 3: block 0 the time index, then the normals
        shape = (draw.shape[0], blocks)
        counter = torch.stack(
            (
                (update.to(torch.int64) & MASK32).expand(shape),
                global_env.unsqueeze(-1).expand(shape),
                draw.unsqueeze(-1).expand(shape),
                torch.arange(blocks, device=self.device, dtype=torch.int64).expand(shape),
            ),
            dim=-1,
        )
        words = philox4x32(counter, key)  # (b, blocks, 4)
        times = (words[:, 0, 0] * self._size_t) >> 32  # ⌊w · size / 2^32⌋ ∈ [0, size)
        pairs = words[:, 1:].reshape(shape[0], streams, per_stream * 2, 2)
        u1 = to_unit_float(pairs[..., 0]).mul(-1.0).add(1.0)  # (0, 1]: the log stays finite
        u2 = to_unit_float(pairs[..., 1])
        # z = sqrt(−2 ln u1) · (cos 2π u2, sin 2π u2)
        radius = torch.sqrt(-2.0 * torch.log(u1))
        angle = (2.0 * torch.pi) * u2
        normals = torch.stack((radius * torch.cos(angle), radius * torch.sin(angle)), dim=-1)
        return times, normals.reshape(shape[0], streams, per_stream * 4)[..., :width]

    def sample(
        self,
        key: tuple[int, int],
        update: torch.Tensor,
        batch_size: int,
        n_step: int,
        gamma: float,
        reward_scale: torch.Tensor | None = None,
        noise: tuple[int, int] = (0, 0),
    ) -> TensorDict:
        """This rank's share of global minibatch ``update``, with n-step returns.

        The window of transition t takes steps t .. t+m−1, m ≤ n: it stops after the first step that ended the
        episode, and at the newest stored step. A window that ends in a termination does not bootstrap; one that
        ends in a time-out bootstraps from the stored true final observation.

        Returns:
            batch ``[b]``: ``obs`` (groups), ``actions`` ``(b, A)``, ``rewards`` ``(b,)`` = Σ_k γ^k r_{t+k} (times
            ``reward_scale`` when given), ``discounts`` ``(b,)`` = γ^m (0 after a termination), ``next_obs`` (the
            groups at the bootstrap state) and, for ``noise=(streams, width)``, ``noise`` ``(b, streams, width)``
            standard normals (:meth:`draw`).
        """
        env, _, _ = self.local_plan(batch_size)
        t, normals = self.draw(key, update, batch_size, *noise)
        offsets = torch.arange(n_step, device=self.device)
        logical = t.unsqueeze(-1) + offsets  # (b, n)
        valid = logical < self._size_t
        phys = (self._start_t + torch.minimum(logical, self._size_t - 1)) % self.capacity
        envs = env.unsqueeze(-1).expand_as(phys)
        d = self.data
        rewards, dones, time_outs = d["rewards"][phys, envs], d["dones"][phys, envs], d["time_outs"][phys, envs]
        if reward_scale is not None:
            rewards = rewards * reward_scale
        # step k is in the window when it is stored and no earlier step of the window ended the episode
        ended_before = torch.cumsum(dones.to(torch.int64), dim=-1) - dones.to(torch.int64)
        included = valid & (ended_before == 0)
        powers = gamma ** offsets.to(torch.float32)
        # R = Σ_{k<m} γ^k r_{t+k}
        returns = (included * powers * rewards).sum(-1)
        m = included.sum(-1)  # ≥ 1: step t itself is always stored and included
        last = (m - 1).unsqueeze(-1)
        last_phys = phys.gather(-1, last).squeeze(-1)
        terminated = (dones & ~time_outs).gather(-1, last).squeeze(-1)
        # d = γ^m, or 0 where the window ended in a termination
        discounts = torch.where(terminated, 0.0, gamma ** m.to(torch.float32))
        first = phys[:, 0]
        return TensorDict(
            {
                "obs": d["obs"].apply(lambda x: x[first, env], batch_size=[t.shape[0]]),
                "actions": d["actions"][first, env],
                "rewards": returns,
                "discounts": discounts,
                "next_obs": d["next_obs"].apply(lambda x: x[last_phys, env], batch_size=[t.shape[0]]),
                "noise": normals,
            },
            batch_size=[t.shape[0]],
            device=self.device,
        )

    def state_dict(self, with_data: bool = True) -> dict[str, Any]:
        """The buffer (copies) and its positions; ``with_data=False``: an empty buffer's positions."""
        if not with_data:
            return {"pos": 0, "size": 0, "steps": self.steps, "data": None}
        return {"pos": self.pos, "size": self.size, "steps": self.steps, "data": self.data.clone().to_dict()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict` (a state without data leaves an empty buffer)."""
        if state.get("data") is not None:
            self.data.update_(TensorDict(state["data"], batch_size=self.data.batch_size, device=self.device))
        else:
            self.data.zero_()
        self.pos, self.size, self.steps = int(state["pos"]), int(state["size"]), int(state["steps"])
        self._sync_positions()
