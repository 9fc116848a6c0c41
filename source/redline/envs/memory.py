"""A run's memory, estimated before the simulator starts, against the memory this process may use.

The estimate adds three parts (bytes):

- the env: a fixed cost plus a per-env cost, measured per task and physics preset as the growth of the peak RSS
  while building, resetting and stepping 64 and 2048 envs (``scripts/measure_env_memory.py``; :data:`FOOTPRINTS`,
  rounded up); a task not measured gets :data:`DEFAULT_FOOTPRINT`;
- the rollout storage: ``T x N x (obs + critic obs + 3 x actions + 6) x 4`` (observations, actions, the action mean
  and std, and six floats per transition: reward, done, value, log-prob, return, advantage), plus one minibatch's
  gathered copy; with SAC instead the replay: ``buffer_size_per_env x N x (2 x (obs + critic obs) x 4 + actions x 4
  + 4 + 2)`` (the observation groups and the true next observation, the action, the reward as floats, the done and
  time-out flags as bytes), twice when checkpoints hold it (``save_replay``: a checkpoint copies it before writing);
- the learner: its networks' parameters x 6 (weights, gradients, Adam's two moments, the update's snapshot, the
  all-reduce buffer) and one minibatch's activations (SAC: the critic counted three times, its two Q networks and
  their targets, and a minibatch of ``batch_size``).

The limit is the host's available memory (``MemAvailable`` of ``/proc/meminfo``, or the cgroup's limit minus its
usage when lower) shared by the ranks on the host, or on CUDA the device's free memory
(``torch.cuda.mem_get_info``). ``--no_memory_check`` skips the check.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from pathlib import Path
from typing import Any

from redline.errors import UserError

MIB = 1 << 20
FLOAT_BYTES = 4
FLAG_BYTES = 1


@dataclasses.dataclass(frozen=True)
class Footprint:
    """An env's host memory: ``fixed_mib + per_env_kib x num_envs``."""

    fixed_mib: float
    """Building the scene, whatever the env count [MiB]."""
    per_env_kib: float
    """Each env [KiB]."""

    def bytes(self, num_envs: int) -> int:
        """The env's memory for ``num_envs`` envs [bytes]."""
        return int(self.fixed_mib * MIB + self.per_env_kib * 1024 * num_envs)


FOOTPRINTS: dict[tuple[str, str], Footprint] = {
    ("Redline-Cartpole", "mujoco_cpu"): Footprint(fixed_mib=400, per_env_kib=32),
    ("Redline-Cartpole", "newton_mjwarp"): Footprint(fixed_mib=400, per_env_kib=32),
    ("Redline-Ant", "mujoco_cpu"): Footprint(fixed_mib=400, per_env_kib=64),
    ("Redline-Ant", "newton_mjwarp"): Footprint(fixed_mib=400, per_env_kib=64),
    ("Redline-Velocity-Flat-Go1", "mujoco_cpu"): Footprint(fixed_mib=400, per_env_kib=384),
    ("Redline-Velocity-Flat-Go1", "newton_mjwarp"): Footprint(fixed_mib=400, per_env_kib=384),
    ("Redline-Velocity-Flat-G1", "mujoco_cpu"): Footprint(fixed_mib=400, per_env_kib=416),
    ("Redline-Velocity-Flat-G1", "newton_mjwarp"): Footprint(fixed_mib=400, per_env_kib=416),
}
"""Per (task, physics preset); the ``-Play`` twins share their task's entry. Measured on the CPU (2026-12-03, peak
RSS growth, 64 vs 2048 envs on mujoco_cpu): Cartpole 311 -> 357 MiB (24 KiB/env), Ant 374 -> 471 MiB (50 KiB/env),
Go1 181 -> 790 MiB (314 KiB/env), G1 165 -> 804 MiB (330 KiB/env); rounded up by a quarter. newton_mjwarp's 64
vs 256 envs differed by less than the RSS noise (~30 MiB, 174-390 MiB fixed), so it takes mujoco_cpu's per-env
figures."""
DEFAULT_FOOTPRINT = Footprint(fixed_mib=400, per_env_kib=416)
"""Tasks not measured (Isaac Lab's own): the largest measured per-env cost."""


def footprint(task: str, physics: str | None) -> Footprint:
    """The env footprint of ``task`` under ``physics`` (None: the smallest over the presets measured)."""
    task = task.removesuffix("-Play")
    if physics is not None:
        return FOOTPRINTS.get((task, physics), DEFAULT_FOOTPRINT)
    known = [f for (t, _), f in FOOTPRINTS.items() if t == task]
    return min(known, key=lambda f: f.per_env_kib) if known else DEFAULT_FOOTPRINT


