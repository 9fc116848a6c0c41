"""The run's state beyond the learner in every checkpoint, so a resumed run continues as if never interrupted.

A checkpoint's :data:`RUN_STATE_KEY` holds ``{"parts": [...]}``, one part per rank in rank order (one part in a
one-process run), each:

- ``global_ids``: the part's envs' global ids (rows of everything per env below are in this order);
- ``env``: the env's own state, from its ``env_state()`` (redline's tasks that list their buffers: Redline-Cartpole
  and the manager-based velocity tasks; :mod:`redline.physics.env_state` — the simulator's state, episode lengths,
  done flags, the last actions and observation, a manager-based env's managers and sensors);
- ``episodes``: the runner's episode statistics (:meth:`~redline.runners.episodes.EpisodeTracker.state_dict`).

Restored on the same layout, each rank loads its own part: bit for bit. On another process count with the same
global envs, each rank builds its part from the saved ones by global env id (:func:`regroup`): every per-env row —
a tensor of the live state whose first dimension is the rank's env count — is taken from the rank that held that
env; everything else (step counters, the physics clock, the last resets' log means, the episode-statistics window)
from the saved rank 0. The envs and their seeding streams then continue exactly; the learner's sums run over
another grouping (fp32 rounding).

Saved for envs whose ``env_state()`` answers; otherwise a checkpoint holds the learner and the seeding counters
alone and a resumed run starts from fresh resets, as from a checkpoint written before run states existed (both
say so in one warning line).
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from redline.seeding.state import SEEDING_KEY, env_streams, restore_seeding_state

RUN_STATE_KEY = "run_state"
"""Extra checkpoint key: :func:`gather_run_state`'s dict."""


def why_not_saved(env: Any) -> str | None:
    """Why ``env``'s run state cannot be saved (None: it can)."""
    base = getattr(env, "unwrapped", env)
    if not callable(getattr(base, "env_state", None)) or getattr(base, "run_state_buffers", None) is None:
        return f"{type(base).__name__} does not save its state yet"
    return None


def _global_ids(env: Any, comm: Any) -> torch.Tensor:
    """This rank's envs' global ids: the seeding streams' where the env has them, else ``rank * num_envs + i``."""
    base = getattr(env, "unwrapped", env)
    streams = getattr(base, "streams", None)
    if streams is not None:
        return streams.global_ids.detach().cpu().clone()
    count = int(base.num_envs)
    return torch.arange(count) + (0 if comm is None else comm.rank * count)


