"""A run's per-env seeding counters in its checkpoints: saved over all ranks, restored on any partition.

A checkpoint holds each global env's stream counters (:meth:`EnvStreams.state_dict`), so a resumed run continues the
same streams whether it runs on the same number of ranks or not.
"""

from __future__ import annotations

from typing import Any

from redline.errors import UserError

SEEDING_KEY = "seeding_state_dict"
"""Extra checkpoint key: the per-env seeding counters of a redline task (see ``redline.seeding.EnvStreams``)."""


def env_streams(env: Any) -> Any:
    """The per-env seeding streams of a (wrapped) redline task env, or None for other envs."""
    return getattr(getattr(env, "unwrapped", None), "streams", None)


def gather_seeding_state(env: Any, comm: Any = None) -> dict[str, Any] | None:
    """``env``'s per-env seeding counters for a checkpoint (None for envs without streams), so a resumed run
    continues the same streams; with a data-parallel ``comm`` (every rank calls this) those of all ranks, keyed by
    global env id (ranks hold equal env counts)."""
    streams = env_streams(env)
    if streams is None:
        return None
    state = streams.state_dict()
    if comm is None or not comm.distributed:
        return state
    return {k: comm.all_gather(v.to(comm.device)).reshape(-1, *v.shape[1:]).cpu() for k, v in state.items()}


def restore_seeding_state(checkpoint: dict[str, Any], env: Any) -> None:
    """Restore the seeding counters :func:`gather_seeding_state` saved (nothing for checkpoints without them)."""
    streams = env_streams(env)
    if streams is None or SEEDING_KEY not in checkpoint:
        return
    try:
        streams.load_state_dict(checkpoint[SEEDING_KEY])
    except ValueError as exc:
        saved = int(checkpoint[SEEDING_KEY]["global_ids"].numel())
        raise UserError(
            f"--resume: the checkpoint holds seeding counters for {saved} global envs; this run's envs reach past "
            f"them ({exc}); keep --num_envs x ranks <= {saved}"
        ) from exc