@dataclasses.dataclass(frozen=True)
class RolloutShape:
    """What sizes the rollout storage and the learner."""

    num_envs: int
    """Envs of this process (N)."""
    num_steps: int
    """Rollout length (T) [steps per env]."""
    obs_dim: int
    """The actor's observation size."""
    critic_obs_dim: int
    """The critic's extra observation size (0 when it reads the actor's)."""
    action_dim: int
    """Actions per env."""
    num_mini_batches: int = 1
    """Minibatches per epoch."""
    hidden_dims: tuple[int, ...] = (256, 256, 256)
    """The widest network's hidden layers (actor and critic are counted with it)."""
    replay_per_env: int = 0
    """SAC: the replay's transitions per env (``buffer_size_per_env``); 0: an on-policy rollout storage."""
    batch_size: int = 0
    """SAC: transitions per gradient step (all ranks)."""
    save_replay: bool = False
    """SAC: checkpoints hold the replay (a copy of it is made at each save)."""

    def storage_bytes(self) -> int:
        """The on-policy rollout storage and one gathered minibatch; 0 for SAC, whose replay is
        :meth:`replay_bytes` [bytes]."""
        if self.replay_per_env:
            return 0
        per_transition = self.obs_dim + self.critic_obs_dim + 3 * self.action_dim + 6
        transitions = self.num_steps * self.num_envs
        return (transitions + transitions // self.num_mini_batches) * per_transition * FLOAT_BYTES

    def replay_bytes(self) -> int:
        """SAC's replay, and its copy in a checkpoint being written when ``save_replay`` (0 for PPO) [bytes]."""
        floats = 2 * (self.obs_dim + self.critic_obs_dim) + self.action_dim + 1  # obs, next obs, action, reward
        per_transition = floats * FLOAT_BYTES + 2 * FLAG_BYTES  # done, time-out
        return (1 + self.save_replay) * self.replay_per_env * self.num_envs * per_transition

    def learner_bytes(self) -> int:
        """The networks' parameters with their optimizer state, and one minibatch's activations [bytes]."""
        critics = 3 if self.replay_per_env else 1  # SAC: two Q networks and their targets (counted as one)
        params = 0
        for inputs, outputs, copies in (
            (self.obs_dim, self.action_dim, 1),
            (self.obs_dim + self.critic_obs_dim, 1, critics),
        ):
            sizes = (inputs, *self.hidden_dims, outputs)
            params += copies * sum((a + 1) * b for a, b in itertools.pairwise(sizes))
        minibatch = self.batch_size or self.num_steps * self.num_envs // self.num_mini_batches
        activations = 2 * 3 * critics * minibatch * sum(self.hidden_dims)  # actor + critics; saved, gradient, scratch
        return (6 * params + activations) * FLOAT_BYTES


def host_available_bytes() -> int | None:
    """Memory this process may still allocate on the host: ``MemAvailable``, or less under a cgroup limit (v1 or
    v2); None when neither can be read."""
    limits = [v for v in (_meminfo_available(), *_cgroup_headroom()) if v is not None]
    return min(limits) if limits else None


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_headroom() -> list[int | None]:
    """Limit minus usage of this process's memory cgroup (v2 ``memory.max``, v1 ``memory.limit_in_bytes``)."""
    paths = {"v2": ["/sys/fs/cgroup"], "v1": ["/sys/fs/cgroup/memory"]}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controllers == "":
                paths["v2"].append(f"/sys/fs/cgroup{path}")
            elif "memory" in controllers.split(","):
                paths["v1"].append(f"/sys/fs/cgroup/memory{path}")
    except (OSError, ValueError):
        pass
    found = [_headroom(Path(p), "memory.max", "memory.current") for p in paths["v2"]]
    found += [_headroom(Path(p), "memory.limit_in_bytes", "memory.usage_in_bytes") for p in paths["v1"]]
    return found


def _headroom(folder: Path, limit_file: str, usage_file: str) -> int | None:
    try:
        limit = (folder / limit_file).read_text().strip()
        usage = int((folder / usage_file).read_text().strip())
    except (OSError, ValueError):
        return None
    if limit == "max" or not limit.isdigit() or int(limit) >= 1 << 60:  # no limit
        return None
    return max(int(limit) - usage, 0)


def gpu_available_bytes(device: str) -> int | None:
    """Free memory of a CUDA device (None on the CPU)."""
    if not device.startswith("cuda"):
        return None
    # heavy: torch, not before the CLI has parsed
    import torch

    free, _ = torch.cuda.mem_get_info(torch.device(device))
    return int(free)


def ranks_on_host() -> int:
    """Processes of this run on this host (torchrun's ``LOCAL_WORLD_SIZE``; 1 outside torchrun)."""
    try:
        return max(int(os.environ.get("LOCAL_WORLD_SIZE", "1")), 1)
    except ValueError:
        return 1


def refuse_if_too_big(
    field: str, what: str, needed: int, available: int | None, where: str, fix: str = "fewer envs or a shorter rollout"
) -> None:
    """A one-line :class:`UserError` when ``needed`` bytes exceed ``available`` (None: unknown, no check); ``fix``
    says what would fit."""
    if available is None or needed <= available:
        return
    raise UserError(
        f"{field}: {what} need an estimated {_gib(needed)} of memory but {where} has {_gib(available)} available "
        f"({fix} fit; --no_memory_check runs anyway)"
    )


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB" if n >= 1 << 28 else f"{n / MIB:.0f} MiB"


def check_env_count(task: str, num_envs: int, ranks: int = 1) -> None:
    """The quick check, before any config is loaded: the envs alone (the task's smallest measured footprint) must
    fit in the host's memory. Milliseconds, so ``--num_envs 3000000000`` is refused at once."""
    needed = footprint(task, None).bytes(num_envs) * ranks
    what = f"{num_envs} envs of {task}{_each(ranks)}"
    refuse_if_too_big("--num_envs", what, needed, host_available_bytes(), "this host")


def rollout_shape(env_cfg: Any, agent_cfg: Any) -> RolloutShape:
    """The rollout's sizes from a task's final env and agent configs; an observation size known only once the env
    exists (a manager-based task) counts as :data:`UNKNOWN_OBS` floats."""
    hidden = max((tuple(getattr(agent_cfg, r).hidden_dims) for r in ("actor", "critic")), key=sum, default=(256,))
    alg = agent_cfg.algorithm
    sac = hasattr(alg, "buffer_size_per_env")  # SAC's agent has a replay, PPO's none
    return RolloutShape(
        num_envs=env_cfg.scene.num_envs,
        num_steps=agent_cfg.num_steps_per_env,
        obs_dim=_size(getattr(env_cfg, "observation_space", None), UNKNOWN_OBS),
        critic_obs_dim=_size(getattr(env_cfg, "state_space", None), 0),
        action_dim=_size(getattr(env_cfg, "action_space", None), UNKNOWN_ACTIONS),
        num_mini_batches=getattr(alg, "num_mini_batches", 1),  # SAC's agent has none
        hidden_dims=tuple(int(h) for h in hidden),
        replay_per_env=int(alg.buffer_size_per_env) if sac else 0,
        batch_size=int(alg.batch_size) if sac else 0,
        save_replay=bool(alg.save_replay) if sac else False,
    )


UNKNOWN_OBS, UNKNOWN_ACTIONS = 256, 32
"""Observation and action sizes assumed where the config does not give them as numbers."""


def _size(space: Any, unknown: int) -> int:
    return space if isinstance(space, int) and not isinstance(space, bool) and space >= 0 else unknown


def _each(ranks: int) -> str:
    """`` in each of N processes`` when several ranks share the host (``--nproc 64`` is the cause, not the envs)."""
    return f" in each of {ranks} processes" if ranks > 1 else ""


def check_run(task: str, physics: str | None, device: str, shape: RolloutShape, ranks: int = 1) -> None:
    """The full check on the final configs: env, rollout storage (or SAC's replay) and learner.

    On the CPU everything is host memory; on CUDA the storage, the learner and the simulation's per-env state live
    on the device (checked against its free memory) and the scene is still built on the host. A SAC run that would
    fit but for its replay is refused naming ``agent.algorithm.buffer_size_per_env``.
    """
    env = footprint(task, physics).bytes(shape.num_envs)
    replay = shape.replay_bytes()
    learner = shape.storage_bytes() + shape.learner_bytes()
    what = f"{shape.num_envs} envs x {shape.num_steps} steps of {task}"
    checks = [("--num_envs", what, "fewer envs or a shorter rollout", 0)]
    if replay:
        replay_what = f"{shape.num_envs} envs x {shape.replay_per_env} replay transitions of {task}"
        fix = "a smaller agent.algorithm.buffer_size_per_env or fewer envs"
        checks.append(("agent.algorithm.buffer_size_per_env", replay_what, fix, replay))
    host = host_available_bytes()
    for field, told, fix, extra in checks:
        if not device.startswith("cuda"):
            refuse_if_too_big(field, told + _each(ranks), (env + learner + extra) * ranks, host, "this host", fix)
            continue
        refuse_if_too_big(field, told, env * ranks, host, "this host", fix)
        refuse_if_too_big(field, told, env + learner + extra, gpu_available_bytes(device), device, fix)
