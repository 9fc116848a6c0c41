"""Rollout storage: one preallocated TensorDict of batch size ``[T, N]``, written in place each env step.

Layout (all on the learner's device; ``A`` = action dim)::

    obs/<group>   (T, N, *group_shape)  observation groups the actor or critic read, e.g. obs/policy, obs/critic
    actions       (T, N, A)   fp32      sampled actions
    action_mean   (T, N, A)   fp32      rollout policy mean
    action_std    (T, N, A)   fp32      rollout policy std
    log_probs     (T, N)      fp32      log pi_old(a_t | s_t)
    values        (T, N)      fp32      V(s_t) in reward units (denormalised)
    rewards       (T, N)      fp32      r_t
    terminated    (T, N)      bool      the episode reached a terminal state at step t
    truncated     (T, N)      bool      the episode was cut by a time-out at step t
    advantages    (T, N)      fp32      filled by the learner after the rollout
    returns       (T, N)      fp32      value targets, filled by the learner after the rollout

Minibatches are index sets into the flattened ``T * N`` batch, drawn each epoch on the device from the generator
passed in (reproducible and checkpointable) and defined over global env ids, so that in data-parallel training each
rank's minibatch is exactly its share of the single-process one (:meth:`RolloutStorage.minibatch_indices`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

import torch
from tensordict import TensorDict


class RolloutStorage:
    """A fixed-size ``[T, N]`` rollout buffer with a flat ``[T * N]`` view for minibatching."""

    def __init__(
        self,
        num_steps: int,
        num_envs: int,
        obs: TensorDict,
        obs_groups: Iterable[str],
        num_actions: int,
        device: torch.device | str,
    ) -> None:
        """Args:
        num_steps: T, env steps per rollout.
        num_envs: N.
        obs: one observation TensorDict of batch size ``[N]``, for the groups' shapes and dtypes.
        obs_groups: the groups to store (the union of the actor's and critic's).
        num_actions: A.
        device: where the buffer lives.
        """
        self.num_steps, self.num_envs, self.device = num_steps, num_envs, torch.device(device)
        shape = (num_steps, num_envs)

        def zeros(*trailing: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            return torch.zeros(*shape, *trailing, dtype=dtype, device=self.device)

        groups = {g: zeros(*obs[g].shape[1:], dtype=obs[g].dtype) for g in dict.fromkeys(obs_groups)}
        self.data = TensorDict(
            {
                "obs": TensorDict(groups, batch_size=shape, device=self.device),
                "actions": zeros(num_actions),
                "action_mean": zeros(num_actions),
                "action_std": zeros(num_actions),
                "log_probs": zeros(),
                "values": zeros(),
                "rewards": zeros(),
                "terminated": zeros(dtype=torch.bool),
                "truncated": zeros(dtype=torch.bool),
                "advantages": zeros(),
                "returns": zeros(),
            },
            batch_size=shape,
            device=self.device,
        )
        self.flat = self.data.reshape(-1)
        """The same storage viewed as batch ``[T * N]`` (leaves are views, no copy)."""
        self.train_view = self.flat.exclude("rewards", "terminated", "truncated")
        """:attr:`flat` without the keys the loss does not read, so indexing a minibatch gathers only what it uses."""
        self._policy_keys = ("actions", "action_mean", "action_std", "log_probs", "values")
        leaves = {k: self.data[k] for k in (*self._policy_keys, "rewards", "terminated", "truncated")}
        leaves |= {f"obs/{g}": self.data["obs", g] for g in groups}
        self._slots = [{k: leaf[t] for k, leaf in leaves.items()} for t in range(num_steps)]  # views, made once
        self.step = 0
        """Index of the env step being recorded (0..T); the rollout is complete at T."""

    @property
    def batch_size(self) -> int:
        """T * N."""
        return self.num_steps * self.num_envs

    @property
    def full(self) -> bool:
        """All T steps of the rollout have been recorded."""
        return self.step == self.num_steps

    def slot(self) -> dict[str, torch.Tensor]:
        """The current step's views into the storage, keyed by leaf (``obs/<group>`` for the observations): write
        them in place (``copy_``, or a result's ``out=``), then :meth:`advance`."""
        if self.step >= self.num_steps:
            raise RuntimeError(f"rollout storage is full ({self.num_steps} steps); call clear() after the update")
        return self._slots[self.step]

    def record_policy(self, obs: TensorDict | Mapping[str, torch.Tensor], **fields: torch.Tensor) -> None:
        """Write the observation and the policy outputs of the current step (``actions``, ``action_mean``,
        ``action_std``, ``log_probs``, ``values``), in place."""
        slot = self.slot()
        for key, view in slot.items():
            if key.startswith("obs/"):
                view.copy_(obs[key[4:]])
        for key in self._policy_keys:
            slot[key].copy_(fields[key])

    def record_env(self, rewards: torch.Tensor, terminated: torch.Tensor, truncated: torch.Tensor) -> None:
        """Write the env's response to the current step and advance to the next step."""
        slot = self._slots[self.step]
        slot["rewards"].copy_(rewards)
        slot["terminated"].copy_(terminated)
        slot["truncated"].copy_(truncated)
        self.advance()

    def advance(self) -> None:
        """The current step is written: move to the next."""
        self.step += 1

    def clear(self) -> None:
        """Start a new rollout (the buffers are overwritten, not freed)."""
        self.step = 0

    def minibatch_indices(
        self,
        num_mini_batches: int,
        generator: torch.Generator,
        env_offset: int = 0,
        global_num_envs: int | None = None,
        stratified: bool = True,
    ) -> list[tuple[torch.Tensor, float]]:
        """One epoch's minibatches: a random partition of the ``T * G`` transitions of all ranks' ``G`` envs,
        defined over global env ids, and this process's share of each part.

        Stratified (the default): each env's T time steps are shuffled by its own column of a ``(T, G)`` array of
        random keys, and the transitions are laid out slot-major (position ``p = j * G + g`` holds env g's j-th
        shuffled step); where ``num_mini_batches`` divides T each minibatch holds ``T / num_mini_batches`` steps of
        every env. Not stratified: positions are a uniform random permutation of the ``T * G`` global transitions
        ``t * G + g`` (rsl_rl's ``randperm``; on several ranks each takes its envs' entries, one host sync per
        minibatch). Either way minibatch m is positions ``[m * S, (m + 1) * S)`` with
        ``S = T * G // num_mini_batches`` (the remainder sits out this epoch, as in rsl_rl), and every rank draws
        the same numbers, so rank r's part of minibatch m is exactly its envs' share of the single-process one.

        Args:
            num_mini_batches: M.
            generator: draws the keys; it must be in the same state on every rank.
            env_offset: global id of this process's env 0.
            global_num_envs: G, envs over all ranks (None: this process's N, a single process).
            stratified: lay minibatches out env by env (see above); False: rsl_rl's uniform permutation.

        Returns:
            M pairs ``(indices, weight)``: indices into :attr:`flat` (this rank's share, possibly empty) and weight =
            share size / S, the factor that turns the share's mean into its part of the global minibatch mean.
        """
        n, t = self.num_envs, self.num_steps
        g = n if global_num_envs is None else global_num_envs
        if not 0 <= env_offset <= g - n:
            raise ValueError(f"envs [{env_offset}, {env_offset + n}) do not fit in {g} global envs")
        size = t * g // num_mini_batches
        if size == 0:
            raise ValueError(f"num_mini_batches={num_mini_batches} exceeds the batch of {t * g} samples")
        if not stratified:
            perm = torch.randperm(t * g, generator=generator, device=self.device)  # global positions t * G + g
            steps, envs = perm.div(g, rounding_mode="floor"), perm.remainder(g) - env_offset
            flat = steps * n + envs  # this rank's flat index t * N + l (meaningful where 0 <= l < N)
            parts = [slice(m * size, (m + 1) * size) for m in range(num_mini_batches)]
            if n == g:  # a single process: every position is ours
                return [(flat[p], 1.0) for p in parts]
            mine = [flat[p][(envs[p] >= 0) & (envs[p] < n)] for p in parts]
            return [(idx, idx.numel() / size) for idx in mine]
        keys = torch.rand((t, g), generator=generator, device=self.device)[:, env_offset : env_offset + n]
        times = keys.argsort(dim=0, stable=True)  # (T, N): times[j, l] = the step in slot j of local env l
        local = (times * n + torch.arange(n, device=self.device)).reshape(-1)  # flat index t * N + l, slot-major

        def before(position: int) -> int:  # local transitions at global positions < position
            rows, rest = divmod(position, g)
            return rows * n + min(max(rest - env_offset, 0), n)

        bounds = [before(m * size) for m in range(num_mini_batches + 1)]
        return [(local[a:b], (b - a) / size) for a, b in itertools.pairwise(bounds)]

    @staticmethod
    def micro_batches(indices: torch.Tensor, count: int) -> list[tuple[torch.Tensor, float]]:
        """Split one minibatch's indices into ``count`` near-equal micro-batches.

        Returns:
            ``(indices, weight)`` pairs with weight = micro size / minibatch size, so that the weighted sum of the
            micro-batch means equals the minibatch mean (the weights sum to 1).
        """
        total = indices.shape[0]
        if not 1 <= count <= total:
            raise ValueError(f"micro_batches={count} must lie in [1, {total}] (the minibatch size)")
        parts = indices.tensor_split(count)
        return [(part, part.shape[0] / total) for part in parts]
