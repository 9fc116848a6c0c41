"""The run's state beyond the learner in every checkpoint, so a resumed run continues as if never interrupted.

A checkpoint's :data:`RUN_STATE_KEY` holds, for every env of the run (rows in global env id order, ``global_ids``):

- ``env``: the env's own state, from its ``env_state()`` (redline's tasks that list their buffers: Redline-Cartpole
  and the manager-based velocity tasks; :mod:`redline.physics.env_state` — the simulator's state, episode lengths,
  done flags, the last actions and observation, a manager-based env's managers and sensors);
- ``episodes``: the runner's episode statistics (:meth:`~redline.runners.episodes.EpisodeTracker.state_dict`).

Saved in one-process runs, for envs whose ``env_state()`` answers; otherwise a checkpoint holds the learner and the
seeding counters alone and a resumed run starts from fresh resets, as from a checkpoint written before run states
existed (both say so in one warning line).
"""

from __future__ import annotations

import sys
from typing import Any

import torch

RUN_STATE_KEY = "run_state"
"""Extra checkpoint key: :func:`gather_run_state`'s dict."""


def why_not_saved(env: Any, comm: Any = None) -> str | None:
    """Why ``env``'s run state cannot be saved (None: it can)."""
    if comm is not None and comm.distributed:
        return "multi-process runs do not save it yet"
    base = getattr(env, "unwrapped", env)
    if not callable(getattr(base, "env_state", None)) or getattr(base, "run_state_buffers", None) is None:
        return f"{type(base).__name__} does not save its state yet"
    return None


def _global_ids(env: Any) -> torch.Tensor:
    base = getattr(env, "unwrapped", env)
    streams = getattr(base, "streams", None)
    if streams is not None:
        return streams.global_ids.detach().cpu().clone()
    return torch.arange(int(base.num_envs))


def gather_run_state(env: Any, tracker: Any) -> dict[str, Any]:
    """``env``'s and ``tracker``'s state between two iterations (check :func:`why_not_saved` first)."""
    return {
        "global_ids": _global_ids(env),
        "env": env.unwrapped.env_state(),
        "episodes": tracker.state_dict(),
    }


def restore_run_state(checkpoint: dict[str, Any], env: Any, tracker: Any, comm: Any = None) -> bool:
    """Restore :func:`gather_run_state`'s state from ``checkpoint``; False (after a one-line warning) when there is
    none to restore: the envs then start from the fresh resets they have.

    Raises:
        ValueError: the saved state does not fit this env (another scene).
    """
    state = checkpoint.get(RUN_STATE_KEY)
    reason = why_not_saved(env, comm)
    if state is None or reason is not None:
        detail = "it holds none (saved before run states, or by a task or layout that saves none)"
        _warn(f"the checkpoint's env state is not restored: {reason or detail}; the envs start from fresh resets")
        return False
    saved, mine = state["global_ids"], _global_ids(env)
    if not torch.equal(saved, mine):
        _warn(
            f"the checkpoint's env state is not restored: it holds {saved.numel()} envs, this run has "
            f"{mine.numel()} (global ids {int(mine[0])}..{int(mine[-1])}); the envs start from fresh resets"
        )
        return False
    env.unwrapped.load_env_state(state["env"])
    tracker.load_state_dict(state["episodes"])
    return True


def _warn(message: str) -> None:
    print(f"[redline] warning: {message}", file=sys.stderr, flush=True)