def _to_cpu(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    return value


def gather_run_state(env: Any, tracker: Any, comm: Any = None) -> dict[str, Any] | None:
    """``env``'s and ``tracker``'s state between two iterations (check :func:`why_not_saved` first), on CPU; in a
    multi-process run every rank calls this and rank 0 gets all ranks' parts (None on the others). ``tracker``
    None: no episode statistics (rsl_rl's own runner keeps them)."""
    part = {"global_ids": _global_ids(env, comm), "env": _to_cpu(env.unwrapped.env_state())}
    if tracker is not None:
        part["episodes"] = _to_cpu(tracker.state_dict())
    parts = [part] if comm is None else comm.gather_objects(part)
    return None if parts is None else {"parts": parts}


def restore_run_state(checkpoint: dict[str, Any], env: Any, tracker: Any, comm: Any = None) -> bool:
    """Restore :func:`gather_run_state`'s state from ``checkpoint`` (this rank's part, or one regrouped from the
    saved parts); False (after a one-line warning) when there is none for this rank's envs: they then start from
    the fresh resets they have.

    Raises:
        ValueError: the saved state does not fit this env (another scene).
    """
    state = checkpoint.get(RUN_STATE_KEY)
    reason = why_not_saved(env)
    if state is None or reason is not None:
        detail = "it holds none (saved before run states, or by a task that saves none)"
        _warn(f"the checkpoint's env state is not restored: {reason or detail}; the envs start from fresh resets")
        return False
    parts = state.get("parts", [state])  # one part, as the first run states were written
    mine = _global_ids(env, comm)
    part = next((p for p in parts if torch.equal(p["global_ids"], mine)), None)
    if part is None:
        saved = torch.cat([p["global_ids"] for p in parts])
        if not torch.isin(mine, saved).all():
            _warn(
                f"the checkpoint's env state is not restored: it holds {saved.numel()} envs, this run's reach "
                f"global id {int(mine.max())}; the envs start from fresh resets"
            )
            return False
        live = {"env": env.unwrapped.env_state()}
        if tracker is not None and "episodes" in part_keys(parts):
            live["episodes"] = tracker.state_dict()
        part = regroup(parts, mine, live)
    env.unwrapped.load_env_state(part["env"])
    if tracker is not None and "episodes" in part:
        tracker.load_state_dict(part["episodes"])
    return True


def part_keys(parts: list[dict[str, Any]]) -> set[str]:
    """The keys every saved part has."""
    return set.intersection(*(set(p) for p in parts))


def regroup(parts: list[dict[str, Any]], global_ids: torch.Tensor, live: dict[str, Any]) -> dict[str, Any]:
    """The part for envs ``global_ids`` from saved ``parts`` of another layout, shaped like ``live`` (this rank's
    current state): a tensor whose first dimension is this rank's env count takes each env's row from the part that
    held it; any other value is the first part's."""
    saved = torch.cat([p["global_ids"] for p in parts])
    where = {int(g): i for i, g in enumerate(saved.tolist())}
    rows = torch.tensor([where[int(g)] for g in global_ids.tolist()], dtype=torch.long)
    counts = [p["global_ids"].numel() for p in parts]
    return {key: _pick(live[key], [p[key] for p in parts], counts, rows) for key in live}


def _pick(live: Any, saved: list[Any], counts: list[int], rows: torch.Tensor) -> Any:
    if isinstance(live, dict):
        return {k: _pick(v, [s[k] for s in saved], counts, rows) if k in saved[0] else v for k, v in live.items()}
    rows_of = [s.shape[0] if isinstance(s, torch.Tensor) and s.dim() > 0 else -1 for s in saved]
    per_env = isinstance(live, torch.Tensor) and live.dim() > 0 and live.shape[0] == rows.numel() and rows_of == counts
    return torch.cat(saved)[rows] if per_env else saved[0]


class RunnerEnvState:
    """The env's part of a checkpoint under rsl_rl's own runner (``isaaclab train`` with redline's drop-in PPO, one
    process): its seeding counters and run state — not the episode statistics, which that runner keeps itself.

    rsl_rl's runner loads checkpoints for play and export too, so a loaded state is only held, and restored at the
    first action of training (:meth:`before_act`, after the runner's ``init_at_random_ep_len`` draw, which the saved
    episode lengths then replace); play and export never act through the algorithm.

    Args:
        env: the runner's env (rsl_rl's vec env wrapper), or None: nothing saved or restored.
        enabled: False in rsl_rl's multi-GPU mode (its runner saves on rank 0 alone: other ranks cannot be gathered).
    """

    def __init__(self, env: Any, enabled: bool = True) -> None:
        self.env: Any = env if enabled else None
        self._pending: dict[str, Any] | None = None

    def save_into(self, saved: dict[str, Any]) -> None:
        """Add the env's seeding counters and run state to the checkpoint dict ``saved`` (nothing for an env that
        saves no state)."""
        if self.env is None:
            return
        streams = env_streams(self.env)
        if streams is not None:
            saved[SEEDING_KEY] = streams.state_dict()
        if why_not_saved(self.env) is None:
            saved[RUN_STATE_KEY] = gather_run_state(self.env, None)

    def load(self, loaded: dict[str, Any]) -> None:
        """Hold ``loaded``'s env part until the first action of training."""
        if self.env is not None:
            self._pending = loaded

    def before_act(self, obs: Any) -> Any:
        """``obs``, or — on the first action after :meth:`load` — the restored env's observation (the seeding
        counters, then the run state restored; a checkpoint without run state warns once and the envs go on)."""
        if self._pending is None:
            return obs
        loaded, self._pending = self._pending, None
        restore_seeding_state(loaded, self.env)
        if why_not_saved(self.env) is None and restore_run_state(loaded, self.env, None):
            return self.env.get_observations().to(obs.device)
        return obs


def _warn(message: str) -> None:
    print(f"[redline] warning: {message}", file=sys.stderr, flush=True)
