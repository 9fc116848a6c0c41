"""Per-env random streams: every draw a pure function of (seed, global env id, episode, draw index).

Strategies (one sentence of guarantee each):

- ``shared``: Isaac Lab's behaviour; all envs of a process draw from torch's global generator (seeded with
  base seed + global rank), so for one seed and one env count the numbers equal stock Isaac Lab's.
- ``per_env``: env ``g``'s draws depend only on (seed, g, episode, draw index), so they do not change with the
  number of envs per process, the world size, the reset order or which other envs reset at the same time.
- ``eval``: common random numbers for evaluation; episode ``k`` of env ``g`` starts from the same state for
  every policy, checkpoint and training seed (``per_env`` streams under a key reserved for evaluation).

A ``per_env``/``eval`` draw is Philox4x32-10 of the counter ``(g, episode, domain, block)`` under the key
``(seed_lo, seed_hi ^ tag)``; ``block`` counts the 4-word blocks env ``g`` has used in its current episode, and
``domain`` separates consumers (the env's own randomisation vs. the learner's action noise).
"""

from __future__ import annotations

import contextlib
import enum
import math
from collections.abc import Iterator, Sequence

import numpy as np
import torch

from redline.errors import UserError
from redline.seeding.host_draws import host_words
from redline.seeding.philox import MASK32, fused_philox4x32, philox4x32, to_unit_float


class Strategy(enum.StrEnum):
    """Seeding strategies; see the module docstring for each one's guarantee."""

    SHARED = "shared"
    PER_ENV = "per_env"
    EVAL = "eval"


STRATEGIES: tuple[str, ...] = tuple(s.value for s in Strategy)
"""Valid strategy names."""


class Domain(enum.IntEnum):
    """Counter word that keeps independent consumers of one env's stream apart."""

    ENV = 0
    """The task's own randomisation: reset states, domain randomisation, commands, noise."""
    POLICY = 1
    """The learner's action sampling."""


_KEY_TAG = {Strategy.PER_ENV: 0, Strategy.EVAL: 0x5EED_E7A1}


def parse_strategy(name: str) -> Strategy:
    """``name`` as a :class:`Strategy`; unknown names are a :class:`UserError` listing the valid ones."""
    try:
        return Strategy(name)
    except ValueError:
        raise UserError(f"seeding strategy: unknown strategy '{name}' (valid: {', '.join(STRATEGIES)})") from None


