"""What a SAC checkpoint holds and how it is restored: the learner's whole state (:func:`state_dict`), one rank's own
part for a data-parallel checkpoint (:func:`rank_state_dict`), and their restores; a checkpoint's per-rank parts
regrouped for another partition of the same global envs (:func:`regroup_parts`). Tensors are copies. ``sac`` is
the learner (:class:`redline.learning.sac.sac.SAC`, which imports this module: typed ``Any`` to keep the import
graph free of circles)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from tensordict import TensorDict
from torch import nn

from redline.learning.moments import merge_moments
from redline.learning.optim import EXECUTION_FLAGS, init_adam_state, set_execution_flags
from redline.learning.sac.replay import philox_key


def state_dict(sac: Any, replay_data: bool = True) -> dict[str, Any]:
    """Everything to resume, rsl_rl's key names where they fit (``actor_state_dict``: the deployed policy, which
    play and export load; ``critic_state_dict``, ``optimizer_state_dict`` = ``{"actor", "critic"}``), the rest
    under ``"sac"``: the training actor where the deployed policy is its running average (``policy_average``),
    target critic, log alpha and its optimizer, the replay (unless ``save_replay`` or ``replay_data`` is False: a
    data-parallel checkpoint holds every rank's in its parts), the noise generator and the step counters. Tensors
    are copies."""

    def copied(module: nn.Module) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in module.state_dict().items()}

    return {
        "actor_state_dict": copied(sac.policy),
        "critic_state_dict": copied(sac.critic),
        "optimizer_state_dict": {
            "actor": _optimizer_state(sac.actor_optimizer),
            "critic": _optimizer_state(sac.critic_optimizer),
        },
        "precision": sac.precision.mode,
        "algorithm": "sac",
        "sac": {
            "actor": None if sac.policy is sac.actor else copied(sac.actor),
            "target_critic": copied(sac.target_qs),
            "log_alpha": sac.log_alpha.detach().clone(),
            "alpha_optimizer": _optimizer_state(sac.alpha_optimizer),
            "replay": sac.replay.state_dict(with_data=sac.cfg.save_replay and replay_data),
            "noise_generator": sac.noise_generator.get_state(),
            "gradient_steps": sac.gradient_steps,
            "seed": sac.seed,
            "reward_normalizer": None if sac.reward_normalizer is None else sac.reward_normalizer.state_dict(),
        },
    }


def _optimizer_state(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """``optimizer.state_dict()`` (copies) with torch's default kernel switches, so that a checkpoint written with
    the capturable CUDA kernels resumes on any device."""
    sd = copy.deepcopy(optimizer.state_dict())
    for group in sd["param_groups"]:
        group.update(EXECUTION_FLAGS)
    return sd


def rank_state_dict(sac: Any) -> dict[str, Any]:
    """This rank's own part of the state, as CPU copies: its envs' replay (unless ``save_replay`` is False), its
    exploration generator and its envs' running returns (reward normalisation). :meth:`state_dict` holds the
    calling rank's; a data-parallel checkpoint gathers every rank's (``Communicator.gather_objects``), takes
    :meth:`state_dict` without the replay's data (it would repeat rank 0's) and gives each rank its own back with
    :meth:`load_rank_state_dict`."""
    replay = sac.replay.state_dict(with_data=sac.cfg.save_replay)
    if replay["data"] is not None:
        replay["data"] = {k: v.cpu() for k, v in TensorDict(replay["data"]).flatten_keys(".").items()}
    norm = sac.reward_normalizer
    return {
        "replay": replay,
        "noise_generator": sac.noise_generator.get_state(),
        "reward_returns": None if norm is None else norm.returns.cpu(),
        "reward_batch": None if norm is None else norm.batch.cpu(),
    }


def load_rank_state_dict(sac: Any, state: Mapping[str, Any]) -> None:
    """Restore :meth:`rank_state_dict` (this rank's replay, exploration generator, running returns)."""
    replay = dict(state["replay"])
    if replay["data"] is not None:
        replay["data"] = TensorDict(dict(replay["data"])).unflatten_keys(".").to_dict()
    sac.replay.load_state_dict(replay)
    sac.noise_generator.set_state(state["noise_generator"].cpu())
    if sac.reward_normalizer is not None and state.get("reward_returns") is not None:
        sac.reward_normalizer.returns.copy_(state["reward_returns"])
        sac.reward_normalizer.batch.copy_(state["reward_batch"])


def load_state_dict(sac: Any, state: Mapping[str, Any], strict: bool = True) -> None:
    """Restore :meth:`state_dict` (a checkpoint without the ``"sac"`` part loads the actor and critic only). The
    actor takes the saved training actor where there is one, else ``actor_state_dict``; a separate deployed policy
    takes ``actor_state_dict``."""
    extra = state.get("sac")
    trained = None if extra is None else extra.get("actor")
    with torch.no_grad():
        sac.actor.load_state_dict(state["actor_state_dict"] if trained is None else trained, strict=strict)
        if sac.policy is not sac.actor:
            sac.policy.load_state_dict(state["actor_state_dict"], strict=strict)
        sac.critic.load_state_dict(state["critic_state_dict"], strict=strict)
    if extra is not None:
        optim = state["optimizer_state_dict"]
        for optimizer, saved in (
            (sac.actor_optimizer, optim["actor"]),
            (sac.critic_optimizer, optim["critic"]),
            (sac.alpha_optimizer, extra["alpha_optimizer"]),
        ):
            optimizer.load_state_dict(saved)
            set_execution_flags(optimizer, sac.optimizer_flags)  # this device's kernels, not the saver's
            init_adam_state(optimizer)  # a checkpoint from before the first gradient step holds none
        with torch.no_grad():
            sac.target_qs.load_state_dict(extra["target_critic"])
            sac.log_alpha.copy_(extra["log_alpha"])
        sac.replay.load_state_dict(extra["replay"])
        sac.noise_generator.set_state(extra["noise_generator"].cpu())
        sac.gradient_steps = int(extra["gradient_steps"])
        sac.seed = int(extra["seed"])  # the minibatch draws continue the checkpoint's sequence
        sac._key = philox_key(sac.seed)
        sac._update_index.fill_(sac.gradient_steps)
        if sac.reward_normalizer is not None and extra.get("reward_normalizer") is not None:
            sac.reward_normalizer.load_state_dict(extra["reward_normalizer"])
    sac.flat.bind_grads()
    sac.sync_replicas()


def whole_part(state: Mapping[str, Any]) -> dict[str, Any]:
    """A one-process checkpoint's :func:`state_dict` as the one rank part (:func:`rank_state_dict`'s form) that holds
    every env."""
    extra = state["sac"]
    replay = dict(extra["replay"])
    if replay["data"] is not None:
        replay["data"] = dict(TensorDict(dict(replay["data"])).flatten_keys(".").items())
    norm = extra.get("reward_normalizer")
    return {
        "replay": replay,
        "noise_generator": extra["noise_generator"],
        "reward_returns": None if norm is None else norm["returns"],
        "reward_batch": None if norm is None else norm["batch"],
    }


def part_envs(part: Mapping[str, Any]) -> int | None:
    """The envs a rank part holds (None: neither a replay nor running returns say)."""
    data = part["replay"]["data"]
    if data is not None:
        return int(next(iter(data.values())).shape[1])  # every field is (capacity, envs, ...)
    returns = part.get("reward_returns")
    return None if returns is None else int(returns.shape[0])


def regroup_parts(
    parts: Sequence[Mapping[str, Any]], env_offset: int, num_envs: int, global_num_envs: int
) -> dict[str, Any]:
    """The rank part of global envs ``env_offset .. env_offset + num_envs - 1`` from a checkpoint's parts (in rank
    order, each rank's envs after the previous rank's): every per-env value (the replay's ``(capacity, envs, ...)``
    fields, the running returns) is cut from the parts concatenated along their env axis; the replay's positions are
    every rank's (they write in lockstep); the reward statistics since the last update go to the part holding global
    env 0 (empty at a checkpoint, written after an update). The part's ``noise_generator`` is the saved rank's when
    one saved rank held exactly these envs, else None (a rank's generator belongs to the rank, not to its envs).

    Raises:
        ValueError: the parts disagree on the replay's positions or hold another number of envs than
            ``global_num_envs`` (the run's, over all ranks).
    """
    positions = [tuple(p["replay"][k] for k in ("pos", "size", "steps")) for p in parts]
    if len(set(positions)) != 1:
        raise ValueError(f"the ranks' replays are at different positions {sorted(set(positions))}")
    pos, size, steps = positions[0]
    counts = [part_envs(p) for p in parts]
    offsets = [sum(c or 0 for c in counts[:i]) for i in range(len(counts))]
    same = [p for p, c, o in zip(parts, counts, offsets, strict=True) if (o, c) == (env_offset, num_envs)]
    if len(parts) == 1 and counts[0] is None:  # one part, nothing per env: any partition takes its positions
        same = list(parts)
    known = None if None in counts else sum(c for c in counts if c is not None)
    if known is not None and known != global_num_envs:
        raise ValueError(f"it holds the replay of {known} envs, this run has {global_num_envs}")

    def regrouped(values: list[torch.Tensor], axis: int) -> torch.Tensor:
        return torch.cat(values, axis).narrow(axis, env_offset, num_envs).clone()

    datas = [p["replay"]["data"] for p in parts]
    data = None
    if all(d is not None for d in datas):
        data = {k: regrouped([d[k] for d in datas], 1) for k in datas[0]}
    norm = all(p.get("reward_returns") is not None for p in parts)  # reward normalisation on
    returns = regrouped([p["reward_returns"] for p in parts], 0) if norm else None
    batch = merge_moments(torch.stack([p["reward_batch"] for p in parts])) if norm else None
    if batch is not None and env_offset != 0:
        batch = torch.zeros_like(batch)
    return {
        "replay": {"pos": pos, "size": size, "steps": steps, "data": data},
        "noise_generator": same[0]["noise_generator"] if same else None,
        "reward_returns": returns,
        "reward_batch": batch,
    }