def check_seed(seed: object) -> int:
    """``seed`` if it is an int in [0, 2^63); else a :class:`UserError`."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise UserError(f"seed: must be a non-negative integer below 2^63, got {seed!r}")
    return seed


class EnvStreams:
    """The random streams of one process's envs.

    Args:
        strategy: a :class:`Strategy` or its name.
        seed: base seed (non-negative int).
        num_envs: envs in this process.
        device: where draws are made and returned.
        env_id_offset: global id of this process's env 0 (sum of the env counts of lower ranks).
        fused: draw with the fused Philox kernel (:func:`~redline.seeding.philox.fused_philox4x32`, the same numbers
            in one kernel); None: fused on CUDA, op by op elsewhere. Unfused on the CPU, every draw (the action noise,
            a task's per-step noise, and a subset's: resets, events) runs in numpy
            (:mod:`~redline.seeding.host_draws`, the same numbers in a tenth of the operations).
        fused_backend: the ``torch.compile`` backend of the fused draw.
    """

    def __init__(
        self,
        strategy: Strategy | str,
        seed: int,
        num_envs: int,
        device: torch.device | str,
        env_id_offset: int = 0,
        fused: bool | None = None,
        fused_backend: str = "inductor",
    ) -> None:
        self.strategy = parse_strategy(str(strategy))
        self.seed = check_seed(seed)
        self.device = torch.device(device)
        self.global_ids = torch.arange(env_id_offset, env_id_offset + num_envs, device=self.device)
        """``(num_envs,)`` global env id of each local env."""
        self.episode = torch.full((num_envs,), -1, dtype=torch.long, device=self.device)
        """``(num_envs,)`` index of each env's current episode (-1 before its first reset)."""
        self.blocks_used = torch.zeros(num_envs, dtype=torch.long, device=self.device)
        """``(num_envs,)`` Philox blocks each env has used in its current episode, per domain."""
        self._blocks_used_policy = torch.zeros_like(self.blocks_used)
        tag = _KEY_TAG.get(self.strategy, 0)
        self._key = (self.seed & MASK32, ((self.seed >> 32) ^ tag) & MASK32)
        self.fused = self.device.type == "cuda" if fused is None else fused
        """Draws go through the fused Philox kernel."""
        self._fused_draw = fused_philox4x32(fused_backend) if self.fused else None
        self._key_tensor = torch.tensor(self._key, dtype=torch.long, device=self.device)  # the fused draw's key
        self._host = None
        if self.device.type == "cpu" and not self.fused:  # numpy views of the counters (updated in place only)
            self._host = {
                "ids": (self.global_ids.numpy() & MASK32).astype(np.uint32)[:, None],
                "episode": self.episode.numpy(),
                Domain.ENV: self.blocks_used.numpy(),
                Domain.POLICY: self._blocks_used_policy.numpy(),
            }

    @property
    def num_envs(self) -> int:
        return self.global_ids.numel()

    def _ids(self, env_ids: Sequence[int] | torch.Tensor | None) -> torch.Tensor:
        if env_ids is None:
            return torch.arange(self.num_envs, device=self.device)
        return torch.as_tensor(env_ids, dtype=torch.long, device=self.device)

    def begin_episode(self, env_ids: Sequence[int] | torch.Tensor | None = None) -> None:
        """Start a new episode for ``env_ids`` (call at the top of the task's reset, before its draws)."""
        ids = self._ids(env_ids)
        self.episode[ids] += 1
        self.blocks_used[ids] = 0
        self._blocks_used_policy[ids] = 0

    def words(
        self, env_ids: Sequence[int] | torch.Tensor | None, count: int, domain: Domain = Domain.ENV
    ) -> torch.Tensor:
        """``(len(env_ids), count)`` fresh 32-bit words (int64) from each env's stream (not for ``shared``)."""
        if self.strategy is Strategy.SHARED:
            raise RuntimeError("the 'shared' strategy draws from torch's global generator, not from env streams")
        if self._host is not None:
            return torch.from_numpy(self._host_words(count, domain, env_ids).astype(np.int64))
        ids = self._ids(env_ids)
        used = self.blocks_used if domain is Domain.ENV else self._blocks_used_policy
        n_blocks = math.ceil(count / 4)
        block = used[ids, None] + torch.arange(n_blocks, device=self.device)  # (n, n_blocks)
        counter = torch.stack(
            (
                self.global_ids[ids, None].expand_as(block) & MASK32,
                self.episode[ids, None].expand_as(block) & MASK32,
                torch.full_like(block, int(domain)),
                block & MASK32,
            ),
            dim=-1,
        )  # (n, n_blocks, 4): (global env id, episode, domain, block)
        used[ids] += n_blocks
        if self._fused_draw is not None:
            words = self._fused_draw(counter, self._key_tensor)
        else:
            words = philox4x32(counter, self._key)
        return words.reshape(len(ids), -1)[:, :count]

    def _host_words(
        self, count: int, domain: Domain, env_ids: Sequence[int] | torch.Tensor | None = None
    ) -> np.ndarray:
        """:meth:`words` in numpy (:func:`~redline.seeding.host_draws.host_words`): ``(len(env_ids), count)``
        ``uint32``, the same numbers."""
        host = self._host
        assert host is not None
        ids = None if env_ids is None else _host_ids(env_ids)
        return host_words(ids, count, int(domain), host["ids"], host["episode"], host[domain], self._key)

    def _unit_floats(self, env_ids: Sequence[int] | torch.Tensor | None, count: int, domain: Domain) -> torch.Tensor:
        """``(len(env_ids), count)`` float32 in [0, 1): :func:`~redline.seeding.philox.to_unit_float` of
        :meth:`words` (in numpy too on the host path: integer shifts and an exact scaling, so the same floats)."""
        if self._host is not None:
            return torch.from_numpy(self._host_unit_floats(count, domain, env_ids))
        return to_unit_float(self.words(env_ids, count, domain))

    def _host_unit_floats(
        self, count: int, domain: Domain, env_ids: Sequence[int] | torch.Tensor | None = None
    ) -> np.ndarray:
        """:func:`~redline.seeding.philox.to_unit_float` of :meth:`_host_words` in numpy (integer shifts and an
        exact scaling: the same float32 values)."""
        return (self._host_words(count, domain, env_ids) >> 8).astype(np.float32) * np.float32(1.0 / (1 << 24))

    def uniform(
        self,
        env_ids: Sequence[int] | torch.Tensor | None,
        shape: tuple[int, ...],
        low: float | torch.Tensor = 0.0,
        high: float | torch.Tensor = 1.0,
        domain: Domain = Domain.ENV,
    ) -> torch.Tensor:
        """``(len(env_ids), *shape)`` float32 uniform in [low, high), one row per env.

        ``shared`` calls ``torch.rand`` exactly as Isaac Lab's ``sample_uniform`` does, so the numbers match.
        """
        if self.strategy is Strategy.SHARED:
            return torch.rand((len(self._ids(env_ids)), *shape), device=self.device) * (high - low) + low
        u = self._unit_floats(env_ids, math.prod(shape), domain)
        u = u.reshape(u.shape[0], *shape)
        return u * (high - low) + low  # low + u (high - low)

    def normal(
        self,
        env_ids: Sequence[int] | torch.Tensor | None,
        shape: tuple[int, ...],
        mean: float | torch.Tensor = 0.0,
        std: float | torch.Tensor = 1.0,
        domain: Domain = Domain.ENV,
    ) -> torch.Tensor:
        """``(len(env_ids), *shape)`` float32 normal draws (Box-Muller on two uniforms per value)."""
        if self.strategy is Strategy.SHARED:
            return torch.randn((len(self._ids(env_ids)), *shape), device=self.device) * std + mean
        k = math.prod(shape)
        if self._host is not None:  # 1 - u and the halves in numpy too (exact)
            unit = self._host_unit_floats(2 * k, domain, env_ids)
            u1, u2 = torch.from_numpy(1.0 - unit[:, :k]), torch.from_numpy(unit[:, k:])
        else:
            u = self._unit_floats(env_ids, 2 * k, domain)
            u1, u2 = 1.0 - u[:, :k], u[:, k:]  # u1 in (0, 1]: log(u1) is finite
        z = torch.sqrt(-2.0 * torch.log(u1)) * torch.cos(2.0 * math.pi * u2)  # Box-Muller
        # z * 1 + 0 is z + 0 (which turns -0 into +0): one op fewer for the standard normal
        z = (
            z + 0.0
            if isinstance(std, float) and std == 1.0 and isinstance(mean, float) and mean == 0.0
            else z * std + mean
        )
        return z if z.shape[1:] == shape else z.reshape(z.shape[0], *shape)

    @contextlib.contextmanager
    def rewound(self) -> Iterator[None]:
        """Draws made inside leave no trace: every counter, and torch's global generator on the streams' device
        (the ``shared`` strategy's), is put back as it was on exit, so what is drawn next is what would have been
        drawn without them (e.g. a second, look-only observation whose noise must not move the streams on)."""
        counters = (self.episode, self.blocks_used, self._blocks_used_policy)
        saved = tuple(c.clone() for c in counters)
        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices, device_type="cuda"):
            try:
                yield
            finally:  # in place: the host path's numpy views share the counters' memory
                for counter, value in zip(
                    (self.episode, self.blocks_used, self._blocks_used_policy), saved, strict=True
                ):
                    counter.copy_(value)

    def state_dict(self) -> dict[str, torch.Tensor]:
        """Per-env counters (by global env id), so a resumed run continues the same streams."""
        return {
            "global_ids": self.global_ids.clone(),
            "episode": self.episode.clone(),
            "blocks_used": self.blocks_used.clone(),
            "blocks_used_policy": self._blocks_used_policy.clone(),
        }

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore the counters of this process's envs from ``state`` (matched by global env id)."""
        saved_ids = state["global_ids"].to(self.device)
        index = {int(g): i for i, g in enumerate(saved_ids.tolist())}
        missing = [int(g) for g in self.global_ids.tolist() if int(g) not in index]
        if missing:
            raise ValueError(f"seeding state has no counters for global env ids {missing[:5]}...")
        rows = torch.tensor([index[int(g)] for g in self.global_ids.tolist()], device=self.device)
        self.episode.copy_(state["episode"].to(self.device)[rows])
        self.blocks_used.copy_(state["blocks_used"].to(self.device)[rows])
        self._blocks_used_policy.copy_(state["blocks_used_policy"].to(self.device)[rows])


def _host_ids(env_ids: Sequence[int] | torch.Tensor) -> np.ndarray:
    """``env_ids`` as an int64 numpy index array (a CPU tensor's without a copy when it is int64 already)."""
    if isinstance(env_ids, torch.Tensor):
        return env_ids.detach().to(torch.long).numpy().reshape(-1)
    return np.asarray(env_ids, dtype=np.int64).reshape(-1)
